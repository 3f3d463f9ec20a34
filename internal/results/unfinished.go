package results

import (
	"fmt"
	"os"
	"strings"

	"storebench/internal/measure/procstat"
	"storebench/internal/study"
)

// Run and target statuses (docs/results-schema.md).
const (
	// StatusRunning is a run's (or a target's) while it is under way:
	// results.json is written so after every step. A file still saying
	// so whose process is gone was left by a storebench that never
	// finished: Decode reads it as StatusInterrupted.
	StatusRunning = "running"
	// StatusInterrupted is a run or target stopped by the user (Ctrl-C,
	// SIGTERM, a closed stdout) or that never finished.
	StatusInterrupted = "interrupted"
	// StatusPending is a target not started yet, in the file of a run
	// under way.
	StatusPending = "pending"
	// StatusNotRun is a planned step that never ran: the run was
	// interrupted first (Target.NotRun).
	StatusNotRun = "not run"
)

// Plan is what a run set out to do, recorded in results.json before
// anything runs, so that a run that never finished can say what it did
// not do.
type Plan struct {
	Targets []string      `json:"targets"`
	Steps   []PlannedStep `json:"steps"`
}

// PlannedStep is one step of the study as planned: its labels, and
// whether it runs as a search for its sustainable rate (its trials, named
// by the same labels with rate and trial, are planned as it runs).
type PlannedStep struct {
	Labels     Labels `json:"labels"`
	RateSearch bool   `json:"rate_search,omitempty"`
}

// NeverFinished is the reason of a run found "running": the process
// that wrote it stopped without a word.
const NeverFinished = "storebench stopped before the run finished (killed, or the machine went down); what it wrote is kept"

// settle reads a run that never finished (its file still says
// "running") as what it is: interrupted, the target under way
// interrupted, the targets never started skipped, and the steps that
// never ran listed.
func (r *Run) settle() {
	if r.Status != StatusRunning || r.underWay() {
		return
	}
	r.Status, r.Reason = StatusInterrupted, NeverFinished
	for _, t := range r.Targets {
		if t == nil {
			continue
		}
		switch t.Status {
		case StatusRunning:
			t.Status, t.Reason = StatusInterrupted, "the run stopped during this target"
		case StatusPending:
			t.Status, t.Reason = "skipped", "never ran: the run stopped first"
		}
	}
	r.ListNotRun()
}

// ListNotRun lists, for every interrupted target, the planned steps it
// never ran (NotRun), and names them in its reason. Steps it ran, cut
// short or not, steps that are n/a for it, and searches it began are not
// listed.
func (r *Run) ListNotRun() {
	if r.Plan == nil {
		return
	}
	for _, t := range r.Targets {
		if t == nil || t.Status != StatusInterrupted {
			continue
		}
		t.NotRun = nil
		var names []string
		for _, p := range r.Plan.Steps {
			if t.began(p) {
				continue
			}
			w, ph, n := p.Labels[LWorkload], p.Labels[LPhase], p.Labels.Int(LN)
			t.NotRun = append(t.NotRun, NA{Workload: w, Phase: ph, N: n, Labels: p.Labels, Status: StatusNotRun, Reason: "the run was interrupted before it finished"})
			name := fmt.Sprintf("%s %s N=%s", w, ph, study.FormatCount(n))
			if x := p.Labels.Extra(); x != "" {
				name += " " + x
			}
			if p.RateSearch {
				name += " (rate search)"
			}
			names = append(names, name)
		}
		if len(names) == 0 {
			continue
		}
		const most = 8
		list := strings.Join(names[:min(len(names), most)], ", ")
		if len(names) > most {
			list += fmt.Sprintf(" and %d more", len(names)-most)
		}
		t.Reason += fmt.Sprintf("; did not finish %d planned step(s): %s", len(names), list)
	}
}

// began reports whether the target ran planned step p (or began it), or
// cannot run it.
func (t *Target) began(p PlannedStep) bool {
	for _, x := range t.NA {
		if x.Labels != nil && x.Labels.Equal(p.Labels) || x.Labels == nil && x.Workload == p.Labels[LWorkload] && x.Phase == p.Labels[LPhase] && x.N == p.Labels.Int(LN) {
			return true
		}
	}
	if p.RateSearch {
		for _, s := range t.Searches {
			if s.Labels.Equal(p.Labels) {
				return true
			}
		}
		return false
	}
	return t.FindLabels(p.Labels) != nil
}

// NotRunReason returns why the target has no figure for a step of
// workload and phase at size n (n < 0: any size): the run was interrupted
// before it; "" when it is not one of the steps that never ran.
func (t *Target) NotRunReason(workload, phase string, n int64) string {
	for _, x := range t.NotRun {
		if x.Workload == workload && (phase == "" || x.Phase == phase) && (n < 0 || x.N == n) {
			return x.Reason
		}
	}
	return ""
}

// underWay reports whether the process that writes the run is still
// running it: same host, same PID and same start time.
func (r *Run) underWay() bool {
	if r.PID <= 0 {
		return false
	}
	if h, err := os.Hostname(); err != nil || h != r.Host.Hostname {
		return false
	}
	start, err := procstat.StartTime(r.PID)
	return err == nil && start == r.PIDStart && procstat.Alive(r.PID)
}

// upgrade2 reads a version 2 file in version 3's terms: a run stopped
// by the user was "partial" then, and a run killed before it finished
// was written "complete" with no finish time.
func upgrade2(r *Run) {
	switch {
	case r.Finished.IsZero():
		r.Status = StatusRunning
	case r.Status == "partial" && r.Reason == "interrupted by the user":
		r.Status = StatusInterrupted
	}
	r.SchemaVersion = SchemaVersion
}
