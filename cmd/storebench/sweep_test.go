package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/sweep"
)

// The ledger's stress phase, small, with a rate search from the study
// file; the concurrency sweep comes from --set.
const sweepStudy = `name: sweeps
ladder: [1000]
concurrency: 2
targets: [%TARGET%]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 20
      chains: {samples: 0}
      stress: {duration: 1s, rate: 200}
      balance: {addresses: 0}
    sweep:
      rate: {phases: [stress], start: 200, factor: 4, max_trials: 3, duration: 2s}
`

const ycsbSweepStudy = `name: ycsb-sweep
ladder: [500]
concurrency: 2
targets: [%TARGET%]
workloads:
  - name: ycsb
    params: {workloads: [a], operations: 300, fields: 2, field_length: 50}
    sweep:
      rate: {start: 100, factor: 4, max_trials: 3, duration: 2s}
`

// runSweeps runs a study on one target (a name or a URI) and returns its
// run directory and results.
func runSweeps(t *testing.T, text, target string, args ...string) (string, *results.Run) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "%TARGET%", target)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, append([]string{"run", p, "--out", out}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, run
}

// checkSearch checks a target's rate search of workload.phase against its
// trial steps: each trial ran at its offered rate, open loop; the verdict
// of each, recomputed from the trial step's raw figures (operations over
// seconds, p99 from the intended start, late operations per tick), is the
// one recorded; the sustainable rate is the highest sustained offer.
func checkSearch(t *testing.T, tr *results.Target, workload, phase string) {
	t.Helper()
	var rs *results.RateSearch
	for i := range tr.Searches {
		if tr.Searches[i].Workload == workload && tr.Searches[i].Phase == phase {
			rs = &tr.Searches[i]
		}
	}
	if rs == nil || !rs.Done || len(rs.Trials) < 2 {
		t.Fatalf("%s: no complete rate search of %s %s: %+v", tr.Name, workload, phase, tr.Searches)
	}
	obj := sweep.Objective{MinAchieved: rs.MinAchieved, SLO: time.Duration(rs.SLONs)}
	best := 0.0
	for i, trial := range rs.Trials {
		want := rs.Labels.With(results.LRate, strconv.FormatFloat(trial.Offered, 'f', -1, 64)).With(results.LTrial, strconv.Itoa(i+1))
		st := tr.FindLabels(want)
		if st == nil || st.Name() != trial.Step {
			t.Fatalf("%s: trial %d (%s): no step labelled %v", tr.Name, i+1, trial.Step, want)
		}
		if st.Rate != trial.Offered || st.Intended == nil {
			t.Errorf("%s: trial %s ran at %v/s (intended latency %v), offered %v/s", tr.Name, trial.Step, st.Rate, st.Intended != nil, trial.Offered)
		}
		var late []int64
		for _, tk := range st.Series {
			late = append(late, tk.Late)
		}
		raw := sweep.Trial{Offered: st.Rate, Achieved: float64(st.Ops) / st.Seconds, P99Intended: time.Duration(st.Intended.P99), LatePerTick: late}
		obj.Judge(&raw)
		if raw.Sustained != trial.Sustained || raw.Why != trial.Why {
			t.Errorf("%s: trial %s judged %v (%s), its figures say %v (%s)", tr.Name, trial.Step, trial.Sustained, trial.Why, raw.Sustained, raw.Why)
		}
		if raw.Sustained && raw.Offered > best {
			best = raw.Offered
		}
	}
	if rs.Sustainable != best {
		t.Errorf("%s: sustainable rate %v, the highest sustained trial %v", tr.Name, rs.Sustainable, best)
	}
}

// checkOutputs checks that every step has its HDR log named by its
// labels and that the report draws the sweeps' charts.
func checkOutputs(t *testing.T, dir string, run *results.Run, kinds ...string) {
	t.Helper()
	for _, tr := range run.Targets {
		for _, s := range tr.Steps {
			if _, err := os.Stat(filepath.Join(dir, "hdr", tr.Name, s.Name()+".hlog")); err != nil {
				t.Errorf("no HDR log named by the labels of %s: %v", s.Name(), err)
			}
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range report.Charts(run) {
		ids = append(ids, c.ID)
	}
	for _, k := range kinds {
		found := false
		for _, id := range ids {
			if strings.HasSuffix(id, k) {
				found = true
				if !strings.Contains(string(html), id) {
					t.Errorf("report.html lacks chart %s", id)
				}
			}
		}
		if !found {
			t.Errorf("no %s chart among %v", k, ids)
		}
	}
}

func TestConcurrencySweepAndRateSearchOnLedgerStress(t *testing.T) {
	targets := []string{"pebble"}
	// Redis: the suite's shared server, or a private one for this test.
	targets = append(targets, ownRedisDB(t, 14))
	for _, target := range targets {
		dir, run := runSweeps(t, sweepStudy, target, "--set", "ledger.sweep.concurrency=1,3", "--set", "ledger.sweep.phases=[stress]")
		tr := run.Targets[0]
		// The phase's own step, then one per level, each at its level.
		if own := tr.FindLabels(results.StepLabels("ledger", "stress", 1000)); own == nil || own.Metrics["goroutines"] != 2 {
			t.Fatalf("%s: the stress's own step is missing or not at the study's concurrency: %+v", tr.Name, own)
		}
		for _, c := range []int{1, 3} {
			st := tr.FindLabels(results.StepLabels("ledger", "stress", 1000).With(results.LConcurrency, strconv.Itoa(c)))
			if st == nil {
				t.Fatalf("%s: no step labelled concurrency=%d", tr.Name, c)
			}
			if st.Metrics["goroutines"] != float64(c) || st.Rate != 200 {
				t.Errorf("%s: level %d ran %v goroutines at %v/s", tr.Name, c, st.Metrics["goroutines"], st.Rate)
			}
		}
		checkSearch(t, tr, "ledger", "stress")
		checkOutputs(t, dir, run, "concurrency-sweep", "rate-achieved", "rate-p99")
		md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
		for _, want := range []string{"### Concurrency sweep: ledger stress N=1e3", "### Sustainable rate: ledger stress N=1e3", "| sustainable rate |"} {
			if !strings.Contains(string(md), want) {
				t.Errorf("%s: report.md lacks %q", tr.Name, want)
			}
		}
	}
}

func TestRateSearchOnYCSB(t *testing.T) {
	dir, run := runSweeps(t, ycsbSweepStudy, "pebble")
	tr := run.Targets[0]
	checkSearch(t, tr, "ycsb", "a")
	checkOutputs(t, dir, run, "rate-achieved", "rate-p99")
	// The workload's own run stays closed loop, bounded by its operations.
	if own := tr.FindLabels(results.StepLabels("ycsb", "a", 500)); own == nil || own.Intended != nil || own.Ops != 300 {
		t.Errorf("ycsb a's own step: %+v", own)
	}
}
