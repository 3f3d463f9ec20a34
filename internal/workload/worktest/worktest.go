// Package worktest helps workload tests: plan a workload from a study's
// text as `storebench run` would.
package worktest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"storebench/internal/study"
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
	raw, err := w.DecodeParams(s, s.Workloads[0])
	if err != nil {
		t.Fatal(err)
	}
	steps, err := w.Plan(s, raw)
	if err != nil {
		t.Fatal(err)
	}
	return steps
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
