package report

import (
	"fmt"
	"strings"

	"storebench/internal/results"
)

// missing is the cell of a step a target has no figure for: "n/a" with
// the reason when it cannot run the step (it lacks a capability the step
// requires), "—" when it simply did not get there (stopped, failed).
func missing(t *results.Target, workload, phase string, n int64) string {
	if why := t.NotApplicable(workload, phase, n); why != "" {
		return "n/a: " + why
	}
	return "—"
}

// takesPart reports whether a target belongs in a workload's tables: it
// ran a step of it, or some of its steps are n/a.
func takesPart(t *results.Target, workload string) bool {
	for _, s := range t.Steps {
		if s.Workload == workload {
			return true
		}
	}
	return t.NotApplicable(workload, "", -1) != ""
}

// naRow is a table row of a target that cannot run a workload: its name,
// then "n/a: reason" and "n/a" in the other cells.
func naRow(title, why string, cells int) []string {
	r := []string{title, "n/a: " + why}
	for len(r) < cells+1 {
		r = append(r, "n/a")
	}
	return r
}

// naSummary lists a target's n/a phases once each, with the reason: "n/a:
// ycsb e (no ordered scans)".
func naSummary(t *results.Target) string {
	var parts []string
	for _, x := range t.NA {
		p := fmt.Sprintf("%s %s (%s)", x.Workload, x.Phase, x.Reason)
		if !contains(parts, p) {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "n/a: " + strings.Join(parts, ", ")
}
