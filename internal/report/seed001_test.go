package report

import (
	"strings"
	"testing"

	"storebench/internal/measure/procstat"
	"storebench/internal/results"
)

func step(workload, phase string, n int64, seconds float64, m map[string]float64) *results.Step {
	s := &results.Step{Workload: workload, Phase: phase, N: n, Seconds: seconds, Metrics: m}
	s.Resources.After = procstat.Snapshot{RSSBytes: 300 << 20, PeakRSSBytes: 400 << 20}
	s.Resources.DiskAllocated = 2886 << 20
	s.Series = []results.Tick{{RSSBytes: 350 << 20}}
	return s
}

// The ads-rw table has the seed's columns, one row per target, units in
// the headings, and the root for authenticated stores only.
func TestADSRWTable(t *testing.T) {
	create := step("ads-rw", "create", 1000, 531, map[string]float64{"blocks": 10, "block_size": 100, "pairs_per_s": 1.9})
	create.Root = "0123456789abcdef0123"
	run := &results.Run{Study: "ads-rw", Ladder: []int64{1000}, Targets: []*results.Target{
		{Title: "MPT", Status: "ok", Steps: []*results.Step{create,
			step("ads-rw", "read-serial", 1000, 31.72, nil), step("ads-rw", "read-parallel", 1000, 10.47, map[string]float64{"readers": 64})}},
		{Title: "GoLevelDB", Status: "ok", Steps: []*results.Step{step("ads-rw", "create", 1000, 2, map[string]float64{"blocks": 10})}},
	}}
	md := Markdown(run)
	for _, want := range []string{
		"| Time used in creation (s) | Size of the database (MiB) | Parallel read time (s) | Serial read time (s) | Peak RSS (MiB) |",
		"| MPT | 531 | 2886 | 10.47 | 31.72 | 400 |",
		"| GoLevelDB | 2.00 | 2886 | — | — | 400 |",
		"`0123456789abcdef`", "none (plain engine)", "by 64 concurrent readers",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// The tokens tables: tasks as rows, targets as columns; TPS, memory per
// task, invariants with violations in bold.
func TestTokensTables(t *testing.T) {
	n := int64(1000)
	inv := step("tokens", "invariants", n, 1, map[string]float64{"tokens": 101, "accounts": 1000, "gas_burned": 20, "sequence_mismatches": 3})
	run := &results.Run{Study: "tokens", Ladder: []int64{n}, Targets: []*results.Target{{Title: "IAVL", Status: "failed", Steps: []*results.Step{
		step("tokens", "genacc", n, 5402, map[string]float64{"blocks": 1, "block_size": 20000}),
		step("tokens", "checkacc", n, 2477.5, nil),
		step("tokens", "runtx", n, 154, map[string]float64{"blocks": 500, "block_size": 32768, "tps": 106387, "transfers": 2, "gas_burned": 20, "rejected_insufficient": 1}),
		inv,
	}}}}
	md := Markdown(run)
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
