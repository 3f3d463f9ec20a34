package http

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload/worktest"
)

// web-oltp at --scale seed, per target: ab -n 500 without and with
// keep-alive, each at 100 connections (the entry's) and 500 (its sweep):
// 4 steps of 500 requests at the slowest kept rate.
func TestEstimateOfWebHTTPSeedScale(t *testing.T) {
	e := worktest.Estimate(t, HTTP{}, "web-oltp", study.Override{Scale: "seed"})
	if want := 4 * 500 * time.Second / slowRate; e.Time != want {
		t.Errorf("time %s, want %s (%s)", e.Time, want, e.How)
	}
	if e.DiskBytes != 0 {
		t.Errorf("disk %g, want none", e.DiskBytes)
	}
	if w := "4 step(s) (close, keepalive at 100, 500 connections)"; !strings.Contains(e.How, w) {
		t.Errorf("How %q lacks %q", e.How, w)
	}
	// A duration bounds every step: 4 of them.
	e = worktest.Estimate(t, HTTP{}, "web-oltp", study.Override{Scale: "seed", Set: []string{"http.duration=30s"}})
	if want := 4 * 30 * time.Second; e.Time != want {
		t.Errorf("duration: time %s, want %s (%s)", e.Time, want, e.How)
	}
	// Many requests on many connections with a short timeout: the rounds
	// of timeouts bound each step below the rate's figure (1e6 requests
	// on 100 connections in 1e4 rounds of 4 x 1 ms; on 500, 2000 rounds).
	e = worktest.Estimate(t, HTTP{}, "web-oltp", study.Override{Scale: "seed", Set: []string{"http.requests=1e6", "http.timeout=1ms"}})
	if want := 2 * (10000 + 2000) * 4 * time.Millisecond; e.Time != want || !strings.Contains(e.How, "4 step(s) of them bound instead") {
		t.Errorf("timeout bound: time %s, want %s (%s)", e.Time, want, e.How)
	}
}
