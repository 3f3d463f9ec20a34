package compare

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// A study's settings flatten to the names --set uses for workload
// parameters, and to dotted paths for everything else a study sets.
func TestStudySettingsFlatten(t *testing.T) {
	got := studySettings(`name: s
seed: 3
limits: {target_time: 5m}
workloads:
  - name: ledger
    concurrency: 4
    params:
      stress: {duration: 2s, rate: 200}
      chains: {lengths: [10, 100]}
    sweep: {rate: {max_trials: 6}}
  - name: ycsb
    params: {workloads: [a, c]}
`)
	want := map[string]string{
		"limits.target_time":           "5m",
		"ledger.concurrency":           "4",
		"ledger.stress.duration":       "2s",
		"ledger.stress.rate":           "200",
		"ledger.chains.lengths":        "[10, 100]",
		"ledger.sweep.rate.max_trials": "6",
		"ycsb.workloads":               "[a, c]",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d settings, want %d: %v", len(got), len(want), got)
	}
}

// Runs of other studies or workloads are incomparable, each difference
// named; without a study text, the workloads are those the steps ran.
func TestIncomparableNamesEachDifference(t *testing.T) {
	run := func(study string, workloads ...string) *results.Run {
		tg := &results.Target{Name: "pebble"}
		for _, w := range workloads {
			tg.Steps = append(tg.Steps, &results.Step{Workload: w, Phase: "p", N: 10})
		}
		return &results.Run{Study: study, Targets: []*results.Target{tg}}
	}
	runs := []Run{
		{Label: "A1", Run: run("s", "ledger"), Study: "name: s\nworkloads:\n  - name: ledger\n"},
		{Label: "A2", Run: run("s", "ledger")},
		{Label: "B1", Run: run("s", "ledger", "ycsb")},
		{Label: "B2", Run: run("t", "ledger")},
	}
	err := Incomparable(runs)
	if err == nil {
		t.Fatal("runs of other studies and workloads judged comparable")
	}
	for _, want := range []string{"A1 ran workloads ledger, B1 ran ledger, ycsb", `A1 is a run of study "s", B2 of study "t"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "A2") {
		t.Errorf("%v: names A2, which is alike", err)
	}
	if err := Incomparable(runs[:2]); err != nil {
		t.Errorf("alike runs: %v", err)
	}
}
