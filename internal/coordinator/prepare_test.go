package coordinator

import (
	"strings"
	"testing"

	"storebench/internal/study"
	_ "storebench/internal/target/mpt"
	_ "storebench/internal/workload/ledger"
)

// An authenticated store asked for the ledger is refused when the run is
// prepared, with the target's own reason, not in its worker.
func TestPrepareRefusesWhatATargetCannotRun(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	s.Targets = []study.Target{{Name: "mpt"}}
	_, err = Prepare(s)
	if err == nil || !strings.Contains(err.Error(), "mpt cannot run the ledger workload: an authenticated store") {
		t.Fatalf("Prepare: %v", err)
	}
}
