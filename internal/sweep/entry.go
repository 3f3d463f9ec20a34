package sweep

import (
	"encoding/json"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// Planned is one workload entry of a study planned as the coordinator
// runs it.
type Planned struct {
	// Study is the study with the entry's own concurrency (the study
	// itself when the entry sets none): every workload plans from the
	// study's.
	Study *study.Study
	// Params are the entry's params, as its workload decoded them.
	Params json.RawMessage
	// Steps are the workload's steps after the entry's sweep (Expand),
	// each with its labels.
	Steps []workload.Step
	// Search marks the steps searched for their sustainable rate:
	// Search[i] non-nil, Steps[i] is.
	Search []*RateSpec
}

// PlanEntry plans entry e of s with its workload w: the entry's own
// concurrency, its params decoded, w's steps and the entry's sweep
// applied to them.
func PlanEntry(s *study.Study, e study.Entry, w workload.Workload) (Planned, error) {
	s = entryStudy(s, e)
	raw, err := w.DecodeParams(s, e)
	if err != nil {
		return Planned{}, err
	}
	return plan(s, e, w, raw)
}

// Estimate is a workload.Estimator's estimate of entry e with params raw
// (as w.DecodeParams returned them): est of the params, decoded into a P,
// and of w's steps as PlanEntry plans them.
func Estimate[P any](s *study.Study, e study.Entry, w workload.Workload, raw json.RawMessage, est func(P, []workload.Step) workload.Estimate) (workload.Estimate, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return workload.Estimate{}, err
	}
	pl, err := plan(entryStudy(s, e), e, w, raw)
	if err != nil {
		return workload.Estimate{}, err
	}
	return est(p, pl.Steps), nil
}

// plan is PlanEntry's planning from the entry's study s and its params.
func plan(s *study.Study, e study.Entry, w workload.Workload, raw json.RawMessage) (Planned, error) {
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
	return Planned{Study: s, Params: raw, Steps: steps, Search: search}, nil
}

// entryStudy is s with entry e's own concurrency.
func entryStudy(s *study.Study, e study.Entry) *study.Study {
	if e.Concurrency <= 0 {
		return s
	}
	c := *s
	c.Concurrency = e.Concurrency
	return &c
}
