package sweep

import (
	"math"
	"testing"
	"time"
)

// capacity models a target that keeps up with any rate up to cap and
// falls behind above it, its backlog growing tick by tick.
func trialAt(rate, capacity float64) Trial {
	t := Trial{Offered: rate, Achieved: math.Min(rate, capacity), P99Intended: time.Millisecond}
	for i := 0; i < 10; i++ {
		if rate > capacity {
			t.LatePerTick = append(t.LatePerTick, int64(float64(i+1)*(rate-capacity)))
		} else {
			t.LatePerTick = append(t.LatePerTick, 1)
		}
	}
	if rate > capacity {
		t.P99Intended = time.Second
	}
	return t
}

func TestRateSearchFindsCapacityWithinPrecision(t *testing.T) {
	for _, capacity := range []float64{150, 1000, 7300, 52000} {
		s := RateSearch{Start: 100, Precision: 0.05, MaxTrials: 30}
		n := 0
		for {
			r, ok := s.Next()
			if !ok {
				break
			}
			n++
			s.Record(trialAt(r, capacity))
		}
		got := s.Sustainable()
		if got > capacity || got < capacity*0.95 {
			t.Errorf("capacity %.0f: sustainable %.0f, want within 5%% below (after %d trials)", capacity, got, n)
		}
		for _, tr := range s.Curve() {
			if tr.Sustained != (tr.Offered <= capacity) {
				t.Errorf("capacity %.0f: trial at %.0f judged sustained=%v (%s)", capacity, tr.Offered, tr.Sustained, tr.Why)
			}
		}
	}
}

func TestRateSearchStepsDownWhenStartFails(t *testing.T) {
	s := RateSearch{Start: 10000, MaxTrials: 30}
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		s.Record(trialAt(r, 900))
	}
	if got := s.Sustainable(); got < 855 || got > 900 {
		t.Fatalf("sustainable %.0f, want 855..900", got)
	}
}

func TestRateSearchIsBounded(t *testing.T) {
	s := RateSearch{Start: 100, MaxTrials: 4}
	n := 0
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		n++
		s.Record(trialAt(r, 1e12))
	}
	if n != 4 {
		t.Fatalf("%d trials, want the bound of 4", n)
	}
	s = RateSearch{Start: 100, Max: 1000, MaxTrials: 50}
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		if r > 1000 {
			t.Fatalf("offered %.0f above Max 1000", r)
		}
		s.Record(trialAt(r, 1e12))
	}
	if s.Sustainable() != 1000 {
		t.Fatalf("sustainable %.0f, want Max 1000", s.Sustainable())
	}
}

func TestJudge(t *testing.T) {
	o := DefaultObjective
	cases := []struct {
		t    Trial
		want bool
	}{
		{Trial{Offered: 1000, Achieved: 995, P99Intended: 5 * time.Millisecond}, true},
		{Trial{Offered: 1000, Achieved: 980, P99Intended: 5 * time.Millisecond}, false},
		{Trial{Offered: 1000, Achieved: 1000, P99Intended: 150 * time.Millisecond}, false},
		{Trial{Offered: 1000, Achieved: 1000, P99Intended: time.Millisecond, LatePerTick: []int64{0, 0, 5, 50, 100, 200}}, false},
		{Trial{Offered: 1000, Achieved: 1000, P99Intended: time.Millisecond, LatePerTick: []int64{3, 4, 2, 5, 3, 4}}, true},
	}
	for i, c := range cases {
		o.Judge(&c.t)
		if c.t.Sustained != c.want {
			t.Errorf("case %d: sustained=%v (%s), want %v", i, c.t.Sustained, c.t.Why, c.want)
		}
		if !c.t.Sustained && c.t.Why == "" {
			t.Errorf("case %d: no reason for the verdict", i)
		}
	}
}

// One stall fails a single trial below what the target sustains: the rate
// is tried once more, and the search does not collapse below capacity.
func TestRateSearchRetriesAFailedRateOnce(t *testing.T) {
	s := RateSearch{Start: 500, Precision: 0.05, MaxTrials: 30}
	stalls := 1
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		tr := trialAt(r, 3000)
		if r == 1000 && stalls > 0 {
			stalls-- // a neighbour's burst: this one trial misses
			tr.Achieved, tr.P99Intended = r*0.9, time.Second
		}
		s.Record(tr)
	}
	if got := s.Sustainable(); got < 2850 || got > 3000 {
		t.Fatalf("sustainable %.0f after one stalled trial at 1000/s, want 2850..3000; trials %+v", got, s.Curve())
	}
	n := 0
	for _, tr := range s.Curve() {
		if tr.Offered == 1000 {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("1000/s tried %d times, want the failure confirmed once", n)
	}
}

func TestConvergedTellsABracketFromSpentTrials(t *testing.T) {
	s := RateSearch{Start: 500, Precision: 0.05, MaxTrials: 3}
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		s.Record(trialAt(r, 3000))
	}
	if s.Converged() {
		t.Fatalf("3 trials (%+v) cannot narrow 500..3000 to 5%%, yet converged", s.Curve())
	}
	s = RateSearch{Start: 500, Precision: 0.05, MaxTrials: 40}
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		s.Record(trialAt(r, 3000))
	}
	good, bad := s.Bracket()
	if !s.Converged() || (bad-good)/good > 0.05 {
		t.Fatalf("not converged with bracket %.0f..%.0f", good, bad)
	}
}
