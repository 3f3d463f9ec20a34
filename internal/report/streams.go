package report

import (
	"fmt"
	"strings"

	"storebench/internal/results"
)

// streams renders, for any step that ran several streams or background
// tasks, one row per stream and one per task: generic, whatever the
// workload (the workload's own section has the step's whole figures).
func streams(b *strings.Builder, run *results.Run) {
	step := func(s *results.Step) string {
		return fmt.Sprintf("%s %s, N=%s", s.Workload, s.Phase, Count(s.N))
	}
	st := Table{Left: 3, Head: []string{"target", "step", "stream", "goroutines", "offered /s", "achieved /s", "ops", "p50", "p99", "max", "p99 from intended start", "late"}}
	bg := Table{Left: 3, Head: []string{"target", "step", "background task", "every", "runs", "busy", "p50", "p99", "max"}}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			for _, x := range s.Streams {
				offered, intended, late := "closed loop", "", ""
				if x.Rate > 0 {
					offered = fmt.Sprintf("%.0f", x.Rate)
				}
				if x.Intended != nil {
					intended, late = Latency(x.Intended.P99), fmt.Sprint(x.Late)
				}
				achieved := ""
				if x.Seconds > 0 {
					achieved = fmt.Sprintf("%.0f", float64(x.Ops)/x.Seconds)
				}
				st.Rows = append(st.Rows, []string{cell(t.Title), step(s), cell(x.Name), fmt.Sprint(x.Goroutines), offered, achieved,
					fmt.Sprint(x.Ops), Latency(x.Latency.P50), Latency(x.Latency.P99), Latency(x.Latency.Max), intended, late})
			}
			for _, x := range s.Background {
				every := "back to back"
				if x.EverySeconds > 0 {
					every = Seconds(x.EverySeconds)
				}
				bg.Rows = append(bg.Rows, []string{cell(t.Title), step(s), cell(x.Name), every, fmt.Sprint(x.Runs), Seconds(x.BusySeconds),
					Latency(x.Latency.P50), Latency(x.Latency.P99), Latency(x.Latency.Max)})
			}
		}
	}
	if len(st.Rows) > 0 {
		b.WriteString("## Streams\n\nSteps that ran several concurrent loads, each at its own rate (open loop) with its own histograms; the step's own figures are all of them together. Achieved is the stream's operations over its own duration.\n\n")
		st.Write(b)
	}
	if len(bg.Rows) > 0 {
		b.WriteString("## Background tasks\n\nJobs that ran beside a step's load, each timed on its own: runs completed, the time they took in all, and the duration of one run.\n\n")
		bg.Write(b)
	}
}
