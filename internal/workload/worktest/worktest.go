// Package worktest helps workload tests: plan a workload from a study's
// text as `storebench run` would.
package worktest

import (
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
