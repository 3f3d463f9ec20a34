package report

import (
	"fmt"
	"strings"

	"storebench/internal/results"
)

// workersAndNodes renders what ran on more than one process: for a step
// driven by several load workers, each worker's share beside the merged
// whole; for a step against a cluster, each node's resources and their
// sum. Generic, whatever the workload.
func workersAndNodes(b *strings.Builder, run *results.Run) {
	step := func(s *results.Step) string {
		return fmt.Sprintf("%s %s, N=%s", s.Workload, s.Phase, Count(s.N))
	}
	cpu := func(r results.Resources) string {
		ns := r.After.CPUUserNs + r.After.CPUSysNs - r.Before.CPUUserNs - r.Before.CPUSysNs
		return fmt.Sprintf("%.1f s", float64(ns)/1e9)
	}
	wt := Table{Left: 4, Head: []string{"target", "step", "worker", "host (pid)", "ops", "ops/s", "p50", "p99", "max", "values verified", "worker CPU"}}
	var unsplit []string
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Unsplit != "" {
				unsplit = append(unsplit, fmt.Sprintf("%s %s: %s", t.Title, step(s), s.Unsplit))
			}
			if len(s.Workers) < 2 {
				continue
			}
			for _, w := range s.Workers {
				wt.Rows = append(wt.Rows, []string{cell(t.Title), step(s), fmt.Sprint(w.Index), fmt.Sprintf("%s (%d)", cell(w.Host), w.PID),
					fmt.Sprint(w.Ops), fmt.Sprintf("%.0f", w.OpsPerS), Latency(w.Latency.P50), Latency(w.Latency.P99), Latency(w.Latency.Max),
					fmt.Sprint(w.Verified), cpu(w.Resources)})
			}
			rate := ""
			if s.Seconds > 0 {
				rate = fmt.Sprintf("%.0f", float64(s.Ops)/s.Seconds)
			}
			wt.Rows = append(wt.Rows, []string{cell(t.Title), step(s), "**merged**", "", fmt.Sprint(s.Ops), rate,
				Latency(s.Latency.P50), Latency(s.Latency.P99), Latency(s.Latency.Max), fmt.Sprint(s.Verify.Checked), cpu(s.Resources)})
		}
	}
	if len(wt.Rows) > 0 {
		b.WriteString("## Load workers\n\nSteps driven by several worker processes at once, each with a disjoint share of the operations, all started at one instant. " +
			"Each worker's raw histograms were merged exactly: the merged row's percentiles are those of every operation's latency, not an average of the workers' percentiles; its CPU is the workers' sum.\n\n")
		wt.Write(b)
	}
	if len(unsplit) > 0 {
		b.WriteString("Steps that ran on one worker alone: " + strings.Join(unsplit, "; ") + ".\n\n")
	}

	nt := Table{Left: 4, Head: []string{"target", "step", "node", "role", "RSS", "peak RSS", "CPU over the step", "disk"}}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if len(s.Nodes) == 0 {
				continue
			}
			var rss, peak, disk int64
			var pct float64
			for _, n := range s.Nodes {
				state := ""
				if n.PID == 0 {
					state = " (down at the end)"
				}
				nt.Rows = append(nt.Rows, []string{cell(t.Title), step(s), cell(n.Name + " " + n.Addr + state), cell(n.Role),
					Bytes(n.RSSBytes), Bytes(n.PeakRSSBytes), fmt.Sprintf("%.0f%%", n.CPUPercent), Bytes(n.DiskAllocated)})
				rss, peak, disk, pct = rss+n.RSSBytes, peak+n.PeakRSSBytes, disk+n.DiskAllocated, pct+n.CPUPercent
			}
			nt.Rows = append(nt.Rows, []string{cell(t.Title), step(s), "**all nodes**", "", Bytes(rss), Bytes(peak), fmt.Sprintf("%.0f%%", pct), Bytes(disk)})
		}
	}
	if len(nt.Rows) > 0 {
		b.WriteString("## Cluster nodes\n\nEach node's process tree at the end of the step (RSS, peak RSS), its CPU over the step (100% = one core; a node restarted during the step counts from its restart) and its data directory on disk. The topology is in the targets table.\n\n")
		nt.Write(b)
	}
}
