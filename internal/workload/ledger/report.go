package ledger

import (
	"fmt"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/workload"
)

func init() {
	section.Register("ledger", section.Def{
		Render:   ledger,
		Headline: &section.Headline{Figure: "ledger.insert", Metric: "seconds", What: "seconds to insert the chain of N transactions"},
		Metrics: []section.Metric{
			{Name: "txns", Phases: []string{"insert"}, Agg: section.Sum, What: "transactions inserted"},
			{Name: "txns_per_s", Phases: []string{"insert"}, Unit: "txns/s", Agg: section.Rate, Better: section.Higher, What: "insert rate"},
			{Name: "length", Phases: []string{"chain"}, Unit: "txns", Agg: section.Max, What: "length of the chains selected"},
			{Name: "setup_seconds", Phases: []string{"chain"}, Unit: "s", Agg: section.Sum, What: "writing the chains before selecting them"},
			{Name: "reads", Phases: []string{"stress"}, Agg: section.Sum, What: "random selects"},
			{Name: "writes", Phases: []string{"stress"}, Agg: section.Sum, What: "random writes"},
			{Name: "workers", Phases: []string{"stress"}, Agg: section.Max, What: "load goroutines"},
			{Name: "view_addresses", Phases: []string{"balance"}, Agg: section.Max, What: "addresses in the view"},
			{Name: "build_seconds", Phases: []string{"balance"}, Unit: "s", Agg: section.Sum, Better: section.Lower, What: "building the view"},
			workload.ItemBytesMetric,
		},
	})
}

