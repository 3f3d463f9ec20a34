// Package sweep holds the generic searches any workload gets for free:
// the search for the highest sustainable open-loop rate. It decides only
// which rate to try next from what the last trials measured; running a
// trial is the coordinator's business, so the policy is tested here
// without a target.
package sweep

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Objective says when an offered rate counts as sustained.
type Objective struct {
	// MinAchieved is the fraction of the offered rate that must be
	// achieved (default 0.99).
	MinAchieved float64
	// SLO bounds the p99 latency from the intended start (default 100 ms).
	SLO time.Duration
}

// DefaultObjective is the objective of issue 11: 99% of the offered rate,
// p99 from intended start under 100 ms, and a queue that does not grow.
var DefaultObjective = Objective{MinAchieved: 0.99, SLO: 100 * time.Millisecond}

// Trial is what one run at an offered rate measured.
type Trial struct {
	Offered  float64 `json:"offered"`
	Achieved float64 `json:"achieved"`
	// P99Intended is the p99 latency from the intended start time.
	P99Intended time.Duration `json:"p99_intended_ns"`
	// LatePerTick is the number of late operations in each tick of the
	// trial, in order: a backlog that keeps growing shows here.
	LatePerTick []int64 `json:"-"`
	// Sustained and Why are the verdict, filled by Judge.
	Sustained bool   `json:"sustained"`
	Why       string `json:"why,omitempty"`
}

// Judge fills t's verdict under o.
func (o Objective) Judge(t *Trial) {
	o = o.withDefaults()
	switch {
	case t.Offered <= 0:
		t.Sustained, t.Why = false, "no rate offered"
	case t.Achieved < o.MinAchieved*t.Offered:
		t.Sustained, t.Why = false, fmt.Sprintf("achieved %.0f/s < %.0f%% of %.0f/s", t.Achieved, o.MinAchieved*100, t.Offered)
	case t.P99Intended > o.SLO:
		t.Sustained, t.Why = false, fmt.Sprintf("p99 from intended start %s > %s", t.P99Intended.Round(10*time.Microsecond), o.SLO)
	case Growing(t.LatePerTick, t.Offered): // the series ticks each second
		t.Sustained, t.Why = false, "late operations keep growing"
	default:
		t.Sustained, t.Why = true, ""
	}
}

func (o Objective) withDefaults() Objective {
	if o.MinAchieved <= 0 {
		o.MinAchieved = DefaultObjective.MinAchieved
	}
	if o.SLO <= 0 {
		o.SLO = DefaultObjective.SLO
	}
	return o
}

// Growing reports whether a per-tick count of late operations keeps
// growing: the last third of the ticks has clearly more late operations
// than the first third. A constant trickle of late operations (a
// scheduler hiccup per second) is not a backlog; a queue that builds is.
// Nor is a handful: the growth must pass 10 operations a tick and 1% of
// the operations offered over those ticks (offeredPerTick each), so that
// a hundred late operations out of 12,000 at 4,000/s, with a p99 of 5 ms,
// do not fail a rate the target plainly keeps up with. Fewer than 3 ticks
// cannot show a trend.
func Growing(perTick []int64, offeredPerTick float64) bool {
	n := len(perTick)
	if n < 3 {
		return false
	}
	third := n / 3
	var first, last int64
	for _, v := range perTick[:third] {
		first += v
	}
	for _, v := range perTick[n-third:] {
		last += v
	}
	// Clearly more: twice as many, and not just a handful.
	handful := max(float64(10*third), 0.01*offeredPerTick*float64(third))
	return last > 2*first && float64(last-first) > handful
}

// RateSearch steps the rate up geometrically from Start until a rate is
// not sustained, then bisects between the highest sustained and the
// lowest failed rate until they are within Precision of each other.
type RateSearch struct {
	Start     float64 // first rate tried (ops/s)
	Factor    float64 // growth while every rate holds (default 2)
	Precision float64 // stop when (bad-good)/good <= Precision (default 0.05)
	Max       float64 // never offer more than this (0: no bound)
	MaxTrials int     // bound on the number of trials (default 12)
	Objective Objective

	trials []Trial
}

