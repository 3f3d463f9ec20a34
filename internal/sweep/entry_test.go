package sweep

import (
	"encoding/json"
	"reflect"
	"testing"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// oneStep plans one step at the study's concurrency, with its params.
type oneStep struct{ workload.Workload }

func (oneStep) Name() string { return "ledger" }

func (oneStep) DecodeParams(workload.Planning, study.Entry) (json.RawMessage, error) {
	return json.RawMessage(`{"n":7}`), nil
}

func (oneStep) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	return []workload.Step{{Workload: "ledger", Phase: "insert", N: 1000, Concurrency: s.Concurrency, Params: raw}}, nil
}

// An entry plans from its own concurrency (the study's left as it is),
// its sweep after the step it covers; an estimator gets the same steps
// and its params decoded.
func TestPlanEntryAtItsOwnConcurrencyWithItsSweep(t *testing.T) {
	s, _, err := parse(t, studyText+"    concurrency: 4\n    sweep: {concurrency: [16]}\n")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := PlanEntry(PlanningOf(s), s.Workloads[0], oneStep{})
	if err != nil {
		t.Fatal(err)
	}
	var levels []int
	for _, st := range pl.Steps {
		levels = append(levels, st.Concurrency)
	}
	if !reflect.DeepEqual(levels, []int{4, 16}) || len(pl.Search) != 2 || pl.Search[0] != nil || pl.Search[1] != nil {
		t.Errorf("levels %v, search %v: want [4 16], none searched", levels, pl.Search)
	}
	if pl.Planning.Concurrency != 4 || s.Concurrency != 8 || string(pl.Params) != `{"n":7}` {
		t.Errorf("entry's planning at %d, study's %d (want 4, 8); params %s", pl.Planning.Concurrency, s.Concurrency, pl.Params)
	}
	type params struct{ N int }
	e, err := Estimate(PlanningOf(s), s.Workloads[0], oneStep{}, pl.Params, func(p params, steps []workload.Step) workload.Estimate {
		return workload.Estimate{DiskBytes: float64(p.N), How: names(steps)[1]}
	})
	if err != nil || e.DiskBytes != 7 || e.How != names(pl.Steps)[1] {
		t.Errorf("estimate %+v (%v): want the params' 7 and the swept step %s", e, err, names(pl.Steps)[1])
	}
}

// A study's planning is its file, seed, concurrency and ladder, and what
// the command line set; it shares nothing a workload could change with
// the study.
func TestPlanningOfAStudy(t *testing.T) {
	s, err := study.Parse("t.yaml", []byte("name: t\nseed: 7\nconcurrency: 3\nladder: [10, 1000]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(study.Override{Set: []string{"ledger.stress.rate=5"}}); err != nil {
		t.Fatal(err)
	}
	p := PlanningOf(s)
	if p.File != "t.yaml" || p.Seed != 7 || p.Concurrency != 3 || !reflect.DeepEqual(p.Ladder, []int64{10, 1000}) || p.Largest() != 1000 {
		t.Errorf("planning %+v", p)
	}
	if !p.SetOnCommandLine("workloads.ledger.params.stress.rate") || p.SetOnCommandLine("workloads.ledger.params.stress.duration") {
		t.Error("SetOnCommandLine is not the study's")
	}
	if (workload.Planning{}).SetOnCommandLine("workloads.ledger.params.stress.rate") {
		t.Error("a planning with no command line says a field was set on it")
	}
	p.Ladder[0] = 99
	if s.Ladder[0] != 10 {
		t.Error("the planning's ladder is the study's")
	}
}