// ledger renders the seed 000 tables: rows are actions, columns engines.
func ledger(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	head := []string{"Action"}
	for _, t := range run.Targets {
		if section.TakesPart(t, "ledger") {
			ts = append(ts, t)
			head = append(head, t.Title)
		}
	}
	if len(ts) == 0 {
		return
	}
	row := func(label string, f func(t *results.Target) string) []string {
		r := []string{label}
		for _, t := range ts {
			r = append(r, f(t))
		}
		return r
	}
	step := func(t *results.Target, phase string, n int64) *results.Step { return t.Find("ledger", phase, n) }

	b.WriteString("## Insert a txn chain\n\nSeconds to insert a chain of N transactions into a fresh database, and the disk space it then takes (blocks allocated, like `du`).")
	if st := firstStep(ts, "insert"); st != nil && st.Unit != "" {
		// Which method: the seed's one transaction per write, or batches.
		unit, noIndex := strings.CutSuffix(st.Unit, unitNoIndex)
		fmt.Fprintf(b, " One operation: a %s (`ledger.batch`).", unit)
		// Which writes: the seed's transaction by address alone, or with
		// the chain index (runs before the parameter always wrote it).
		if noIndex {
			b.WriteString(" Each transaction is written by its address only, as the seed stored it: no chain index (`ledger.chains.index: false`).")
		} else {
			b.WriteString(" Each transaction is written by its address and into the chain index every layout keeps (`ledger.chains.index: true`): the times include the index writes.")
		}
	}
	b.WriteString("\n\n")
	tab := section.Table{Head: head}
	for _, n := range run.Ladder {
		tab.Rows = append(tab.Rows, row(fmt.Sprintf("Insert of a txn chain of %s txns", section.Count(n)), func(t *results.Target) string {
			s := step(t, "insert", n)
			if s == nil {
				return section.Missing(t, "ledger", "insert", n)
			}
			return fmt.Sprintf("%s<br>%s of disk", section.Seconds(s.Seconds), section.Bytes(s.Footprint().DiskAllocated))
		}))
	}
	tab.Write(b)

	b.WriteString("## Select one txn from a DB\n\nRandom selects by address from the database of N, one at a time. The seed reported the max of 5; here the max of all of them, with the median and p99.\n\n")
	tab = section.Table{Head: head}
	for _, n := range run.Ladder {
		tab.Rows = append(tab.Rows, row(fmt.Sprintf("Select one txn from a DB of %s txns", section.Count(n)), func(t *results.Target) string {
			s := step(t, "select", n)
			if s == nil || s.Latency.Count == 0 {
				return section.Missing(t, "ledger", "select", n)
			}
			return fmt.Sprintf("max %s<br>p50 %s, p99 %s", section.Latency(s.Latency.Max), section.Latency(s.Latency.P50), section.Latency(s.Latency.P99))
		}))
	}
	tab.Write(b)

	// A results file read back may carry no ladder (hand-edited, or cut
	// short): the largest size is then the largest a step reached.
	var largest int64
	if len(run.Ladder) > 0 {
		largest = run.Ladder[len(run.Ladder)-1]
	}
	for _, t := range ts {
		for _, s := range t.Steps {
			if len(run.Ladder) == 0 && s.N > largest {
				largest = s.N
			}
		}
	}
	var lengths []float64
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Phase == "chain" {
				l := s.Metrics["length"]
				if !containsF(lengths, l) {
					lengths = append(lengths, l)
				}
			}
		}
	}
	if len(lengths) > 0 {
		how := "A whole chain by its genesis address, in order, through the chain index every layout keeps (`ledger.chains.select: index`)"
		if st := firstStep(ts, "chain"); st != nil && strings.HasPrefix(st.Unit, "walk") {
			how = "A whole chain walked as the seed did: from its last transaction back to its genesis, one select per transaction by its prev address (`ledger.chains.select: walk`)"
		}
		fmt.Fprintf(b, "## Select a txn chain from a DB of %s txns\n\n%s, every transaction fetched and checked. Max over the sample chains (the seed: max of 5), and the mean.\n\n", section.Count(largest), how)
		tab = section.Table{Head: head}
		for _, l := range lengths {
			tab.Rows = append(tab.Rows, row(fmt.Sprintf("Select one txn chain of %s txns", section.Count(int64(l))), func(t *results.Target) string {
				for _, s := range t.Steps {
					if s.Phase == "chain" && s.Metrics["length"] == l && s.Latency.Count > 0 {
						return fmt.Sprintf("max %s<br>mean %s", section.Seconds(float64(s.Latency.Max)/1e9), section.Seconds(s.Latency.Mean/1e9))
					}
				}
				return section.Missing(t, "ledger", "chain", -1)
			}))
		}
		tab.Write(b)
	}

	b.WriteString("## RAM usage depending on the size of stored data\n\n`me` is the resident memory of the target's process (RSS; for a server, the proportional set size summed over its process tree, so memory its processes share counts once), `ca` the bytes of its files held in the OS page cache (mincore), measured after the selects at each size.\n\n")
	tab = section.Table{Head: head}
	for _, n := range run.Ladder {
		tab.Rows = append(tab.Rows, row(fmt.Sprintf("%s txns stored", section.Count(n)), func(t *results.Target) string {
			s := step(t, "select", n)
			if s == nil {
				s = step(t, "insert", n)
			}
			if s == nil {
				return section.Missing(t, "ledger", "insert", n)
			}
			f := s.Footprint()
			return fmt.Sprintf("%s me / %s ca", section.Bytes(section.Mem(f.After)), section.Bytes(f.CacheResident))
		}))
	}
	tab.Write(b)

	if st := firstStep(ts, "stress"); st != nil {
		fmt.Fprintf(b, "## Stress: random selects and random writes (DB of %s txns)\n\nOpen loop at %.0f operations/s in total for %.0f s, %.0f%% selects. Latency is shown twice: service time (the operation alone) and from the intended start time (what a client queueing behind a stall would see, corrected for coordinated omission). An operation is late when it started more than 1 ms behind schedule.\n\n",
			section.Count(largest), st.Rate, st.Seconds, 100*st.Metrics["reads"]/max(1, st.Metrics["reads"]+st.Metrics["writes"]))
		tab = section.Table{Head: head}
		get := func(f func(s *results.Step) string) func(t *results.Target) string {
			return func(t *results.Target) string {
				s := step(t, "stress", -1)
				if s == nil {
					return section.Missing(t, "ledger", "stress", -1)
				}
				return f(s)
			}
		}
		tab.Rows = append(tab.Rows,
			row("Throughput achieved", get(func(s *results.Step) string { return fmt.Sprintf("%.0f ops/s", float64(s.Ops)/s.Seconds) })),
			row("Service time p50 / p99 / max", get(func(s *results.Step) string {
				return fmt.Sprintf("%s / %s / %s", section.Latency(s.Latency.P50), section.Latency(s.Latency.P99), section.Latency(s.Latency.Max))
			})),
			row("From intended start p50 / p99 / max", get(func(s *results.Step) string {
				if s.Intended == nil {
					return "—"
				}
				return fmt.Sprintf("%s / %s / %s", section.Latency(s.Intended.P50), section.Latency(s.Intended.P99), section.Latency(s.Intended.Max))
			})),
			row("Late operations", get(func(s *results.Step) string { return fmt.Sprintf("%d of %d", s.Late, s.Ops) })),
			row("RAM usage (RSS growth)", get(func(s *results.Step) string {
				f := s.Footprint()
				return fmt.Sprintf("%s (%+.1f MiB)", section.Bytes(section.Mem(f.After)), float64(section.Mem(f.After)-section.Mem(f.Before))/(1<<20))
			})),
			row("CPU usage (100% = one core)", get(func(s *results.Step) string {
				if s.ServerResources != nil {
					return fmt.Sprintf("server %.0f%%, client %.0f%%", s.ServerResources.CPUPercent, s.Resources.CPUPercent)
				}
				return fmt.Sprintf("%.0f%%", s.Resources.CPUPercent)
			})),
		)
		tab.Write(b)
	}

	if st := firstStep(ts, "balance"); st != nil {
		fmt.Fprintf(b, "## Get balance of one address from a view of %s addresses\n\n", section.Count(int64(st.Metrics["view_addresses"])))
		tab = section.Table{Head: head}
		get := func(f func(s *results.Step) string) func(t *results.Target) string {
			return func(t *results.Target) string {
				s := step(t, "balance", -1)
				if s == nil {
					return section.Missing(t, "ledger", "balance", -1)
				}
				return f(s)
			}
		}
		tab.Rows = append(tab.Rows,
			row("Build the view", get(func(s *results.Step) string { return section.Seconds(s.Metrics["build_seconds"]) })),
			row("Get balance p50 / p99 / max", get(func(s *results.Step) string {
				return fmt.Sprintf("%s / %s / %s", section.Latency(s.Latency.P50), section.Latency(s.Latency.P99), section.Latency(s.Latency.Max))
			})),
		)
		tab.Write(b)
	}
	budgetCuts(b, ts)
}

