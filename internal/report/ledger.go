package report

import (
	"fmt"
	"strings"

	"storebench/internal/measure/procstat"
	"storebench/internal/results"
)

func init() {
	RegisterSection("ledger", ledger)
	RegisterHeadline("ledger", Headline{Figure: "ledger.insert", Metric: "seconds", What: "seconds to insert the chain of N transactions"})
}

// ledger renders the seed 000 tables: rows are actions, columns engines.
func ledger(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	head := []string{"Action"}
	for _, t := range run.Targets {
		if takesPart(t, "ledger") {
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

	b.WriteString("## Insert a txn chain\n\nSeconds to insert a chain of N transactions into a fresh database, and the disk space it then takes (blocks allocated, like `du`).\n\n")
	tab := Table{Head: head}
	for _, n := range run.Ladder {
		tab.Rows = append(tab.Rows, row(fmt.Sprintf("Insert of a txn chain of %s txns", Count(n)), func(t *results.Target) string {
			s := step(t, "insert", n)
			if s == nil {
				return missing(t, "ledger", "insert", n)
			}
			return fmt.Sprintf("%s<br>%s of disk", Seconds(s.Seconds), Bytes(s.Footprint().DiskAllocated))
		}))
	}
	tab.write(b)

	b.WriteString("## Select one txn from a DB\n\nRandom selects by address from the database of N, one at a time. The seed reported the max of 5; here the max of all of them, with the median and p99.\n\n")
	tab = Table{Head: head}
	for _, n := range run.Ladder {
		tab.Rows = append(tab.Rows, row(fmt.Sprintf("Select one txn from a DB of %s txns", Count(n)), func(t *results.Target) string {
			s := step(t, "select", n)
			if s == nil || s.Latency.Count == 0 {
				return missing(t, "ledger", "select", n)
			}
			return fmt.Sprintf("max %s<br>p50 %s, p99 %s", Latency(s.Latency.Max), Latency(s.Latency.P50), Latency(s.Latency.P99))
		}))
	}
	tab.write(b)

	largest := run.Ladder[len(run.Ladder)-1]
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
		fmt.Fprintf(b, "## Select a txn chain from a DB of %s txns\n\nA whole chain by its genesis address, in order, every transaction fetched and checked. Max over the sample chains (the seed: max of 5), and the mean.\n\n", Count(largest))
		tab = Table{Head: head}
		for _, l := range lengths {
			tab.Rows = append(tab.Rows, row(fmt.Sprintf("Select one txn chain of %s txns", Count(int64(l))), func(t *results.Target) string {
				for _, s := range t.Steps {
					if s.Phase == "chain" && s.Metrics["length"] == l && s.Latency.Count > 0 {
						return fmt.Sprintf("max %s<br>mean %s", Seconds(float64(s.Latency.Max)/1e9), Seconds(s.Latency.Mean/1e9))
					}
				}
				return missing(t, "ledger", "chain", -1)
			}))
		}
		tab.write(b)
	}

	b.WriteString("## RAM usage depending on the size of stored data\n\n`me` is the resident memory of the target's process (RSS; for a server, the proportional set size summed over its process tree, so memory its processes share counts once), `ca` the bytes of its files held in the OS page cache (mincore), measured after the selects at each size.\n\n")
	tab = Table{Head: head}
	for _, n := range run.Ladder {
		tab.Rows = append(tab.Rows, row(fmt.Sprintf("%s txns stored", Count(n)), func(t *results.Target) string {
			s := step(t, "select", n)
			if s == nil {
				s = step(t, "insert", n)
			}
			if s == nil {
				return missing(t, "ledger", "insert", n)
			}
			f := s.Footprint()
			return fmt.Sprintf("%s me / %s ca", Bytes(Mem(f.After)), Bytes(f.CacheResident))
		}))
	}
	tab.write(b)

	if st := firstStep(ts, "stress"); st != nil {
		fmt.Fprintf(b, "## Stress: random selects and random writes (DB of %s txns)\n\nOpen loop at %.0f operations/s in total for %.0f s, %.0f%% selects. Latency is shown twice: service time (the operation alone) and from the intended start time (what a client queueing behind a stall would see, corrected for coordinated omission). An operation is late when it started more than 1 ms behind schedule.\n\n",
			Count(largest), st.Rate, st.Seconds, 100*st.Metrics["reads"]/max(1, st.Metrics["reads"]+st.Metrics["writes"]))
		tab = Table{Head: head}
		get := func(f func(s *results.Step) string) func(t *results.Target) string {
			return func(t *results.Target) string {
				s := step(t, "stress", -1)
				if s == nil {
					return missing(t, "ledger", "stress", -1)
				}
				return f(s)
			}
		}
		tab.Rows = append(tab.Rows,
			row("Throughput achieved", get(func(s *results.Step) string { return fmt.Sprintf("%.0f ops/s", float64(s.Ops)/s.Seconds) })),
			row("Service time p50 / p99 / max", get(func(s *results.Step) string {
				return fmt.Sprintf("%s / %s / %s", Latency(s.Latency.P50), Latency(s.Latency.P99), Latency(s.Latency.Max))
			})),
			row("From intended start p50 / p99 / max", get(func(s *results.Step) string {
				if s.Intended == nil {
					return "—"
				}
				return fmt.Sprintf("%s / %s / %s", Latency(s.Intended.P50), Latency(s.Intended.P99), Latency(s.Intended.Max))
			})),
			row("Late operations", get(func(s *results.Step) string { return fmt.Sprintf("%d of %d", s.Late, s.Ops) })),
			row("RAM usage (RSS growth)", get(func(s *results.Step) string {
				f := s.Footprint()
				return fmt.Sprintf("%s (%+.1f MiB)", Bytes(Mem(f.After)), float64(Mem(f.After)-Mem(f.Before))/(1<<20))
			})),
			row("CPU usage (100% = one core)", get(func(s *results.Step) string {
				if s.ServerResources != nil {
					return fmt.Sprintf("server %.0f%%, client %.0f%%", s.ServerResources.CPUPercent, s.Resources.CPUPercent)
				}
				return fmt.Sprintf("%.0f%%", s.Resources.CPUPercent)
			})),
		)
		tab.write(b)
	}

	if st := firstStep(ts, "balance"); st != nil {
		fmt.Fprintf(b, "## Get balance of one address from a view of %s addresses\n\n", Count(int64(st.Metrics["view_addresses"])))
		tab = Table{Head: head}
		get := func(f func(s *results.Step) string) func(t *results.Target) string {
			return func(t *results.Target) string {
				s := step(t, "balance", -1)
				if s == nil {
					return missing(t, "ledger", "balance", -1)
				}
				return f(s)
			}
		}
		tab.Rows = append(tab.Rows,
			row("Build the view", get(func(s *results.Step) string { return Seconds(s.Metrics["build_seconds"]) })),
			row("Get balance p50 / p99 / max", get(func(s *results.Step) string {
				return fmt.Sprintf("%s / %s / %s", Latency(s.Latency.P50), Latency(s.Latency.P99), Latency(s.Latency.Max))
			})),
		)
		tab.write(b)
	}
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

// Mem is a snapshot's memory: PSS for a process tree (shared pages once),
// RSS for a single process.
func Mem(s procstat.Snapshot) int64 {
	if s.PSSBytes > 0 {
		return s.PSSBytes
	}
	return s.RSSBytes
}
