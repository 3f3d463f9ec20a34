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
			// "workers" in results of schema version 4 (results.Decode
			// renames it).
			{Name: "goroutines", Phases: []string{"stress"}, Agg: section.Max, What: "load goroutines"},
			{Name: "view_addresses", Phases: []string{"balance"}, Agg: section.Max, What: "addresses in the view"},
			{Name: "build_seconds", Phases: []string{"balance"}, Unit: "s", Agg: section.Sum, Better: section.Lower, What: "building the view"},
			workload.ItemBytesMetric,
		},
	})
}

// ledger renders the seed 000 tables: rows are actions, columns engines.
func ledger(b *strings.Builder, run *results.Run) {
	lt := &ledgerTables{b: b, head: []string{"Action"}}
	for _, t := range run.Targets {
		if section.TakesPart(t, "ledger") {
			lt.ts = append(lt.ts, t)
			lt.head = append(lt.head, t.Title)
		}
	}
	if len(lt.ts) == 0 {
		return
	}
	lt.insert(run.Ladder)
	lt.selectOne(run.Ladder)
	largest := largestN(run, lt.ts)
	lt.chains(largest)
	lt.ram(run.Ladder)
	lt.stress(largest)
	lt.balance()
	budgetCuts(b, lt.ts)
}

// ledgerTables writes the ledger's tables, one a phase, each with a row
// an action and a column a target taking part (ts, titled in head).
type ledgerTables struct {
	b    *strings.Builder
	ts   []*results.Target
	head []string
}

// row is the row label, with f of each target in its column.
func (lt *ledgerTables) row(label string, f func(t *results.Target) string) []string {
	r := []string{label}
	for _, t := range lt.ts {
		r = append(r, f(t))
	}
	return r
}

func step(t *results.Target, phase string, n int64) *results.Step { return t.Find("ledger", phase, n) }