// Next returns the next rate to try, or ok=false when the search is done.
func (s *RateSearch) Next() (rate float64, ok bool) {
	factor := s.Factor
	if factor <= 1 {
		factor = 2
	}
	prec := s.Precision
	if prec <= 0 {
		prec = 0.05
	}
	maxTrials := s.MaxTrials
	if maxTrials <= 0 {
		maxTrials = 12
	}
	if len(s.trials) >= maxTrials {
		return 0, false
	}
	if len(s.trials) == 0 {
		return s.clamp(s.Start), s.Start > 0
	}
	// A rate that failed once is tried once more before the search
	// believes it: on a machine the load generator shares with the
	// target, one stall (a compaction, a neighbour's burst) fails a single
	// trial, and a search that trusts it steps down far below what the
	// target sustains. The rate's verdict is then its latest trial's.
	if last := s.trials[len(s.trials)-1]; !last.Sustained && s.triedAt(last.Offered) == 1 {
		return last.Offered, true
	}
	good, bad := s.bounds()
	switch {
	case bad == 0: // everything held so far: step up
		if s.Max > 0 && good >= s.Max {
			return 0, false
		}
		return s.clamp(good * factor), true
	case good == 0: // even the lowest rate failed: step down
		next := math.Round(bad / factor)
		if next < 1 {
			return 0, false
		}
		return next, true
	case (bad-good)/good <= prec:
		return 0, false
	default:
		return math.Round((good + bad) / 2), true
	}
}

func (s *RateSearch) clamp(r float64) float64 {
	if s.Max > 0 && r > s.Max {
		return s.Max
	}
	return math.Round(r)
}

// Record judges one trial under the search's objective and keeps it.
func (s *RateSearch) Record(t Trial) Trial {
	s.Objective.Judge(&t)
	s.trials = append(s.trials, t)
	return t
}

// triedAt counts the trials at an offered rate.
func (s *RateSearch) triedAt(rate float64) int {
	n := 0
	for _, t := range s.trials {
		if t.Offered == rate {
			n++
		}
	}
	return n
}

// verdicts is each offered rate's verdict: that of its latest trial.
func (s *RateSearch) verdicts() map[float64]bool {
	v := map[float64]bool{}
	for _, t := range s.trials {
		v[t.Offered] = t.Sustained
	}
	return v
}

// bounds is the highest sustained rate and the lowest failed one above
// it (0 when none).
func (s *RateSearch) bounds() (good, bad float64) {
	v := s.verdicts()
	for r, ok := range v {
		if ok && r > good {
			good = r
		}
	}
	for r, ok := range v {
		if !ok && r > good && (bad == 0 || r < bad) {
			bad = r
		}
	}
	return good, bad
}

// Bracket is the highest rate that held and the lowest that failed above
// it (0 when there is none): the target's capacity lies between them.
func (s *RateSearch) Bracket() (good, bad float64) { return s.bounds() }

// Converged reports whether the search ended on its own terms (the
// bracket within Precision, Max reached, or nothing held down to 1/s),
// rather than by spending its trials.
func (s *RateSearch) Converged() bool {
	if len(s.trials) == 0 {
		return false
	}
	if last := s.trials[len(s.trials)-1]; !last.Sustained && s.triedAt(last.Offered) == 1 {
		return false // a failure waiting for its confirmation
	}
	prec := s.Precision
	if prec <= 0 {
		prec = 0.05
	}
	factor := s.Factor
	if factor <= 1 {
		factor = 2
	}
	good, bad := s.bounds()
	switch {
	case bad == 0:
		return s.Max > 0 && good >= s.Max
	case good == 0:
		return math.Round(bad/factor) < 1
	default:
		return (bad-good)/good <= prec
	}
}

// Sustainable is the highest rate that held (0 if none did).
func (s *RateSearch) Sustainable() float64 {
	good, _ := s.bounds()
	return good
}

// Curve is every trial, by offered rate.
func (s *RateSearch) Curve() []Trial {
	out := append([]Trial(nil), s.trials...)
	sort.Slice(out, func(i, j int) bool { return out[i].Offered < out[j].Offered })
	return out
}
