package geo

import (
	"testing"
	"time"

	"storebench/internal/results"
)

// A tick counts as during GC when a pass covers half of it; a partial
// tick at the end of the ingest (a few milliseconds, no operation) is not
// a sample of the rate at all: it made Pebble's "QPS during GC" 0 when
// its 0.07 s passes covered nothing else.
func TestSplitRateIgnoresPartialTicks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ticks := []results.Tick{{T: 1, Ops: 100}, {T: 2, Ops: 100}, {T: 3, Ops: 40}, {T: 3.05, Ops: 0}}
	// A short pass inside tick 2, one covering the end, one covering tick 3.
	during, outside := splitRate(ticks, t0, []pass{{start: at(1.2), end: at(1.3)}, {start: at(3.0), end: at(3.05)}})
	if during != -1 || outside != 80 {
		t.Fatalf("short passes: during %v, outside %v; want -1 (none separable), 80", during, outside)
	}
	during, outside = splitRate(ticks, t0, []pass{{start: at(2.1), end: at(2.9)}})
	if during != 40 || outside != 100 {
		t.Fatalf("a pass over tick 3: during %v, outside %v; want 40, 100", during, outside)
	}
}
