package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// Unattended is how long a study with no time limit may be estimated to
// run before a scale's run is refused without --accept-estimate.
const Unattended = 24 * time.Hour

// Estimated is a study's cost before it runs, from those of its
// workloads that can tell (workload.Estimator).
type Estimated struct {
	// Time is every target's steps one after another.
	Time time.Duration
	// DiskBytes is the most one target's data needs (each target's data
	// is removed before the next runs).
	DiskBytes float64
	// Lines say how, one per workload.
	Lines []string
}

// Estimate is the study's estimate; ok is false when none of its
// workloads can estimate.
func Estimate(s *study.Study) (e Estimated, ok bool, err error) {
	for _, en := range s.Workloads {
		w, err := workload.Lookup(en.Name)
		if err != nil {
			return e, false, err
		}
		est, can := w.(workload.Estimator)
		if !can {
			continue
		}
		raw, err := w.DecodeParams(s, en)
		if err != nil {
			return e, false, err
		}
		one, err := est.Estimate(s, en, raw)
		if err != nil {
			return e, false, err
		}
		ok = true
		// Each target runs once per machine shape.
		e.Time += time.Duration(len(s.Targets)*max(len(s.Machines), 1)) * one.Time
		e.DiskBytes += one.DiskBytes
		e.Lines = append(e.Lines, fmt.Sprintf("%s, per target: %s", en.Name, one.How))
	}
	return e, ok, nil
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
