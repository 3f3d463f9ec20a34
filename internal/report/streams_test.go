package report

import (
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

func TestStreamsAndBackgroundRows(t *testing.T) {
	in := &latency.Summary{Count: 300, P99: 4_000_000}
	st := &results.Step{Workload: "ledger", Phase: "stress", N: 1000, Ops: 500,
		Streams: []results.Stream{
			{Name: "read", Goroutines: 2, Rate: 200, Ops: 200, Seconds: 1, Latency: latency.Summary{Count: 200, P50: 100_000, P99: 900_000, Max: 2_000_000}, Intended: in, Late: 7},
			{Name: "write", Goroutines: 6, Ops: 300, Seconds: 1.5, Latency: latency.Summary{Count: 300, P50: 3_000_000}},
		},
		Background: []results.Background{{Name: "compact", EverySeconds: 5, Runs: 3, BusySeconds: 1.2, Latency: latency.Summary{Count: 3, P50: 400_000_000}}},
	}
	run := &results.Run{Study: "s", Ladder: []int64{1000}, Targets: []*results.Target{{Name: "pebble", Title: "Pebble", Status: "ok", Steps: []*results.Step{st}}}}
	md := Markdown(run)
	for _, want := range []string{
		"## Streams",
		// A stream's goroutines are called so: "worker" is a process
		// (the Load workers section), never a goroutine.
		"| target | step | stream | goroutines | offered /s |",
		"| Pebble | ledger stress, N=1e3 | read | 2 | 200 | 200 | 200 |",
		"| Pebble | ledger stress, N=1e3 | write | 6 | closed loop | 200 | 300 |",
		"## Background tasks",
		"| Pebble | ledger stress, N=1e3 | compact |",
		"| 5.00 s | 3 | 1.20 s | 400.00 ms |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md[strings.Index(md, "## Streams"):])
		}
	}
	run.Targets[0].Steps[0].Streams, run.Targets[0].Steps[0].Background = nil, nil
	if md := Markdown(run); strings.Contains(md, "## Streams") || strings.Contains(md, "## Background tasks") {
		t.Error("tables printed for a step without streams or tasks")
	}
}
