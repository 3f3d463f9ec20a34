// Package console is the run's output on the terminal: the live progress
// line of each step and a line for every step, server and target event,
// in columns (package progress draws the line).
package console

import (
	"fmt"
	"io"

	"storebench/internal/event"
	"storebench/internal/progress"
	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/study"
)

// Console renders a run's events on w.
type Console struct{ bar *progress.Bar }

// New writes to w; tty selects in-place redrawing of the progress line.
func New(w io.Writer, tty bool) *Console { return &Console{bar: progress.New(w, tty)} }

// Println prints a line above the progress line (the CLI's own).
func (c *Console) Println(msg string) { c.bar.Println(msg) }

// Close does nothing: the writer is the caller's.
func (c *Console) Close() error { return nil }

// Handle prints one event.
func (c *Console) Handle(e event.Event) error {
	switch e := e.(type) {
	case event.TargetUnavailable:
		c.bar.Println(fmt.Sprintf("%-10s unavailable: %s", e.Target, e.Reason))
	case event.StepNA:
		c.bar.Println(fmt.Sprintf("%-10s %s %s N=%s: n/a: %s", e.Target, e.Step.Workload, e.Step.Phase, study.FormatCount(e.Step.N), e.Reason))
	case event.TargetFailed:
		if e.Stopped {
			c.bar.Println(fmt.Sprintf("%-10s %s", e.Target, e.Reason))
		} else {
			c.bar.Println(fmt.Sprintf("%-10s FAILED%s: %s", e.Target, e.How, e.Reason))
		}
	case event.ServerStarting:
		c.bar.Println(fmt.Sprintf("%-10s starting %s ...", e.Target, e.Title))
	case event.ServerReady:
		c.bar.Println(fmt.Sprintf("%-10s ready at %s in %.1fs (pid %d)", e.Target, e.URI, e.Took.Seconds(), e.PID))
	case event.ServerStopped:
		if e.Err != nil {
			c.bar.Println(fmt.Sprintf("%-10s stopping the server: %v", e.Target, e.Err))
		}
	case event.ServerLog:
		c.bar.Println(e.Line)
	case event.Notice:
		if e.Target == "" {
			c.bar.Println(e.Text)
		} else {
			c.bar.Println(fmt.Sprintf("%-10s %s", e.Target, e.Text))
		}
	case event.StepStarted:
		c.bar.Begin(label(e.Target, e.Step))
	case event.Tick:
		c.bar.Update(e.Done, e.Total)
	case event.StepFinished:
		c.bar.End(label(e.Target, e.Step) + "  " + outcome(e))
	}
	return nil
}

// label is a step's columns: target, phase, size, the other labels.
func label(target string, st event.Step) string {
	l := fmt.Sprintf("%-10s %-8s N=%-6s", target, st.Phase, study.FormatCount(st.N))
	if x := st.Labels.Extra(); x != "" {
		l += " " + x
	}
	return l
}

func outcome(e event.StepFinished) string {
	switch e.Outcome {
	case event.StepFailed:
		return "FAILED: " + e.Why
	case event.StepStopped:
		return "stopped: " + e.Why
	case event.StepPartial:
		return "stopped (partial): " + e.Why
	}
	return Summary(e.Result)
}

// Summary is a finished step's figures on one line: its time, throughput,
// p99, and what it verified.
func Summary(r *results.Step) string {
	s := fmt.Sprintf("%8.3fs  %s ops/s", r.Seconds, fmtRate(float64(r.Ops)/max(r.Seconds, 1e-9)))
	// Steps without per-operation timings (the token invariants) have no
	// percentile to print.
	if r.Latency.Count > 0 {
		s += "  p99 " + report.Latency(r.Latency.P99)
	}
	if r.Intended != nil {
		s += fmt.Sprintf("  (from intended start: p99 %s, %d late)", report.Latency(r.Intended.P99), r.Late)
	}
	if r.Verify.Checked > 0 {
		s += fmt.Sprintf("  verified %d", r.Verify.Checked)
	}
	return s
}

func fmtRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}
