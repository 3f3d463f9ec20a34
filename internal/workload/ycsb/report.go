package ycsb

import (
	"fmt"
	"sort"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/workload"
)

func init() {
	section.Register("ycsb", section.Def{
		Render:   ycsb,
		Headline: &section.Headline{Figure: "ycsb.a", Metric: "throughput", What: "throughput of YCSB workload A (50% read, 50% update)"},
		Metrics: []section.Metric{
			{Name: "records", Agg: section.Max, What: "records in the table"},
			{Name: "read", Agg: section.Mean, What: "share of reads in the mix"},
			{Name: "update", Agg: section.Mean, What: "share of updates in the mix"},
			{Name: "insert", Agg: section.Mean, What: "share of inserts in the mix"},
			{Name: "scan", Agg: section.Mean, What: "share of scans in the mix"},
			{Name: "rmw", Agg: section.Mean, What: "share of read-modify-writes in the mix"},
			{Name: "acknowledged", Agg: section.Max, What: "inserts the store acknowledged while nodes failed"},
			{Name: "errors", Agg: section.Max, What: "insert attempts that failed while nodes failed"},
			{Name: "retries", Agg: section.Max, What: "insert attempts repeated after an error"},
			{Name: "unacknowledged", Agg: section.Max, What: "inserts never acknowledged (not checked)"},
			{Name: "lost_acknowledged", Agg: section.Max, What: "acknowledged inserts missing when read back after the faults"},
			{Name: "verify_seconds", Agg: section.Max, What: "seconds the read-back of acknowledged inserts took"},
			{Name: "event_loops", Agg: section.Max, What: "event loops that drove the connections (0: a goroutine per connection)"},
			{Name: "cluster_not_ok_seconds", Agg: section.Max, What: "seconds some node said the cluster was not ok while nodes failed (Redis Cluster)"},
			workload.ItemBytesMetric,
		},
	})
}

var ycsbTitles = map[string]string{
	"load": "Load: insert the records",
	"a":    "A: 50% read, 50% update (zipfian)",
	"b":    "B: 95% read, 5% update (zipfian)",
	"c":    "C: 100% read (zipfian)",
	"d":    "D: 95% read, 5% insert (latest)",
	"e":    "E: 95% scan, 5% insert (zipfian)",
	"f":    "F: 50% read, 50% read-modify-write (zipfian)",
}

// ycsb renders one table per record count: rows are workloads, columns
// targets; each cell has the throughput and p99 per operation type.
func ycsb(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	head := []string{"Workload"}
	for _, t := range run.Targets {
		if section.TakesPart(t, "ycsb") {
			ts = append(ts, t)
			head = append(head, t.Title)
		}
	}
	if len(ts) == 0 {
		return
	}
	for _, n := range run.Ladder {
		fmt.Fprintf(b, "## YCSB with %s records\n\nThroughput, then p99 service time per operation type. Every read and scanned record is checked.\n\n", section.Count(n))
		tab := section.Table{Head: head}
		for _, w := range []string{"load", "a", "b", "c", "d", "e", "f"} {
			r := []string{ycsbTitles[w]}
			any := false
			for _, t := range ts {
				s := t.Find("ycsb", w, n)
				if s == nil || s.Ops == 0 {
					c := section.Missing(t, "ycsb", w, n)
					any = any || c != "—"
					r = append(r, c)
					continue
				}
				any = true
				cell := fmt.Sprintf("**%.0f ops/s**", float64(s.Ops)/s.Seconds)
				var ops []string
				for op := range s.ByOp {
					ops = append(ops, op)
				}
				sort.Strings(ops)
				for _, op := range ops {
					cell += fmt.Sprintf("<br>%s p99 %s", strings.ToLower(op), section.Latency(s.ByOp[op].P99))
				}
				if len(ops) == 0 {
					cell += fmt.Sprintf("<br>p99 %s", section.Latency(s.Latency.P99))
				}
				r = append(r, cell)
			}
			if any {
				tab.Rows = append(tab.Rows, r)
			}
		}
		tab.Write(b)
	}
	faultsReport(b, run)
}

// faultsReport renders, for each step with fault actions, the events, the
// throughput before, during and after them, the errors and retries, the
// acknowledged writes lost.
func faultsReport(b *strings.Builder, run *results.Run) {
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Workload != "ycsb" || len(s.Events) == 0 {
				continue
			}
			fmt.Fprintf(b, "## Faults: %s, %s, %s records\n\n", t.Title, ycsbTitles[s.Phase], section.Count(s.N))
			if f := s.Facts["faults"]; f != "" {
				fmt.Fprintf(b, "Asked: %s. ", f)
			}
			if v := s.Facts["verify_read"]; v != "" {
				fmt.Fprintf(b, "Then %s.", v)
			}
			b.WriteString("\n\n")
			section.WriteFaults(b, s, "ops/s", 1)
			m := s.Metrics
			fmt.Fprintf(b, "Inserts acknowledged: %.0f of %.0f; failed attempts (errors): %.0f; retries: %.0f; never acknowledged (not checked): %.0f; "+
				"**acknowledged writes lost: %.0f** (of %d read back in %.1f s).\n\n",
				m["acknowledged"], m["records"], m["errors"], m["retries"], m["unacknowledged"], m["lost_acknowledged"], s.Verify.Checked, m["verify_seconds"])
			if l := s.Facts["lost_writes"]; l != "" {
				fmt.Fprintf(b, "Lost writes are %s\n\n", l)
			}
			if n := m["landed_unanswered"]; n > 0 {
				fmt.Fprintf(b, "Inserts whose answer the fault cut but which had landed (read back as written when a retry failed): %.0f, counted acknowledged.\n\n", n)
			}
			if r := s.Facts["rewritten"]; r != "" {
				fmt.Fprintf(b, "Then %s.\n\n", r)
			}
			topologyReport(b, s)
			// Each node's resources are in the report's generic "Cluster nodes" section.
		}
	}
}

// topologyReport shows a cluster's shape before and after the faults
// (facts a FaultWatcher gave: "node1 addr: what; node2 addr: what"), the
// failover and how long the cluster said it was not ok.
func topologyReport(b *strings.Builder, s *results.Step) {
	before, after := s.Facts["topology_before"], s.Facts["topology_after"]
	if before == "" && after == "" {
		return
	}
	split := func(t string) (order []string, m map[string]string) {
		m = map[string]string{}
		for _, part := range strings.Split(t, "; ") {
			node, what, ok := strings.Cut(part, ": ")
			if !ok {
				node, what = "", part
			}
			if _, seen := m[node]; !seen {
				order = append(order, node)
			}
			m[node] = what
		}
		return order, m
	}
	order, bm := split(before)
	more, am := split(after)
	for _, n := range more {
		if _, ok := bm[n]; !ok {
			order = append(order, n)
		}
	}
	tab := section.Table{Head: []string{"Node", "At the start of the phase", "After the faults"}}
	for _, n := range order {
		tab.Rows = append(tab.Rows, []string{n, bm[n], am[n]})
	}
	tab.Write(b)
	if f := s.Facts["failover"]; f != "" {
		fmt.Fprintf(b, "Failover: %s.\n\n", f)
	}
	if f := s.Facts["cluster_not_ok"]; f != "" {
		fmt.Fprintf(b, "Cluster not ok: %s.\n\n", f)
	}
}
