package report

import (
	"fmt"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
)

// missing is the cell of a step a target has no figure for: "n/a" with
// the reason, or "—" when it simply did not get there.
func missing(t *results.Target, workload, phase string, n int64) string {
	return section.Missing(t, workload, phase, n)
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
