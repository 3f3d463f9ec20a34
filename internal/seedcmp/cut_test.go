package seedcmp

import (
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

// A step stopped at a phase budget stands for less than its N: its
// totals are left out, and so is every figure of a step stopped inside an
// operation or run on a database its cut insert left smaller. Whole
// operations' latencies before the budget still count.
func TestCutStepsAreLeftOut(t *testing.T) {
	step := func(phase string, n int64, facts map[string]string) *results.Step {
		return &results.Step{Workload: "ledger", Phase: phase, N: n, Seconds: 2, Ops: 5,
			Latency: latency.Summary{Count: 5, Max: 1000}, Facts: facts}
	}
	tr := &results.Target{Steps: []*results.Step{
		step("insert", 10, nil),
		step("insert", 100, map[string]string{"cut": "stopped"}),
		step("select", 10, map[string]string{"cut": "stopped"}),
		step("select", 100, map[string]string{"cut_db": "smaller"}),
		step("chain", 1000, map[string]string{"cut": "stopped", "cut_inside_op": "yes"}),
	}}
	for _, c := range []struct {
		phase, value string
		want         []float64 // the sizes kept
	}{
		{"insert", "seconds", []float64{10}},     // a cut insert's seconds are of part of it
		{"select", "latency.max", []float64{10}}, // whole selects count; a smaller database does not
		{"chain", "latency.max", nil},            // a chain read stopped inside is no whole read
	} {
		got, _ := values(&results.Run{}, tr, &Ours{Workload: "ledger", Phase: c.phase, Size: "n", Value: c.value}, (&Ours{Value: c.value}).unit(), false)
		if len(got) != len(c.want) {
			t.Errorf("%s %s: kept %v, want sizes %v", c.phase, c.value, got, c.want)
			continue
		}
		for _, n := range c.want {
			if _, ok := got[n]; !ok {
				t.Errorf("%s %s: size %v left out", c.phase, c.value, n)
			}
		}
	}
}
