package tokens

import (
	"strings"
	"testing"

	"storebench/internal/measure/procstat"
	"storebench/internal/report"
	"storebench/internal/results"
)

func reportStep(workload, phase string, n int64, seconds float64, m map[string]float64) *results.Step {
	s := &results.Step{Workload: workload, Phase: phase, N: n, Seconds: seconds, Metrics: m}
	s.Resources.After = procstat.Snapshot{RSSBytes: 300 << 20, PeakRSSBytes: 400 << 20}
	s.Resources.DiskAllocated = 2886 << 20
	s.Series = []results.Tick{{RSSBytes: 350 << 20}}
	return s
}

// The tokens tables: tasks as rows, targets as columns; TPS, memory per
// task, invariants with violations in bold.
func TestTokensTables(t *testing.T) {
	n := int64(1000)
	inv := reportStep("tokens", "invariants", n, 1, map[string]float64{"tokens": 101, "accounts": 1000, "gas_burned": 20, "sequence_mismatches": 3})
	run := &results.Run{Study: "tokens", Ladder: []int64{n}, Targets: []*results.Target{{Title: "IAVL", Status: "failed", Steps: []*results.Step{
		reportStep("tokens", "genacc", n, 5402, map[string]float64{"blocks": 1, "block_size": 20000}),
		reportStep("tokens", "checkacc", n, 2477.5, nil),
		reportStep("tokens", "runtx", n, 154, map[string]float64{"blocks": 500, "block_size": 32768, "tps": 106387, "transfers": 2, "gas_burned": 20, "rejected_insufficient": 1}),
		inv,
	}}}}
	md := report.Markdown(run)
	for _, want := range []string{
		"| Task (s) | IAVL |", "| Genacc | 5402 |", "| Checkacc | 2478 |", "| Runtx | 154 |", "| 106387 |",
		"| Task (MiB) | IAVL |", "| Runtx | 350 |", "| Database size after Runtx (MiB) | 2886 |",
		"**violated**: 3 accounts", "| 1 / 0 of 2 |", "10 native tokens of gas",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
