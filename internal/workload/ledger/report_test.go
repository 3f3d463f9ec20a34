package ledger

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// A results file read back with no ladder (hand-edited, or cut short)
// still renders: the largest size is the largest a step reached, and
// nothing panics on bad input.
func TestReportOfARunWithoutLadder(t *testing.T) {
	run := &results.Run{Study: "x", Targets: []*results.Target{{Name: "pebble", Title: "Pebble", Status: "ok",
		Steps: []*results.Step{
			{Workload: "ledger", Phase: "insert", N: 1000, Seconds: 0.5, Ops: 1000},
			{Workload: "ledger", Phase: "stress", N: 1000, Seconds: 1, Ops: 2000},
		}}}}
	var b strings.Builder
	ledger(&b, run)
	if !strings.Contains(b.String(), "Pebble") {
		t.Fatalf("no table for the target:\n%s", b.String())
	}
}
