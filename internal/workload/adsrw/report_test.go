package adsrw

import (
	"strings"
	"testing"

	"storebench/internal/measure/procstat"
	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/workload/roots"
)

func reportStep(workload, phase string, n int64, seconds float64, m map[string]float64) *results.Step {
	s := &results.Step{Workload: workload, Phase: phase, N: n, Seconds: seconds, Metrics: m}
	s.Resources.After = procstat.Snapshot{RSSBytes: 300 << 20, PeakRSSBytes: 400 << 20}
	s.Resources.DiskAllocated = 2886 << 20
	s.Series = []results.Tick{{RSSBytes: 350 << 20}}
	return s
}

// The ads-rw table has the seed's columns, one row per target, units in
// the headings, and the root for authenticated stores only.
func TestADSRWTable(t *testing.T) {
	create := reportStep("ads-rw", "create", 1000, 531, map[string]float64{"blocks": 10, "block_size": 100, "pairs_per_s": 1.9})
	create.Facts = map[string]string{roots.Root: "0123456789abcdef0123"}
	run := &results.Run{Study: "ads-rw", Ladder: []int64{1000}, Targets: []*results.Target{
		{Title: "MPT", Status: "ok", Steps: []*results.Step{create,
			reportStep("ads-rw", "read-serial", 1000, 31.72, nil), reportStep("ads-rw", "read-parallel", 1000, 10.47, map[string]float64{"readers": 64})}},
		{Title: "GoLevelDB", Status: "ok", Steps: []*results.Step{reportStep("ads-rw", "create", 1000, 2, map[string]float64{"blocks": 10})}},
	}}
	md := report.Markdown(run)
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
