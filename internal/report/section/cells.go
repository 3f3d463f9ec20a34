package section

import (
	"fmt"

	"storebench/internal/results"
)

// Missing is the cell of a step a target has no figure for: "n/a" with
// the reason when it cannot run the step (it lacks a capability the step
// requires), "not run" when the run was interrupted before it, "—" when
// it simply did not get there (stopped, failed).
func Missing(t *results.Target, workload, phase string, n int64) string {
	if why := t.NotApplicable(workload, phase, n); why != "" {
		return "n/a: " + why
	}
	if t.NotRunReason(workload, phase, n) != "" {
		return "not done: interrupted"
	}
	return "—"
}

// TakesPart reports whether a target belongs in a workload's tables: it
// ran a step of it, or some of its steps are n/a.
func TakesPart(t *results.Target, workload string) bool {
	for _, s := range t.Steps {
		if s.Workload == workload {
			return true
		}
	}
	return t.NotApplicable(workload, "", -1) != ""
}

// Participants are the run's targets that take part in a workload, in
// study order.
func Participants(run *results.Run, workload string) []*results.Target {
	var ts []*results.Target
	for _, t := range run.Targets {
		if TakesPart(t, workload) {
			ts = append(ts, t)
		}
	}
	return ts
}

// NARow is a table row of a target that cannot run a workload: its name,
// then "n/a: reason" and "n/a" in the other cells.
func NARow(title, why string, cells int) []string {
	r := []string{title, "n/a: " + why}
	for len(r) < cells+1 {
		r = append(r, "n/a")
	}
	return r
}

// SecondsCell is a step's timed seconds, saying so when it was cut short.
func SecondsCell(s *results.Step) string {
	if s == nil {
		return "—"
	}
	out := Secs(s.Seconds)
	if s.Partial || s.Error != "" {
		out += " (stopped)"
	}
	return out
}

// DiskCell is the disk the target's files take after a step, in MiB.
func DiskCell(s *results.Step) string {
	if s == nil {
		return "—"
	}
	return MiB(s.Footprint().DiskAllocated)
}

// LatencyCell is a step's p50 / p99 service time.
func LatencyCell(s *results.Step) string {
	if s == nil || s.Latency.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%s / %s", Latency(s.Latency.P50), Latency(s.Latency.P99))
}

// PeakRSSCell is the highest resident memory of the target's process seen
// by the given steps: the high-water mark when the process reports one,
// else the highest sample.
func PeakRSSCell(steps ...*results.Step) string {
	var peak int64
	for _, s := range steps {
		if s == nil {
			continue
		}
		f := s.Footprint()
		peak = max(peak, f.After.PeakRSSBytes, StepRSS(s))
	}
	if peak == 0 {
		return "—"
	}
	return MiB(peak)
}

// StepRSS is the highest memory sampled during a step (the per-second
// series and the snapshots around it): the seed's memory per task.
func StepRSS(s *results.Step) int64 {
	f := s.Footprint()
	m := max(Mem(f.Before), Mem(f.After))
	if s.ServerResources == nil {
		for _, t := range s.Series {
			m = max(m, t.RSSBytes)
		}
	}
	return m
}
