package report

import (
	"fmt"
	"sort"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
)

// generic renders a workload that registered no tables of its own: per
// phase, one row per target and size with throughput, service time and
// every metric the steps recorded, printed with the unit its workload
// registered (metrics it did not register show as plain numbers).
func generic(b *strings.Builder, run *results.Run, workload string) {
	ts := section.Participants(run, workload)
	if len(ts) == 0 {
		return
	}
	var phases []string
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload == workload && !contains(phases, s.Phase) {
				phases = append(phases, s.Phase)
			}
		}
		for _, x := range t.NA {
			if x.Workload == workload && !contains(phases, x.Phase) {
				phases = append(phases, x.Phase)
			}
		}
	}
	for _, phase := range phases {
		present := presentMetrics(ts, workload, phase)
		fmt.Fprintf(b, "## %s: %s\n\nThroughput and service time of each step, then the workload's own figures.\n\n", workload, phase)
		tab := Table{Head: []string{"target", "N", "throughput", "p50 / p99"}, Left: 1}
		for _, m := range present {
			h := m.Name
			if m.What != "" {
				h = m.What
			}
			tab.Head = append(tab.Head, cell(h))
		}
		for _, t := range ts {
			rows := 0
			for _, s := range t.Steps {
				if s.Workload != workload || s.Phase != phase {
					continue
				}
				rows++
				thr := "—"
				if s.Seconds > 0 {
					thr = fmt.Sprintf("%.0f ops/s", float64(s.Ops)/s.Seconds)
				}
				r := []string{t.Title, Count(s.N), thr, section.LatencyCell(s)}
				for _, m := range present {
					if v, ok := s.Metrics[m.Name]; ok {
						r = append(r, m.Format(v))
					} else {
						r = append(r, "—")
					}
				}
				tab.Rows = append(tab.Rows, r)
			}
			if rows > 0 {
				continue
			}
			if why := t.NotApplicable(workload, phase, -1); why != "" {
				tab.Rows = append(tab.Rows, section.NARow(t.Title, why, len(tab.Head)-1))
			} else {
				r := []string{t.Title}
				for len(r) < len(tab.Head) {
					r = append(r, "—")
				}
				tab.Rows = append(tab.Rows, r)
			}
		}
		tab.Write(b)
	}
}

// presentMetrics lists the columns of a phase's table: the metrics its
// section declares, in their order, then any other a step reported, sorted
// by name so the table is stable, keeping only those some target has, so
// no column is empty.
func presentMetrics(ts []*results.Target, workload, phase string) []section.Metric {
	metrics := section.Metrics(workload, phase)
	known := map[string]bool{}
	for _, m := range metrics {
		known[m.Name] = true
	}
	var extra []string
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload != workload || s.Phase != phase {
				continue
			}
			for k := range s.Metrics {
				if !known[k] && !contains(extra, k) {
					extra = append(extra, k)
				}
			}
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		metrics = append(metrics, section.Metric{Name: k})
	}
	var present []section.Metric
	for _, m := range metrics {
		if anyHas(ts, workload, phase, m.Name) {
			present = append(present, m)
		}
	}
	return present
}

func anyHas(ts []*results.Target, workload, phase, metric string) bool {
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload == workload && s.Phase == phase {
				if _, ok := s.Metrics[metric]; ok {
					return true
				}
			}
		}
	}
	return false
}
