package sweep

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/workload"
)

const studyText = `name: t
ladder: [1000]
targets: [pebble]
workloads:
  - name: ledger
`

// parse reads studyText with the overrides sets, and decodes the sweep.
func parse(t *testing.T, text string, sets ...string) (*study.Study, *Spec, error) {
	t.Helper()
	s, err := study.Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(study.Override{Set: sets}); err != nil {
		return s, nil, err
	}
	sp, err := Decode(PlanningOf(s), s.Workloads[0])
	return s, sp, s.Locate(err)
}

func ledgerSteps() []workload.Step {
	return []workload.Step{
		{Workload: "ledger", Phase: "insert", N: 1000, Fresh: true, Concurrency: 2},
		{Workload: "ledger", Phase: "select", N: 1000, Concurrency: 2},
		// The ledger declares "length" a size label in its own package,
		// not linked here: the step is named with the label as it is.
		{Workload: "ledger", Phase: "chain", N: 1000, Concurrency: 2, Labels: results.Labels{"length": "10"}},
		{Workload: "ledger", Phase: "stress", N: 1000, Concurrency: 2, OpenLoop: true, Rate: 2000},
	}
}

func names(steps []workload.Step) []string {
	var out []string
	for _, st := range steps {
		out = append(out, st.Labels.Name())
	}
	return out
}

// The sweep comes from the study or from --set, and expands into
// labelled steps after the phase's own step.
func TestSweepFromSetExpandsIntoLabelledSteps(t *testing.T) {
	s, sp, err := parse(t, studyText, "ledger.sweep.concurrency=1,8,64", "ledger.sweep.phases=stress",
		"ledger.sweep.rate.start=500", "ledger.sweep.rate.duration=2s")
	if err != nil {
		t.Fatal(err)
	}
	if got := []int(sp.Concurrency); len(got) != 3 || got[0] != 1 || got[2] != 64 {
		t.Fatalf("levels %v, want [1 8 64]", got)
	}
	steps, search, err := Expand(PlanningOf(s), s.Workloads[0], sp, ledgerSteps())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ledger-insert-n1e3", "ledger-select-n1e3", "ledger-chain-n1e3-length10", "ledger-stress-n1e3",
		"ledger-stress-n1e3-c1", "ledger-stress-n1e3-c8", "ledger-stress-n1e3-c64", "ledger-stress-n1e3"}
	if got := names(steps); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("steps\n %v\nwant\n %v", got, want)
	}
	for i, st := range steps {
		if c := st.Labels.Int(results.LConcurrency); c != 0 && int64(st.Concurrency) != c {
			t.Errorf("%s runs at concurrency %d", st.Labels.Name(), st.Concurrency)
		}
		if (search[i] != nil) != (i == len(steps)-1) {
			t.Errorf("step %d %s: search %v", i, st.Labels.Name(), search[i])
		}
	}
	if r := search[len(steps)-1]; r.Start != 500 || time.Duration(r.Duration) != 2*time.Second {
		t.Errorf("rate spec %+v", r)
	}
	// The file form says the same.
	file := studyText + "    sweep: {concurrency: [1, 8, 64], phases: [stress], rate: {start: 500, duration: 2s}}\n"
	s2, sp2, err := parse(t, file)
	if err != nil {
		t.Fatal(err)
	}
	steps2, _, err := Expand(PlanningOf(s2), s2.Workloads[0], sp2, ledgerSteps())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names(steps2), " ") != strings.Join(want, " ") {
		t.Errorf("from the file: %v", names(steps2))
	}
}

func TestBadSweepIsLocated(t *testing.T) {
	for _, c := range []struct {
		set  []string
		text string
		want string
	}{
		{[]string{"ledger.sweep.concurrency=1,0"}, "", `--set ledger.sweep.concurrency=1,0`},
		{[]string{"ledger.sweep.concurrency=1,1"}, "", "given twice"},
		{[]string{"ledger.sweep.rate.start=0", "ledger.sweep.rate.duration=2s"}, "", "--set ledger.sweep.rate.start=0"},
		{[]string{"ledger.sweep.rate.start=10"}, "", "trial's length"},
		{nil, "    sweep: {concurrency: [1, 2], phases: [nope]}\n", "t.yaml:6"},
		{nil, "    sweep: {rate: {phases: [select], start: 10, duration: 2s}}\n", "does not run open loop"},
	} {
		s, sp, err := parse(t, studyText+c.text, c.set...)
		if err == nil {
			_, _, err = Expand(PlanningOf(s), s.Workloads[0], sp, ledgerSteps())
			err = s.Locate(err)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q: got %v, want an error with %q", c.set, c.text, err, c.want)
		}
	}
}