// budgetCuts lists the steps the phase budget stopped (params.budget):
// what each got done and at what rate, so a cell above is read as the
// part it is.
func budgetCuts(b *strings.Builder, ts []*results.Target) {
	var lines []string
	for _, t := range ts {
		for _, s := range t.Steps {
			c := s.Facts["cut"]
			if d := s.Facts["cut_db"]; d != "" {
				c = strings.TrimPrefix(c+"; ", "; ") + d
			}
			if c != "" && s.Workload == "ledger" {
				what := s.Phase + " N=" + section.Count(s.N)
				if l := s.Metrics["length"]; s.Phase == "chain" && l > 0 {
					what = fmt.Sprintf("chain of %s", section.Count(int64(l)))
				}
				lines = append(lines, fmt.Sprintf("- %s, %s: %s", t.Title, what, c))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Stopped at the phase budget\n\nThese steps reached the study's phase budget (`ledger.budget`) and stopped there; their cells above are of the part done.\n\n")
	b.WriteString(strings.Join(lines, "\n") + "\n\n")
}

func firstStep(ts []*results.Target, phase string) *results.Step {
	for _, t := range ts {
		if s := t.Find("ledger", phase, -1); s != nil {
			return s
		}
	}
	return nil
}

func containsF(xs []float64, x float64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