// insert writes the insert table: seconds and disk at each ladder size,
// after what one operation wrote.
func (lt *ledgerTables) insert(ladder []int64) {
	b := lt.b
	b.WriteString("## Insert a txn chain\n\nSeconds to insert a chain of N transactions into a fresh database, and the disk space it then takes (blocks allocated, like `du`).")
	if st := firstStep(lt.ts, "insert"); st != nil && st.Unit != "" {
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
	tab := section.Table{Head: lt.head}
	for _, n := range ladder {
		tab.Rows = append(tab.Rows, lt.row(fmt.Sprintf("Insert of a txn chain of %s txns", section.Count(n)), func(t *results.Target) string {
			s := step(t, "insert", n)
			if s == nil {
				return section.Missing(t, "ledger", "insert", n)
			}
			return fmt.Sprintf("%s<br>%s of disk", section.Seconds(s.Seconds), section.Bytes(s.Footprint().DiskAllocated))
		}))
	}
	tab.Write(b)
}

// selectOne writes the table of single selects at each ladder size.
func (lt *ledgerTables) selectOne(ladder []int64) {
	lt.b.WriteString("## Select one txn from a DB\n\nRandom selects by address from the database of N, one at a time. The seed reported the max of 5; here the max of all of them, with the median and p99.\n\n")
	tab := section.Table{Head: lt.head}
	for _, n := range ladder {
		tab.Rows = append(tab.Rows, lt.row(fmt.Sprintf("Select one txn from a DB of %s txns", section.Count(n)), func(t *results.Target) string {
			s := step(t, "select", n)
			if s == nil || s.Latency.Count == 0 {
				return section.Missing(t, "ledger", "select", n)
			}
			return fmt.Sprintf("max %s<br>p50 %s, p99 %s", section.Latency(s.Latency.Max), section.Latency(s.Latency.P50), section.Latency(s.Latency.P99))
		}))
	}
	tab.Write(lt.b)
}

// largestN is the largest ladder size of run. A results file read back
// may carry no ladder (hand-edited, or cut short): the largest size is
// then the largest a step of ts reached.
func largestN(run *results.Run, ts []*results.Target) int64 {
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
	return largest
}

// chains writes the table of whole-chain selects from the database of
// largest, a row a chain length some target selected; nothing when none
// did.
func (lt *ledgerTables) chains(largest int64) {
	var lengths []float64
	for _, t := range lt.ts {
		for _, s := range t.Steps {
			if s.Phase == "chain" {
				l := s.Metrics["length"]
				if !containsF(lengths, l) {
					lengths = append(lengths, l)
				}
			}
		}
	}
	if len(lengths) == 0 {
		return
	}
	how := "A whole chain by its genesis address, in order, through the chain index every layout keeps (`ledger.chains.select: index`)"
	if st := firstStep(lt.ts, "chain"); st != nil && strings.HasPrefix(st.Unit, "walk") {
		how = "A whole chain walked as the seed did: from its last transaction back to its genesis, one select per transaction by its prev address (`ledger.chains.select: walk`)"
	}
	fmt.Fprintf(lt.b, "## Select a txn chain from a DB of %s txns\n\n%s, every transaction fetched and checked. Max over the sample chains (the seed: max of 5), and the mean.\n\n", section.Count(largest), how)
	tab := section.Table{Head: lt.head}
	for _, l := range lengths {
		tab.Rows = append(tab.Rows, lt.row(fmt.Sprintf("Select one txn chain of %s txns", section.Count(int64(l))), func(t *results.Target) string {
			for _, s := range t.Steps {
				if s.Phase == "chain" && s.Metrics["length"] == l && s.Latency.Count > 0 {
					return fmt.Sprintf("max %s<br>mean %s", section.Seconds(float64(s.Latency.Max)/1e9), section.Seconds(s.Latency.Mean/1e9))
				}
			}
			return section.Missing(t, "ledger", "chain", -1)
		}))
	}
	tab.Write(lt.b)
}

// ram writes the table of memory and page cache at each ladder size.
func (lt *ledgerTables) ram(ladder []int64) {
	lt.b.WriteString("## RAM usage depending on the size of stored data\n\n`me` is the resident memory of the target's process (RSS; for a server, the proportional set size summed over its process tree, so memory its processes share counts once), `ca` the bytes of its files held in the OS page cache (mincore), measured after the selects at each size.\n\n")
	tab := section.Table{Head: lt.head}
	for _, n := range ladder {
		tab.Rows = append(tab.Rows, lt.row(fmt.Sprintf("%s txns stored", section.Count(n)), func(t *results.Target) string {
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
	tab.Write(lt.b)
}

// ofPhase is a cell of the step of phase (its only one) of a target: f
// of the step, or why the target has none.
func ofPhase(phase string, f func(s *results.Step) string) func(t *results.Target) string {
	return func(t *results.Target) string {
		s := step(t, phase, -1)
		if s == nil {
			return section.Missing(t, "ledger", phase, -1)
		}
		return f(s)
	}
}

// stress writes the stress table, on the database of largest; nothing
// when no target ran the stress.
func (lt *ledgerTables) stress(largest int64) {
	st := firstStep(lt.ts, "stress")
	if st == nil {
		return
	}
	fmt.Fprintf(lt.b, "## Stress: random selects and random writes (DB of %s txns)\n\nOpen loop at %.0f operations/s in total for %.0f s, %.0f%% selects. Latency is shown twice: service time (the operation alone) and from the intended start time (what a client queueing behind a stall would see, corrected for coordinated omission). An operation is late when it started more than 1 ms behind schedule.\n\n",
		section.Count(largest), st.Rate, st.Seconds, 100*st.Metrics["reads"]/max(1, st.Metrics["reads"]+st.Metrics["writes"]))
	tab := section.Table{Head: lt.head}
	tab.Rows = append(tab.Rows,
		lt.row("Throughput achieved", ofPhase("stress", func(s *results.Step) string { return fmt.Sprintf("%.0f ops/s", float64(s.Ops)/s.Seconds) })),
		lt.row("Service time p50 / p99 / max", ofPhase("stress", func(s *results.Step) string {
			return fmt.Sprintf("%s / %s / %s", section.Latency(s.Latency.P50), section.Latency(s.Latency.P99), section.Latency(s.Latency.Max))
		})),
		lt.row("From intended start p50 / p99 / max", ofPhase("stress", func(s *results.Step) string {
			if s.Intended == nil {
				return "—"
			}
			return fmt.Sprintf("%s / %s / %s", section.Latency(s.Intended.P50), section.Latency(s.Intended.P99), section.Latency(s.Intended.Max))
		})),
		lt.row("Late operations", ofPhase("stress", func(s *results.Step) string { return fmt.Sprintf("%d of %d", s.Late, s.Ops) })),
		lt.row("RAM usage (RSS growth)", ofPhase("stress", func(s *results.Step) string {
			f := s.Footprint()
			return fmt.Sprintf("%s (%+.1f MiB)", section.Bytes(section.Mem(f.After)), float64(section.Mem(f.After)-section.Mem(f.Before))/(1<<20))
		})),
		lt.row("CPU usage (100% = one core)", ofPhase("stress", func(s *results.Step) string {
			if s.ServerResources != nil {
				return fmt.Sprintf("server %.0f%%, client %.0f%%", s.ServerResources.CPUPercent, s.Resources.CPUPercent)
			}
			return fmt.Sprintf("%.0f%%", s.Resources.CPUPercent)
		})),
	)
	tab.Write(lt.b)
}

// balance writes the balance view's table; nothing when no target read
// balances.
func (lt *ledgerTables) balance() {
	st := firstStep(lt.ts, "balance")
	if st == nil {
		return
	}
	fmt.Fprintf(lt.b, "## Get balance of one address from a view of %s addresses\n\n", section.Count(int64(st.Metrics["view_addresses"])))
	tab := section.Table{Head: lt.head}
	tab.Rows = append(tab.Rows,
		lt.row("Build the view", ofPhase("balance", func(s *results.Step) string { return section.Seconds(s.Metrics["build_seconds"]) })),
		lt.row("Get balance p50 / p99 / max", ofPhase("balance", func(s *results.Step) string {
			return fmt.Sprintf("%s / %s / %s", section.Latency(s.Latency.P50), section.Latency(s.Latency.P99), section.Latency(s.Latency.Max))
		})),
	)
	tab.Write(lt.b)
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
