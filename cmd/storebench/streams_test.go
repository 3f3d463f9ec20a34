package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

const streamsStudy = `name: streams
ladder: [3000]
concurrency: 4
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 0
      chains: {samples: 0}
      stress: {duration: 2s, rate: 400, read_fraction: 0.5, background: {task: compact, every: 300ms}}
      balance: {addresses: 0}
`

// The ledger stress phase on Pebble with a background compaction: in
// results.json the read and write streams add up to the phase, and the
// compaction's histogram counts exactly its runs.
func TestLedgerStressStreamsAndBackgroundInResults(t *testing.T) {
	out := t.TempDir()
	p := filepath.Join(t.TempDir(), "streams.yaml")
	if err := os.WriteFile(p, []byte(streamsStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "run", p, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := run.Targets[0].Find("ledger", "stress", -1)
	if st == nil {
		t.Fatalf("no stress step: %+v", run.Targets[0])
	}
	total := func(enc string) int64 {
		h, err := latency.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		return h.TotalCount()
	}
	if len(st.Streams) != 2 {
		t.Fatalf("streams: %+v", st.Streams)
	}
	var sum, hsum int64
	for _, s := range st.Streams {
		// At 200/s for 2 s: never more than the rate allows over the
		// step's measured time (a loaded machine stops it a little after
		// 2 s, with 404 ops once); fewer when the machine cannot keep up
		// (a loaded make test once made 171), but some.
		if s.Rate != 200 || s.Goroutines != 2 || s.Ops < 50 || float64(s.Ops) > math.Ceil(200*st.Seconds)+2 {
			t.Fatalf("stream %s: rate %v, %d goroutines, %d ops", s.Name, s.Rate, s.Goroutines, s.Ops)
		}
		if total(s.Hist) != s.Ops || total(s.HistIntended) != s.Ops {
			t.Fatalf("stream %s: %d ops, histograms hold %d and %d", s.Name, s.Ops, total(s.Hist), total(s.HistIntended))
		}
		sum += s.Ops
		hsum += total(s.Hist)
	}
	if sum != st.Ops || hsum != total(st.Hist) {
		t.Fatalf("streams sum to %d ops (%d in histograms), the phase did %d (%d)", sum, hsum, st.Ops, total(st.Hist))
	}
	if len(st.Background) != 1 {
		t.Fatalf("background: %+v", st.Background)
	}
	bg := st.Background[0]
	if bg.Name != "compact" || bg.Runs < 1 || total(bg.Hist) != bg.Runs {
		t.Fatalf("background compact: %d runs, histogram holds %d", bg.Runs, total(bg.Hist))
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "## Background tasks") || !strings.Contains(string(md), "| write | 2 | 200 |") {
		t.Fatalf("report.md lacks the stream and background tables:\n%s", md)
	}
}
