package oltp

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/measure/latency"
	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/workload"
)

func init() {
	section.Register("oltp", section.Def{
		Render:   render,
		Headline: &section.Headline{Figure: "oltp.read_only", Metric: "throughput", What: "transactions per second of sysbench oltp_read_only"},
		Metrics: []section.Metric{
			{Name: "threads", Agg: section.Max, What: "client threads (connections)"},
			{Name: "tables", Agg: section.Max, What: "sbtest tables"},
			{Name: "rows", Agg: section.Max, What: "rows per table"},
			{Name: "tps", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Unit: "tps", Agg: section.Rate, Better: section.Higher, What: "transactions per second"},
			{Name: "qps", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Unit: "qps", Agg: section.Rate, Better: section.Higher, What: "queries per second (reads, writes, BEGIN and COMMIT)"},
			{Name: "reads", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Sum, What: "read queries performed"},
			{Name: "writes", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Sum, What: "write queries performed"},
			{Name: "other", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Sum, What: "other queries performed (BEGIN, COMMIT)"},
			{Name: "queries", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Sum, What: "queries performed"},
			{Name: "ignored_errors", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Sum, Better: section.Lower, What: "deadlocks and serialization failures, retried"},
			{Name: "reconnects", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Sum, Better: section.Lower, What: "lost connections, reconnected"},
			{Name: "events_avg", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Mean, What: "transactions per thread, mean"},
			{Name: "events_stddev", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Agg: section.Mean, What: "transactions per thread, standard deviation"},
			{Name: "exec_time_avg_s", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Unit: "s", Agg: section.Mean, What: "time in transactions per thread, mean"},
			{Name: "exec_time_stddev_s", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Unit: "s", Agg: section.Mean, What: "time in transactions per thread, standard deviation"},
			{Name: "latency_sum_s", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Unit: "s", Agg: section.Sum, What: "time in transactions, all threads"},
			{Name: "report_interval", Phases: []string{PhaseReadOnly, PhaseWriteOnly}, Unit: "s", Agg: section.Max, What: "seconds per interval line"},
			{Name: "rows_per_s", Phases: []string{PhasePrepare}, Unit: "rows/s", Agg: section.Rate, Better: section.Higher, What: "rows bulk-inserted per second"},
			{Name: "load_s", Phases: []string{PhasePrepare}, Unit: "s", Agg: section.Max, Better: section.Lower, What: "seconds to bulk-insert the rows"},
			{Name: "index_s", Phases: []string{PhasePrepare}, Unit: "s", Agg: section.Max, Better: section.Lower, What: "seconds to create the k indexes"},
			workload.ItemBytesMetric,
		},
	})
}

// runSteps are a target's read_only and write_only steps at size n, by
// phase then threads.
func runSteps(t *results.Target, n int64) []*results.Step {
	var out []*results.Step
	for _, s := range t.Steps {
		if s.Workload == "oltp" && s.N == n && s.Phase != PhasePrepare && s.Ops > 0 {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Phase != out[j].Phase {
			return out[i].Phase < out[j].Phase
		}
		return out[i].Metrics["threads"] < out[j].Metrics["threads"]
	})
	return out
}

func render(b *strings.Builder, run *results.Run) {
	ts := section.Participants(run, "oltp")
	if len(ts) == 0 {
		return
	}
	for _, n := range run.Ladder {
		tables := 0.0
		for _, t := range ts {
			for _, s := range t.Steps {
				if s.Workload == "oltp" && s.N == n {
					tables = max(tables, s.Metrics["tables"])
				}
			}
		}
		fmt.Fprintf(b, "## OLTP, sysbench compatible: %.0f × %s rows\n\n", tables, section.Count(n))
		b.WriteString("sysbench's oltp_read_only (BEGIN, 10 point selects, a simple, sum, order and distinct range of 100 ids, COMMIT: 16 queries) and oltp_write_only (BEGIN, index update, non-index update, delete + insert of one id, COMMIT: 6 queries), prepared statements. Every point select's c is checked against its id, every range's row count, order and value format. MariaDB stands in for MySQL.\n\n")
		fmt.Fprintf(b, "Ids drawn (rand_type): %s.\n\n", idsDrawn(ts, n))
		tab := section.Table{Head: []string{"Target", "Phase", "Threads", "tps", "qps", "p95", "p99", "ignored errors", "reconnects"}}
		for _, t := range ts {
			steps := runSteps(t, n)
			if len(steps) == 0 {
				tab.Rows = append(tab.Rows, []string{t.Title, section.Missing(t, "oltp", PhaseReadOnly, n), "", "", "", "", "", "", ""})
				continue
			}
			for _, s := range steps {
				h, _ := latency.Decode(s.Hist)
				tab.Rows = append(tab.Rows, []string{t.Title, s.Phase, fmt.Sprintf("%.0f", s.Metrics["threads"]),
					fmt.Sprintf("%.2f", s.Metrics["tps"]), fmt.Sprintf("%.2f", s.Metrics["qps"]),
					section.Latency(h.ValueAtQuantile(95)), section.Latency(s.Latency.P99),
					fmt.Sprintf("%.0f", s.Metrics["ignored_errors"]), fmt.Sprintf("%.0f", s.Metrics["reconnects"])})
			}
		}
		tab.Write(b)
		for _, t := range ts {
			for _, p := range t.Steps {
				if p.Workload == "oltp" && p.N == n && p.Phase == PhasePrepare && p.Metrics != nil {
					fmt.Fprintf(b, "%s prepare: %.0f rows bulk-inserted in %s (%.0f rows/s), indexes k_1..k_%.0f created after in %s.\n\n",
						t.Title, p.Metrics["rows"]*p.Metrics["tables"], section.Seconds(p.Metrics["load_s"]), p.Metrics["rows_per_s"], p.Metrics["tables"], section.Seconds(p.Metrics["index_s"]))
				}
			}
			for _, s := range runSteps(t, n) {
				fmt.Fprintf(b, "### %s, oltp_%s, %.0f threads\n\n```\n", t.Title, s.Phase, s.Metrics["threads"])
				b.WriteString(Sysbench(s))
				b.WriteString("```\n\n")
			}
		}
	}
}

