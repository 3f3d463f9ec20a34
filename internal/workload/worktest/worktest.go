// Package worktest helps workload tests: plan a workload from a study's
// text, or estimate it, as `storebench run` would.
package worktest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
)

// Plan parses a study (file name t.yaml in errors), applies sets as
// --set would (workload.param=value), decodes the params of its first
// workload with w and returns w's steps.
func Plan(t *testing.T, w workload.Workload, src string, sets ...string) []workload.Step {
	t.Helper()
	s, err := study.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) > 0 {
		if err := s.Apply(study.Override{Set: sets}); err != nil {
			t.Fatal(err)
		}
	}
	pl := sweep.PlanningOf(s)
	raw, err := w.DecodeParams(pl, s.Workloads[0])
	if err != nil {
		t.Fatal(err)
	}
	steps, err := w.Plan(pl, raw)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

// Estimate is w's estimate (w a workload.Estimator) of its entry (named
// w.Name()) in the built-in study name under override o.
func Estimate(t *testing.T, w workload.Workload, name string, o study.Override) workload.Estimate {
	t.Helper()
	s, err := study.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(o); err != nil {
		t.Fatal(err)
	}
	for _, en := range s.Workloads {
		if en.Name == w.Name() {
			return EstimateEntry(t, w, sweep.PlanningOf(s), en)
		}
	}
	t.Fatalf("%s has no %s entry", s.Name, w.Name())
	return workload.Estimate{}
}

// EstimateEntry is w's estimate (w a workload.Estimator) of entry en of a
// study whose workloads plan from s, as coordinator.Estimate asks for it:
// from the entry's planning and params as sweep.PlanEntry gives them.
func EstimateEntry(t *testing.T, w workload.Workload, s workload.Planning, en study.Entry) workload.Estimate {
	t.Helper()
	est, ok := w.(workload.Estimator)
	if !ok {
		t.Fatalf("%s does not estimate", w.Name())
	}
	pl, err := sweep.PlanEntry(s, en, w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := est.Estimate(pl.Planning, en, pl.Params)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// RandomBytes returns n bytes from rng (a test's data: payloads, fields,
// addresses).
func RandomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(b[i:], w[:])
	}
	return b
}
