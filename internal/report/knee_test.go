package report

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

func kneeStep(ops int64, secs, budget, data float64) *results.Step {
	return &results.Step{Workload: "tokens", Phase: "checkacc", N: 1e6, Ops: ops, Seconds: secs,
		Metrics: map[string]float64{"machine_cache_budget_bytes": budget, "machine_data_bytes_at_start": data}}
}

// TestKneeFromTheShapes recomputes the knee from each shape's step: the
// smallest memory-to-data ratio from which every larger one is within 20%
// of the least limited shape's throughput; a dip below that, then a
// recovery, does not make a knee below the dip.
func TestKneeFromTheShapes(t *testing.T) {
	mk := func(machine string, ops int64, ratio float64) *results.Target {
		return &results.Target{Name: "moeingads@" + machine, Machine: machine, Steps: []*results.Step{kneeStep(ops, 10, ratio*1e9, 1e9)}}
	}
	ts := []*results.Target{
		mk("a", 1000, 0.05), // 100 ops/s
		mk("b", 8500, 0.1),  // 850: within 20% of 1000
		mk("c", 7000, 0.25), // 700: not within
		mk("d", 9000, 0.5),  // 900
		mk("e", 10000, 1),   // 1000, the reference
	}
	ks := Knees(ts)
	if len(ks) != 1 {
		t.Fatalf("%d knees, want 1", len(ks))
	}
	k := ks[0]
	if !k.Found || k.Ratio != 0.5 || k.Target != "moeingads" || len(k.Points) != 5 {
		t.Fatalf("knee %+v: want 0.5 (0.25 fell 30%% below the reference, so 0.1's 850 does not count)", k)
	}
	for i, p := range k.Points {
		if want := []float64{100, 850, 700, 900, 1000}[i]; p.OpsPerS != want {
			t.Errorf("point %d: %.0f ops/s, want %.0f", i, p.OpsPerS, want)
		}
	}
	// Every smaller shape fell: no knee below the reference.
	ks = Knees([]*results.Target{mk("a", 1000, 0.23), mk("b", 8000*10/8, 0.73)})
	if len(ks) != 1 || ks[0].Found {
		t.Fatalf("%+v: want no knee below 0.73", ks)
	}
	var b strings.Builder
	knees(&b, []*results.Target{mk("a", 1000, 0.23), mk("b", 10000, 0.73)})
	if !strings.Contains(b.String(), "above 0.23") || !strings.Contains(b.String(), "0.23: 100 ops/s; 0.73: 1000 ops/s") {
		t.Errorf("knee table:\n%s", b.String())
	}
}
