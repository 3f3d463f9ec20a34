package console

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"storebench/internal/event"
	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

// The console prints each event as the coordinator printed it before it
// emitted events: the same columns, the same words, secrets masked.
func TestConsoleLines(t *testing.T) {
	var b bytes.Buffer
	c := New(&b, false)
	chain := event.Step{Workload: "ledger", Phase: "chain", N: 100000, Labels: results.Labels{"workload": "ledger", "phase": "chain", "n": "100000", "length": "10"}}
	insert := event.Step{Workload: "ledger", Phase: "insert", N: 10}
	for _, e := range []event.Event{
		event.TargetUnavailable{Target: "rocksdb", Reason: "built without the rocksdb tag"},
		event.StepNA{Target: "redis", Step: event.Step{Workload: "ycsb", Phase: "e", N: 1000}, Reason: "needs ordered scans"},
		event.ServerStarting{Target: "postgres", Title: "PostgreSQL 16"},
		event.ServerReady{Target: "postgres", URI: "postgres://bench:s3cret@127.0.0.1:5432/db", Took: 1500 * time.Millisecond, PID: 42},
		event.ServerLog{Line: "initdb: done"},
		event.Notice{Target: "postgres", Text: "warning: N=1e6 may need ~2GiB"},
		event.Notice{Text: "warning: hdr log: disk full"},
		event.StepStarted{Target: "pebble", Step: chain},
		event.StepFinished{Target: "pebble", Step: chain, Outcome: event.StepOK, Result: &results.Step{Seconds: 2, Ops: 3000,
			Latency: latency.Summary{Count: 3000, P99: 1500000}, Verify: results.Verify{Checked: 10}}},
		event.StepStarted{Target: "pebble", Step: insert},
		event.StepFinished{Target: "pebble", Step: insert, Outcome: event.StepFailed, Why: "disk full"},
		event.StepFinished{Target: "pebble", Step: insert, Outcome: event.StepStopped, Why: "interrupted by the user"},
		event.StepFinished{Target: "pebble", Step: insert, Outcome: event.StepPartial, Why: "study time limit reached"},
		event.TargetFailed{Target: "mysql", How: " to open", Reason: "connection refused"},
		event.TargetFailed{Target: "mysql", Reason: "stopped before its first step: interrupted by the user", Stopped: true},
		event.ServerStopped{Target: "postgres"},
		event.ServerStopped{Target: "postgres", Err: errors.New("still running after 30s")},
	} {
		if err := c.Handle(e); err != nil {
			t.Fatal(err)
		}
	}
	want := `rocksdb    unavailable: built without the rocksdb tag
redis      ycsb e N=1e3: n/a: needs ordered scans
postgres   starting PostgreSQL 16 ...
postgres   ready at postgres://bench:xxxxx@127.0.0.1:5432/db in 1.5s (pid 42)
initdb: done
postgres   warning: N=1e6 may need ~2GiB
warning: hdr log: disk full
pebble     chain    N=1e5    length=10     2.000s  1.5k ops/s  p99 1.50 ms  verified 10
pebble     insert   N=10      FAILED: disk full
pebble     insert   N=10      stopped: interrupted by the user
pebble     insert   N=10      stopped (partial): study time limit reached
mysql      FAILED to open: connection refused
mysql      stopped before its first step: interrupted by the user
postgres   stopping the server: still running after 30s
`
	if b.String() != want {
		t.Errorf("console:\n%s\nwant:\n%s", b.String(), want)
	}
}
