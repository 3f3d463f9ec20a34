package ledger

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
)

const streamStudy = `
name: t
ladder: [2000]
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 200
      selects: 0
      chains: {samples: 0}
      stress: {duration: 1500ms, rate: 800, read_fraction: 0.25, goroutines: 4, background: {task: compact, every: 200ms}}
      balance: {addresses: 0}
`

// runStress inserts the database and runs the stress step of src on
// Pebble; the result comes back through JSON, as results.json holds it.
func runStress(t *testing.T, src string) *results.Step {
	t.Helper()
	steps := plan(t, src)
	store := openPebble(t)
	var out *results.Step
	for _, st := range steps {
		res, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, st)
		if err != nil {
			t.Fatalf("%s: %v", st.Phase, err)
		}
		if st.Phase == "stress" {
			b, _ := json.Marshal(res)
			out = new(results.Step)
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if out == nil {
		t.Fatal("no stress step planned")
	}
	return out
}

func count(t *testing.T, enc string) int64 {
	t.Helper()
	h, err := latency.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	return h.TotalCount()
}

func TestStressStreamsAndBackgroundCompaction(t *testing.T) {
	res := runStress(t, streamStudy)
	if len(res.Streams) != 2 || res.Streams[0].Name != "read" || res.Streams[1].Name != "write" {
		t.Fatalf("streams: %+v", res.Streams)
	}
	// Rates: 0.25 × 800 reads/s and the rest writes, on 1 and 3 goroutines.
	for i, want := range []struct {
		rate       float64
		goroutines int
	}{{200, 1}, {600, 3}} {
		s := res.Streams[i]
		if s.Rate != want.rate || s.Goroutines != want.goroutines {
			t.Fatalf("%s: rate %v on %d goroutines, want %v on %d", s.Name, s.Rate, s.Goroutines, want.rate, want.goroutines)
		}
		if got := float64(s.Ops) / s.Seconds; math.Abs(got-want.rate) > 0.15*want.rate {
			t.Fatalf("%s: achieved %.0f/s of %.0f/s", s.Name, got, want.rate)
		}
		if s.Intended == nil || count(t, s.Hist) != s.Ops || count(t, s.HistIntended) != s.Ops || s.Latency.Count != s.Ops {
			t.Fatalf("%s: ops %d, histograms %d and %d", s.Name, s.Ops, count(t, s.Hist), count(t, s.HistIntended))
		}
		var series int64
		for _, tk := range s.Series {
			series += tk.Ops
		}
		if series != s.Ops {
			t.Fatalf("%s: series sums to %d, %d ops", s.Name, series, s.Ops)
		}
	}
	if sum := res.Streams[0].Ops + res.Streams[1].Ops; sum != res.Ops || count(t, res.Hist) != res.Ops || count(t, res.HistIntended) != res.Ops {
		t.Fatalf("streams sum to %d, phase ops %d, phase histograms %d/%d", sum, res.Ops, count(t, res.Hist), count(t, res.HistIntended))
	}
	if res.Rate != 800 || int64(res.Metrics["reads"]) != res.Streams[0].Ops || res.Verify.Checked != res.Streams[0].Ops {
		t.Fatalf("rate %v, reads %v, checked %d", res.Rate, res.Metrics["reads"], res.Verify.Checked)
	}
	if len(res.Background) != 1 {
		t.Fatalf("background: %+v", res.Background)
	}
	bg := res.Background[0]
	// Every 200ms over 1.5s: up to 7 compactions, fewer if some take long.
	if bg.Name != "compact" || bg.EverySeconds != 0.2 || bg.Runs < 2 || bg.Runs > 7 {
		t.Fatalf("background compact: %+v", bg)
	}
	if count(t, bg.Hist) != bg.Runs || bg.Latency.Count != bg.Runs || bg.BusySeconds <= 0 {
		t.Fatalf("background: %d runs, histogram holds %d", bg.Runs, count(t, bg.Hist))
	}
}

func TestStressBackgroundScanAndClosedLoop(t *testing.T) {
	// Closed loop: one mixed stream, classed; a back-to-back verified scan
	// of the whole main chain beside it.
	src := strings.Replace(streamStudy, "rate: 800, read_fraction: 0.25, goroutines: 4, background: {task: compact, every: 200ms}",
		"rate: 0, read_fraction: 0.5, goroutines: 2, background: {task: scan}", 1)
	src = strings.Replace(src, "1500ms", "500ms", 1)
	res := runStress(t, src)
	if len(res.Streams) != 0 || res.Intended != nil {
		t.Fatalf("closed loop: streams %+v, intended %v", res.Streams, res.Intended)
	}
	if r, w := res.ByOp["READ"].Count, res.ByOp["WRITE"].Count; r == 0 || w == 0 || r+w != res.Ops {
		t.Fatalf("classes READ %d + WRITE %d, ops %d", r, w, res.Ops)
	}
	if len(res.Background) != 1 || res.Background[0].Runs < 1 || count(t, res.Background[0].Hist) != res.Background[0].Runs {
		t.Fatalf("background scan: %+v", res.Background)
	}
}

func TestStressBackgroundParams(t *testing.T) {
	src := strings.Replace(streamStudy, "task: compact", "task: vacuum", 1)
	s, _ := study.Parse("t.yaml", []byte(src))
	_, err := Ledger{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
	if err == nil || !strings.Contains(err.Error(), "t.yaml:11: workloads.ledger.params.stress.background.task: \"vacuum\": want one of compact, scan, sync") {
		t.Fatalf("got %v", err)
	}
}

// One load goroutine cannot be two streams: at goroutines 1 the open-loop
// stress is one mixed stream at the whole rate, reads and writes classed
// apart (a sweep's concurrency=1 level crashed the worker before).
func TestStressOnOneGoroutineIsOneMixedStream(t *testing.T) {
	src := strings.Replace(streamStudy, "goroutines: 4, background: {task: compact, every: 200ms}", "goroutines: 1", 1)
	res := runStress(t, src)
	if len(res.Streams) != 0 {
		t.Fatalf("%d streams on one goroutine, want the mixed stream", len(res.Streams))
	}
	reads, writes := res.ByOp["READ"].Count, res.ByOp["WRITE"].Count
	if reads == 0 || writes == 0 || reads+writes != res.Ops {
		t.Fatalf("reads %d + writes %d, want both and their sum %d", reads, writes, res.Ops)
	}
	if res.Rate != 800 || res.Intended == nil {
		t.Fatalf("rate %v, intended %v: want the open loop at 800/s", res.Rate, res.Intended)
	}
}
