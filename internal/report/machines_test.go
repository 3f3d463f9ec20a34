package report

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// TestMachinesTablesRender: the knee and the vCPU tables of the Machines
// section say what package shapes found (its tests recompute the figures).
func TestMachinesTablesRender(t *testing.T) {
	knee := func(machine string, ops int64, ratio float64) *results.Target {
		s := &results.Step{Workload: "tokens", Phase: "checkacc", N: 1e6, Ops: ops, Seconds: 10,
			Metrics: map[string]float64{"machine_cache_budget_bytes": ratio * 1e9, "machine_data_bytes_at_start": 1e9}}
		return &results.Target{Name: "moeingads@" + machine, Machine: machine, Steps: []*results.Step{s}}
	}
	var b strings.Builder
	knees(&b, []*results.Target{knee("a", 1000, 0.23), knee("b", 10000, 0.73)})
	if !strings.Contains(b.String(), "above 0.23") || !strings.Contains(b.String(), "0.23: 100 ops/s; 0.73: 1000 ops/s") {
		t.Errorf("knee table:\n%s", b.String())
	}
	cpu := func(machine string, ops int64) *results.Target {
		return &results.Target{Name: "pebble@" + machine, Machine: machine,
			Steps: []*results.Step{{Workload: "ycsb", Phase: "c", N: 1e5, Ops: ops, Seconds: 10}}}
	}
	b.Reset()
	cpuScaling(&b, []*results.Target{cpu("cpus=0.5", 5000), cpu("cpus=1", 9000)})
	if !strings.Contains(b.String(), "0.5: 500 ops/s (1.00); 1: 900 ops/s (0.90)") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestCostsWithNothingMeasured: a run whose targets measured nothing says
// so under "What it costs" rather than an empty table.
func TestCostsWithNothingMeasured(t *testing.T) {
	var b strings.Builder
	Costs(&b, &results.Projection{Catalog: "aws", Currency: "USD"})
	if !strings.Contains(b.String(), "nothing is projected") || strings.Contains(b.String(), "| target |") {
		t.Errorf("costs of nothing:\n%s", b.String())
	}
}
