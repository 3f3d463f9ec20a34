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

func (oneStep) DecodeParams(*study.Study, study.Entry) (json.RawMessage, error) {
	return json.RawMessage(`{"n":7}`), nil
}

func (oneStep) Plan(s *study.Study, raw json.RawMessage) ([]workload.Step, error) {
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
	pl, err := PlanEntry(s, s.Workloads[0], oneStep{})
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
	if pl.Study.Concurrency != 4 || s.Concurrency != 8 || string(pl.Params) != `{"n":7}` {
		t.Errorf("entry's study at %d, study's %d (want 4, 8); params %s", pl.Study.Concurrency, s.Concurrency, pl.Params)
	}
	type params struct{ N int }
	e, err := Estimate(s, s.Workloads[0], oneStep{}, pl.Params, func(p params, steps []workload.Step) workload.Estimate {
		return workload.Estimate{DiskBytes: float64(p.N), How: names(steps)[1]}
	})
	if err != nil || e.DiskBytes != 7 || e.How != names(pl.Steps)[1] {
		t.Errorf("estimate %+v (%v): want the params' 7 and the swept step %s", e, err, names(pl.Steps)[1])
	}
}
