package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/target"
	"storebench/internal/workload"
)

// Unattended is how long a study with no time limit may be estimated to
// run before a scale's run is refused without --accept-estimate.
const Unattended = 24 * time.Hour

// Estimated is a study's cost before it runs, from those of its
// workloads that can tell (workload.Estimator).
type Estimated struct {
	// Time is every target's steps one after another: each workload's
	// on each target that can run them, once per machine shape.
	Time time.Duration
	// DiskBytes is the most one target's data needs (each target's data
	// is removed before the next runs): the workloads it runs, together.
	DiskBytes float64
	// Lines say how, one per workload.
	Lines []string
}

// Estimate is the study's estimate; ok is false when none of its
// workloads can estimate (or none that can runs on any target).
//
// A workload's estimate is its cost on one target, counted once for each
// target that can run its steps, as Prepare decides it (a step a target
// cannot run is n/a there): in a study of web servers and SQL targets an
// HTTP workload costs nothing on the SQL targets, nor sysbench's on the
// web servers.
func Estimate(s *study.Study) (e Estimated, ok bool, err error) {
	var (
		infos []target.Info // looked up once a workload estimates
		names []string
	)
	disk := make([]float64, len(s.Targets))
	shapes := max(len(s.Machines), 1)
	planning := sweep.PlanningOf(s)
	for _, en := range s.Workloads {
		w, err := workload.Lookup(en.Name)
		if err != nil {
			return e, false, err
		}
		est, can := w.(workload.Estimator)
		if !can {
			continue
		}
		if infos == nil {
			if infos, names, err = targetInfos(s); err != nil {
				return e, false, err
			}
		}
		// As planSteps plans it: the swept steps require what the steps
		// they sweep do.
		pl, err := sweep.PlanEntry(planning, en, w)
		if err != nil {
			return e, false, err
		}
		var on []int
		for i, info := range infos {
			if runsAny(info, pl.Steps) {
				on = append(on, i)
			}
		}
		if len(on) == 0 {
			e.Lines = append(e.Lines, fmt.Sprintf("%s: no target runs it", en.Name))
			continue
		}
		one, err := est.Estimate(pl.Planning, en, pl.Params)
		if err != nil {
			return e, false, err
		}
		ok = true
		// Each target runs once per machine shape.
		e.Time += time.Duration(len(on)*shapes) * one.Time
		var who []string
		for _, i := range on {
			disk[i] += one.DiskBytes
			who = append(who, names[i])
		}
		e.Lines = append(e.Lines, fmt.Sprintf("%s, per target (%d of %d: %s): %s", en.Name, len(on), len(infos), strings.Join(who, ", "), one.How))
	}
	for _, d := range disk {
		e.DiskBytes = max(e.DiskBytes, d)
	}
	return e, ok, nil
}

// targetInfos are the study's targets as Prepare finds them (a name, a
// server's name or a URI), and their names.
func targetInfos(s *study.Study) ([]target.Info, []string, error) {
	infos := make([]target.Info, len(s.Targets))
	names := make([]string, len(s.Targets))
	for i, t := range s.Targets {
		ref := t.Name
		if ref == "" {
			ref = t.URI
		}
		info, err := target.Lookup(ref)
		if err != nil {
			return nil, nil, &study.Error{File: s.File, Field: fmt.Sprintf("targets[%d]", i), Msg: err.Error()}
		}
		infos[i], names[i] = info, t.Name
		if names[i] == "" {
			names[i] = info.Name
		}
	}
	return infos, names, nil
}

// runsAny says whether a target that is info can run any of steps.
func runsAny(info target.Info, steps []workload.Step) bool {
	for _, st := range steps {
		if st.CannotRunOn(info.Provides) == "" {
			return true
		}
	}
	return false
}

// String is the estimate in one line.
func (e Estimated) String() string {
	return fmt.Sprintf("about %s and %s of disk (%s)", round(e.Time), humanF(e.DiskBytes), strings.Join(e.Lines, "; "))
}

// TooBig says why e does not fit this machine ("" when it does): more
// disk than dir's filesystem has free or limits.disk allows, or longer
// than limits.time (or, with no time limit, than Unattended).
func (e Estimated) TooBig(s *study.Study, dir string) string {
	var why []string
	if lim := int64(s.Limits.Disk); lim > 0 && e.DiskBytes > float64(lim) {
		why = append(why, fmt.Sprintf("the disk limit is %s", human(lim)))
	}
	if sp, err := statSpace(existing(dir)); err == nil && e.DiskBytes > float64(sp.Free) {
		why = append(why, fmt.Sprintf("%s is free on %s", human(sp.Free), sp.Mount))
	}
	switch lim := time.Duration(s.Limits.Time); {
	case lim > 0 && e.Time > lim:
		why = append(why, fmt.Sprintf("the time limit is %s", lim))
	case lim == 0 && e.Time > Unattended:
		why = append(why, fmt.Sprintf("no time limit, and it would run longer than %s", Unattended))
	}
	return strings.Join(why, "; ")
}

// existing is dir or its nearest parent that exists (the results
// directory may not be made yet).
func existing(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			return d
		}
		d = filepath.Dir(d)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
