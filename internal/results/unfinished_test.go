package results

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"storebench/internal/measure/procstat"
)

// A results.json still "running" was left by a storebench that never
// finished: it reads as interrupted, the target under way interrupted with
// the planned steps it did not finish (not those it ran, those n/a for it
// or a search it began), the targets never started skipped.
func TestDecodeReadsARunningFileAsInterrupted(t *testing.T) {
	src := `{"schema_version": 3, "study": "ledger", "status": "running", "started": "2026-11-25T10:00:00Z",
 "plan": {"targets": ["lmdb", "bbolt", "pebble"], "steps": [
   {"labels": {"workload": "ledger", "phase": "insert", "n": "10"}},
   {"labels": {"workload": "ledger", "phase": "scan", "n": "10"}},
   {"labels": {"workload": "ledger", "phase": "stress", "n": "10"}},
   {"labels": {"workload": "ledger", "phase": "stress", "n": "10"}, "rate_search": true},
   {"labels": {"workload": "ledger", "phase": "insert", "n": "1000"}},
   {"labels": {"workload": "ledger", "phase": "stress", "n": "1000"}, "rate_search": true}]},
 "targets": [
  {"name": "lmdb", "status": "ok", "steps": []},
  {"name": "bbolt", "status": "running",
   "steps": [{"workload": "ledger", "phase": "insert", "n": 10}, {"workload": "ledger", "phase": "stress", "n": 10},
             {"workload": "ledger", "phase": "stress", "n": 10, "labels": {"workload": "ledger", "phase": "stress", "n": "10", "rate": "100", "trial": "1"}}],
   "not_applicable": [{"workload": "ledger", "phase": "scan", "n": 10, "status": "n/a", "reason": "no ordered scans"}],
   "rate_searches": [{"workload": "ledger", "phase": "stress", "n": 10, "labels": {"workload": "ledger", "phase": "stress", "n": "10"}, "done": false}]},
  {"name": "pebble", "status": "pending"}]}`
	r, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusInterrupted || r.Reason != NeverFinished {
		t.Fatalf("run: %s (%s)", r.Status, r.Reason)
	}
	lmdb, bb, pb := r.Targets[0], r.Targets[1], r.Targets[2]
	if lmdb.Status != "ok" || len(lmdb.NotRun) != 0 {
		t.Errorf("lmdb: %s, %v", lmdb.Status, lmdb.NotRun)
	}
	if pb.Status != "skipped" || !strings.Contains(pb.Reason, "never ran") {
		t.Errorf("pebble: %s (%s)", pb.Status, pb.Reason)
	}
	if bb.Status != StatusInterrupted || len(bb.NotRun) != 2 || bb.NotRunReason("ledger", "insert", 1000) == "" || bb.NotRunReason("ledger", "stress", 1000) == "" {
		t.Fatalf("bbolt: %s (%s), not run %v", bb.Status, bb.Reason, bb.NotRun)
	}
	if !strings.Contains(bb.Reason, "did not finish 2 planned step(s): ledger insert N=1e3, ledger stress N=1e3 (rate search)") {
		t.Errorf("bbolt's reason: %s", bb.Reason)
	}
}

// Version 2 files are read in version 3's terms: a run killed before it
// finished was written "complete" with no finish time; a run the user
// stopped was "partial".
func TestDecodeUpgradesVersion2Statuses(t *testing.T) {
	for src, want := range map[string]string{
		`{"schema_version": 2, "study": "ledger", "status": "complete", "finished": "0001-01-01T00:00:00Z", "targets": [{"name": "lmdb", "status": "ok"}]}`:                      StatusInterrupted,
		`{"schema_version": 2, "study": "ledger", "status": "partial", "reason": "interrupted by the user", "finished": "2026-11-25T10:00:00Z", "targets": [{"name": "lmdb"}]}`:  StatusInterrupted,
		`{"schema_version": 2, "study": "ledger", "status": "partial", "reason": "study time limit reached", "finished": "2026-11-25T10:00:00Z", "targets": [{"name": "lmdb"}]}`: "partial",
		`{"schema_version": 2, "study": "ledger", "status": "complete", "finished": "2026-11-25T10:00:00Z", "targets": [{"name": "lmdb"}]}`:                                      "complete",
	} {
		r, err := Decode([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != want || r.SchemaVersion != SchemaVersion {
			t.Errorf("%s\n: %s (version %d), want %s", src, r.Status, r.SchemaVersion, want)
		}
	}
}

// A file that says "running" whose process is alive is a run under way,
// and reads so; the same file of a process that is gone is interrupted.
func TestDecodeTellsARunUnderWayFromADeadOne(t *testing.T) {
	host, _ := os.Hostname()
	start, err := procstat.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	src := `{"schema_version": 3, "study": "ledger", "status": "running", "host": {"hostname": %q}, "pid": %d, "pid_start": %d,
 "targets": [{"name": "lmdb", "status": "running"}]}`
	r, err := Decode([]byte(fmt.Sprintf(src, host, os.Getpid(), start)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusRunning || r.Targets[0].Status != StatusRunning {
		t.Errorf("a run under way: %s, target %s", r.Status, r.Targets[0].Status)
	}
	// Another process now has the PID (another start time).
	r, err = Decode([]byte(fmt.Sprintf(src, host, os.Getpid(), start+1)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusInterrupted || r.Targets[0].Status != StatusInterrupted {
		t.Errorf("a run whose process is gone: %s, target %s", r.Status, r.Targets[0].Status)
	}
}
