package sweep

import (
	"encoding/json"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// Planned is one workload entry of a study planned as the coordinator
// runs it.
type Planned struct {
	// Planning is what the entry's workload planned from: the study's,
	// with the entry's own concurrency when it sets one.
	Planning workload.Planning
	// Params are the entry's params, as its workload decoded them.
	Params json.RawMessage
	// Steps are the workload's steps after the entry's sweep (Expand),
	// each with its labels.
	Steps []workload.Step
	// Search marks the steps searched for their sustainable rate:
	// Search[i] non-nil, Steps[i] is.
	Search []*RateSpec
}

// PlanningOf is what every workload of study s plans from: its file,
// seed, concurrency and ladder, and what the command line set. The
// coordinator builds it once per study; PlanEntry gives each entry its
// own concurrency.
func PlanningOf(s *study.Study) workload.Planning {
	ladder := make([]int64, len(s.Ladder))
	for i, n := range s.Ladder {
		ladder[i] = int64(n)
	}
	return workload.Planning{File: s.File, Seed: s.Seed, Concurrency: s.Concurrency, Ladder: ladder, SetBy: s.SetOnCommandLine}
}

// PlanEntry plans entry e of a study whose workloads plan from s, with
// its workload w: the entry's own concurrency, its params decoded, w's
// steps and the entry's sweep applied to them.
func PlanEntry(s workload.Planning, e study.Entry, w workload.Workload) (Planned, error) {
	s = entryPlanning(s, e)
	raw, err := w.DecodeParams(s, e)
	if err != nil {
		return Planned{}, err
	}
	return plan(s, e, w, raw)
}

// Estimate is a workload.Estimator's estimate of entry e with params raw
// (as w.DecodeParams returned them): est of the params, decoded into a P,
// and of w's steps as PlanEntry plans them.
func Estimate[P any](s workload.Planning, e study.Entry, w workload.Workload, raw json.RawMessage, est func(P, []workload.Step) workload.Estimate) (workload.Estimate, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return workload.Estimate{}, err
	}
	pl, err := plan(entryPlanning(s, e), e, w, raw)
	if err != nil {
		return workload.Estimate{}, err
	}
	return est(p, pl.Steps), nil
}

// plan is PlanEntry's planning from the entry's planning s and its
// params.
func plan(s workload.Planning, e study.Entry, w workload.Workload, raw json.RawMessage) (Planned, error) {
	sp, err := Decode(s, e)
	if err != nil {
		return Planned{}, err
	}
	steps, err := w.Plan(s, raw)
	if err != nil {
		return Planned{}, err
	}
	steps, search, err := Expand(s, e, sp, steps)
	if err != nil {
		return Planned{}, err
	}
	return Planned{Planning: s, Params: raw, Steps: steps, Search: search}, nil
}

// entryPlanning is s with entry e's own concurrency.
func entryPlanning(s workload.Planning, e study.Entry) workload.Planning {
	if e.Concurrency > 0 {
		s.Concurrency = e.Concurrency
	}
	return s
}
