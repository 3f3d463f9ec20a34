package coordinator

import (
	"testing"

	"storebench/internal/results"
)

// A target that failed is never hidden by a time limit that expired
// later: the run stays failed and says both.
func TestRunStatusKeepsAFailureWhenATimeLimitCutsTheRun(t *testing.T) {
	ts := []*results.Target{
		{Name: "pebble", Status: "failed", Reason: "verification failed in phase select"},
		{Name: "bbolt", Status: "partial", Reason: "stopped: study time limit reached"},
		{Name: "lmdb", Status: "skipped", Reason: "study time limit reached"},
	}
	st, why := runStatus(ts, true, false, "study time limit reached")
	if st != "failed" || why != "target pebble failed: see its reason; and study time limit reached" {
		t.Fatalf("%s: %s", st, why)
	}
	st, why = runStatus(ts[1:], true, false, "study time limit reached")
	if st != "partial" || why != "study time limit reached" {
		t.Fatalf("%s: %s", st, why)
	}
	st, _ = runStatus([]*results.Target{{Name: "pebble", Status: "ok"}}, false, false, "")
	if st != "complete" {
		t.Fatalf("%s", st)
	}
	// The user's Ctrl-C is "interrupted", not a limit's "partial".
	st, why = runStatus(ts[1:], true, true, "interrupted by the user")
	if st != "interrupted" || why != "interrupted by the user" {
		t.Fatalf("%s: %s", st, why)
	}
}
