package sweep

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/workload"
)

// Expand applies a workload entry's sweep to the steps its workload
// planned. A sweep adds steps after a step it covers, which stays as it
// was (the figure the study's tables, constraints and headline read): one
// step per concurrency level (labelled concurrency=…), and one marked for
// a rate search (search[i] non-nil) at the study's concurrency, which the
// Planner unrolls into trials (labelled rate=… trial=…) as their results
// come in. Every step leaves with its labels.
func Expand(s workload.Planning, e study.Entry, sp *Spec, steps []workload.Step) ([]workload.Step, []*RateSpec, error) {
	for i := range steps {
		steps[i].Labels = withBase(steps[i])
	}
	if sp == nil {
		return steps, make([]*RateSpec, len(steps)), nil
	}
	path := "workloads." + e.Name + ".sweep"
	has := map[string]bool{}
	var names []string
	for _, st := range steps {
		if !has[st.Phase] {
			names = append(names, st.Phase)
		}
		has[st.Phase] = true
	}
	check := func(field string, phases []string) error {
		for _, p := range phases {
			if !has[p] {
				return &study.Error{File: s.File, Line: study.FieldLine(e.Sweep, field), Field: path + "." + field,
					Msg: fmt.Sprintf("%s has no phase %q in this study (its phases: %s)", e.Name, p, strings.Join(names, ", "))}
			}
		}
		return nil
	}
	if err := check("phases", sp.Phases); err != nil {
		return nil, nil, err
	}
	r := sp.Rate
	if r != nil {
		if err := check("rate.phases", r.Phases); err != nil {
			return nil, nil, err
		}
	}
	var out []workload.Step
	var search []*RateSpec
	searched := false
	for _, st := range steps {
		out, search = append(out, st), append(search, nil)
		if len(sp.Concurrency) > 0 && covers(sp.Phases, st.Phase, !st.Fresh) {
			for _, c := range sp.Concurrency {
				x := st
				x.Fresh, x.ItemBytes = false, 0
				if st.Fresh {
					// A swept fresh step loads its data again, from empty.
					x.Fresh, x.ItemBytes = true, st.ItemBytes
				}
				x.Concurrency = c
				x.Labels = st.Labels.With(results.LConcurrency, strconv.Itoa(c))
				out, search = append(out, x), append(search, nil)
			}
		}
		if r != nil && covers(r.Phases, st.Phase, st.OpenLoop) {
			if !st.OpenLoop {
				return nil, nil, &study.Error{File: s.File, Line: study.FieldLine(e.Sweep, "rate.phases"), Field: path + ".rate.phases",
					Msg: fmt.Sprintf("%s %s does not run open loop: a rate search needs a phase that runs at a rate", e.Name, st.Phase)}
			}
			out, search = append(out, st), append(search, r)
			searched = true
		}
	}
	if r != nil && !searched {
		return nil, nil, &study.Error{File: s.File, Line: study.FieldLine(e.Sweep, "rate"), Field: path + ".rate",
			Msg: fmt.Sprintf("%s has no open-loop phase in this study to search a rate for", e.Name)}
	}
	return out, search, nil
}

// withBase is st's labels with workload, phase and n filled in.
func withBase(st workload.Step) results.Labels {
	l := results.StepLabels(st.Workload, st.Phase, st.N)
	for k, v := range st.Labels {
		if _, ok := l[k]; !ok {
			l[k] = v
		}
	}
	return l
}

// Planner gives a target its next step from the result of its last one
// (nil before the first step, or when the last step left no result).
type Planner interface {
	Next(last *results.Step) (workload.Step, bool)
}

// List is the trivial planner: a fixed list of steps, in order.
type List struct {
	Steps []workload.Step
	i     int
}

func (l *List) Next(*results.Step) (workload.Step, bool) {
	if l.i >= len(l.Steps) {
		return workload.Step{}, false
	}
	l.i++
	return l.Steps[l.i-1], true
}