// result is what a target of the given capacity measures at a rate.
func result(st workload.Step, capacity float64) *results.Step {
	achieved := math.Min(st.Rate, capacity)
	secs := st.Duration.Seconds()
	r := &results.Step{Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels, Rate: st.Rate,
		Seconds: secs, Ops: int64(achieved * secs), Intended: &latency.Summary{P99: int64(time.Millisecond)}}
	for i := 0; i < 5; i++ {
		late := int64(1)
		if st.Rate > capacity {
			late = int64(float64(i+1) * (st.Rate - capacity))
			r.Intended.P99 = int64(time.Second)
		}
		r.Series = append(r.Series, results.Tick{Late: late})
	}
	return r
}

// The planner runs the plain steps in order and unrolls a search into
// trials, each planned from the last result; the found rate and the
// curve follow from the trials.
func TestAdaptivePlannerSearchesFromLastResult(t *testing.T) {
	spec := &RateSpec{Start: 100, Duration: study.Duration(5 * time.Second), MaxTrials: 20}
	steps := []workload.Step{
		{Workload: "w", Phase: "load", N: 10, Labels: results.StepLabels("w", "load", 10)},
		{Workload: "w", Phase: "run", N: 10, OpenLoop: true, Labels: results.StepLabels("w", "run", 10)},
		{Workload: "w", Phase: "after", N: 10, Labels: results.StepLabels("w", "after", 10)},
	}
	p := NewAdaptive(steps, []*RateSpec{nil, spec, nil})
	var last *results.Step
	var ran []string
	for i := 0; i < 100; i++ {
		st, ok := p.Next(last)
		if !ok {
			break
		}
		ran = append(ran, st.Labels.Name())
		last = result(st, 1300)
		if st.Phase == "run" && (st.Rate <= 0 || st.Duration != 5*time.Second) {
			t.Fatalf("trial %s: rate %v duration %v", st.Labels.Name(), st.Rate, st.Duration)
		}
	}
	if ran[0] != "w-load-n10" || ran[1] != "w-run-n10-r100-t1" || ran[2] != "w-run-n10-r200-t2" || ran[len(ran)-1] != "w-after-n10" {
		t.Errorf("ran %v", ran)
	}
	ss := p.Searches()
	if len(ss) != 1 || !ss[0].Done {
		t.Fatalf("searches %+v", ss)
	}
	rs := ss[0]
	if rs.Sustainable > 1300 || rs.Sustainable < 1300*0.95 {
		t.Errorf("sustainable %v, want within 5%% under 1300", rs.Sustainable)
	}
	if len(rs.Trials) != len(ran)-2 {
		t.Errorf("%d trials, %d trial steps ran", len(rs.Trials), len(ran)-2)
	}
	best := 0.0
	for _, tr := range rs.Trials {
		if tr.Sustained != (tr.Offered <= 1300) {
			t.Errorf("trial at %v: sustained %v (%s)", tr.Offered, tr.Sustained, tr.Why)
		}
		if tr.Sustained {
			best = math.Max(best, tr.Offered)
		}
	}
	if best != rs.Sustainable {
		t.Errorf("sustainable %v, best sustained trial %v", rs.Sustainable, best)
	}
}

// A trial that fails ends the search, not done, and the planner.
func TestAdaptivePlannerStopsOnFailedTrial(t *testing.T) {
	spec := &RateSpec{Start: 100, Duration: study.Duration(time.Second)}
	p := NewAdaptive([]workload.Step{{Workload: "w", Phase: "run", N: 1, Labels: results.StepLabels("w", "run", 1)}}, []*RateSpec{spec})
	if _, ok := p.Next(nil); !ok {
		t.Fatal("no first trial")
	}
	if st, ok := p.Next(&results.Step{Error: errors.New("boom").Error()}); ok {
		t.Fatalf("planned %s after a failed trial", st.Labels.Name())
	}
	if ss := p.Searches(); len(ss) != 1 || ss[0].Done {
		t.Errorf("searches %+v", ss)
	}
	l := &List{Steps: []workload.Step{{Phase: "a"}, {Phase: "b"}}}
	a, _ := l.Next(nil)
	b, _ := l.Next(nil)
	if _, ok := l.Next(nil); ok || a.Phase != "a" || b.Phase != "b" {
		t.Error("the list planner does not run its steps in order, once")
	}
}