// idsDrawn says how the steps at size n drew their ids (a run before
// rand_type existed drew them uniformly), each way once.
func idsDrawn(ts []*results.Target, n int64) string {
	var ways []string
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload != "oltp" || s.N != n || s.Phase == PhasePrepare || s.Ops == 0 {
				continue
			}
			w := s.Facts["ids"]
			if w == "" {
				w = "uniform"
			}
			if !slices.Contains(ways, w) {
				ways = append(ways, w)
			}
		}
	}
	if len(ways) == 0 {
		return "uniform"
	}
	return strings.Join(ways, "; ")
}

// Sysbench renders a run step as sysbench prints it: the interval lines
// (one per report interval, from the per-tick series and histograms),
// (the 95th percentile of each interval is recorded at its last tick),
// then the closing statistics, then HDR percentiles.
func Sysbench(s *results.Step) string {
	var b strings.Builder
	threads := int(s.Metrics["threads"])
	every := max(int(s.Metrics["report_interval"]), 1)
	for i := 0; i < len(s.Series); i += every {
		end := min(i+every, len(s.Series))
		var ops int64
		var c [5]int64
		start := 0.0
		if i > 0 {
			start = s.Series[i-1].T
		}
		for j := i; j < end; j++ {
			ops += s.Series[j].Ops
			for k, name := range countNames {
				c[k] += s.Series[j].Counts[name]
			}
		}
		secs := s.Series[end-1].T - start
		if secs < 0.5*float64(every) {
			// The run's last sliver, cut short by its end.
			continue
		}
		q := c[0] + c[1] + c[2]
		fmt.Fprintf(&b, "[ %ds ] thds: %d tps: %.2f qps: %.2f (r/w/o: %.2f/%.2f/%.2f) lat (ms,95%%): %.2f err/s: %.2f reconn/s: %.2f\n",
			int(math.Round(s.Series[end-1].T)), threads, float64(ops)/secs, float64(q)/secs,
			float64(c[0])/secs, float64(c[1])/secs, float64(c[2])/secs, ms(s.Series[end-1].Counts["p95_ns"]),
			float64(c[3])/secs, float64(c[4])/secs)
	}
	m := s.Metrics
	secs := s.Seconds
	full, _ := latency.Decode(s.Hist)
	fmt.Fprintf(&b, "SQL statistics:\n    queries performed:\n")
	fmt.Fprintf(&b, "        read:                            %.0f\n", m["reads"])
	fmt.Fprintf(&b, "        write:                           %.0f\n", m["writes"])
	fmt.Fprintf(&b, "        other:                           %.0f\n", m["other"])
	fmt.Fprintf(&b, "        total:                           %.0f\n", m["queries"])
	fmt.Fprintf(&b, "    transactions:                        %-6d (%.2f per sec.)\n", s.Ops, float64(s.Ops)/secs)
	fmt.Fprintf(&b, "    queries:                             %-6.0f (%.2f per sec.)\n", m["queries"], m["queries"]/secs)
	fmt.Fprintf(&b, "    ignored errors:                      %-6.0f (%.2f per sec.)\n", m["ignored_errors"], m["ignored_errors"]/secs)
	fmt.Fprintf(&b, "    reconnects:                          %-6.0f (%.2f per sec.)\n\n", m["reconnects"], m["reconnects"]/secs)
	fmt.Fprintf(&b, "General statistics:\n")
	fmt.Fprintf(&b, "    total time:                          %.4fs\n", secs)
	fmt.Fprintf(&b, "    total number of events:              %d\n\n", s.Ops)
	fmt.Fprintf(&b, "Latency (ms):\n")
	fmt.Fprintf(&b, "         min:                            %8.2f\n", ms(s.Latency.Min))
	fmt.Fprintf(&b, "         avg:                            %8.2f\n", s.Latency.Mean/1e6)
	fmt.Fprintf(&b, "         max:                            %8.2f\n", ms(s.Latency.Max))
	fmt.Fprintf(&b, "         95th percentile:                %8.2f\n", ms(full.ValueAtQuantile(95)))
	fmt.Fprintf(&b, "         sum:                            %8.2f\n\n", m["latency_sum_s"]*1e3)
	fmt.Fprintf(&b, "Threads fairness:\n")
	fmt.Fprintf(&b, "    events (avg/stddev):           %.4f/%.2f\n", m["events_avg"], m["events_stddev"])
	fmt.Fprintf(&b, "    execution time (avg/stddev):   %.4f/%.2f\n\n", m["exec_time_avg_s"], m["exec_time_stddev_s"])
	fmt.Fprintf(&b, "HDR percentiles (ms):\n")
	for _, p := range []float64{50, 90, 95, 99, 99.9, 99.99, 100} {
		fmt.Fprintf(&b, "    %-7s %8.2f\n", strconv.FormatFloat(p, 'f', -1, 64)+"%", ms(full.ValueAtQuantile(p)))
	}
	return b.String()
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