// Adaptive runs a list of steps, unrolling each step marked for a rate
// search into trials: each trial's offered rate follows from what the
// earlier trials achieved (RateSearch), so the plan is known only as it
// runs.
type Adaptive struct {
	steps  []workload.Step
	search []*RateSpec
	i      int
	cur    *running
	done   []results.RateSearch
}

type running struct {
	tmpl   workload.Step
	spec   *RateSpec
	rs     *RateSearch
	rec    results.RateSearch
	issued bool // a trial was handed out and its result is due
}

// NewAdaptive plans steps; search[i] non-nil runs steps[i] as a search.
func NewAdaptive(steps []workload.Step, search []*RateSpec) *Adaptive {
	return &Adaptive{steps: steps, search: search}
}

func (a *Adaptive) Next(last *results.Step) (workload.Step, bool) {
	if c := a.cur; c != nil {
		if c.issued {
			c.issued = false
			if last == nil || last.Error != "" || last.Partial {
				// The trial did not finish: the search stops with what it
				// found so far (the coordinator stops the target anyway).
				a.finish(false)
				return workload.Step{}, false
			}
			t := c.rs.Record(TrialOf(last))
			c.rec.Trials = append(c.rec.Trials, results.RateTrial{
				Step: last.Name(), Offered: t.Offered, Achieved: t.Achieved, P99IntendedNs: int64(t.P99Intended),
				Late: last.Late, LatePerTick: t.LatePerTick, Sustained: t.Sustained, Why: t.Why,
			})
			c.rec.Sustainable = c.rs.Sustainable()
			_, c.rec.FailedAbove = c.rs.Bracket()
			c.rec.Converged = c.rs.Converged()
		}
		if rate, ok := c.rs.Next(); ok {
			return a.trial(rate), true
		}
		a.finish(true)
	}
	if a.i >= len(a.steps) {
		return workload.Step{}, false
	}
	st, spec := a.steps[a.i], a.search[a.i]
	a.i++
	if spec == nil {
		return st, true
	}
	rs := spec.Search()
	o := rs.Objective.withDefaults()
	a.cur = &running{tmpl: st, spec: spec, rs: rs, rec: results.RateSearch{
		Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels,
		MinAchieved: o.MinAchieved, SLONs: int64(o.SLO),
	}}
	rate, ok := rs.Next()
	if !ok {
		a.finish(true)
		return a.Next(nil)
	}
	return a.trial(rate), true
}

// trial is the current search's step at an offered rate.
func (a *Adaptive) trial(rate float64) workload.Step {
	c := a.cur
	st := c.tmpl
	st.Rate = rate
	st.Duration = time.Duration(c.spec.Duration)
	st.Labels = c.tmpl.Labels.
		With(results.LRate, strconv.FormatFloat(rate, 'f', -1, 64)).
		With(results.LTrial, strconv.Itoa(len(c.rec.Trials)+1))
	c.issued = true
	return st
}

func (a *Adaptive) finish(done bool) {
	a.cur.rec.Done = done
	a.done = append(a.done, a.cur.rec)
	a.cur = nil
}

// Searches are the searches run so far, the one under way included (not
// done), for results.json.
func (a *Adaptive) Searches() []results.RateSearch {
	out := append([]results.RateSearch(nil), a.done...)
	if a.cur != nil {
		out = append(out, a.cur.rec)
	}
	return out
}

// TrialOf reads a trial's figures from its step: the rate it offered and
// achieved, the p99 from intended start, and the late operations per tick.
func TrialOf(st *results.Step) Trial {
	t := Trial{Offered: st.Rate}
	if st.Seconds > 0 {
		t.Achieved = float64(st.Ops) / st.Seconds
	}
	if st.Intended != nil {
		t.P99Intended = time.Duration(st.Intended.P99)
	} else {
		t.P99Intended = time.Duration(st.Latency.P99)
	}
	for _, tk := range st.Series {
		t.LatePerTick = append(t.LatePerTick, tk.Late)
	}
	return t
}
