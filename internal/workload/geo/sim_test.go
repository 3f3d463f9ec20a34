package geo

import (
	"testing"
)

// The same seed, user and minute give the same point whatever was asked
// before; another seed gives another city.
func TestSimDeterministic(t *testing.T) {
	a := Sim{Seed: 7, Users: 50, GroupSize: 4}
	b := Sim{Seed: 7, Users: 50, GroupSize: 4}
	var pts []Point
	for i := int64(0); i < 5000; i++ {
		pts = append(pts, a.Index(i))
	}
	for i := int64(4999); i >= 0; i-- {
		if got := b.Index(i); got != pts[i] {
			t.Fatalf("point %d: %+v then %+v", i, pts[i], got)
		}
	}
	c := Sim{Seed: 8, Users: 50, GroupSize: 4}
	same := 0
	for i := int64(0); i < 5000; i++ {
		if c.Index(i) == pts[i] {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seed 8 repeats %d points of seed 7", same)
	}
	if p := pts[123]; p.User != 123%50 || p.TS != TS(123/50) {
		t.Errorf("point 123 is %+v: want user %d, minute %d", p, 123%50, 123/50)
	}
}

// Users stay in the city and move at plausible city speeds: no more than
// 200 m from one minute to the next (12 km/h between places, ±12 m wander).
func TestSimMovesPlausibly(t *testing.T) {
	s := Sim{Seed: 3, Users: 40, GroupSize: 4}
	moved := 0.0
	for u := int64(0); u < s.Users; u++ {
		prev := s.At(u, 0)
		for m := int64(1); m < 3*24*60; m++ {
			p := s.At(u, m)
			x, y := Meters(p.Lat, p.Lon)
			if x < -1e-6 || y < -1e-6 || x > Size+1e-6 || y > Size+1e-6 {
				t.Fatalf("user %d at minute %d is out of the city: %.1f, %.1f m", u, m, x, y)
			}
			d := Dist(prev, p)
			if d > 200 {
				t.Fatalf("user %d moved %.0f m in the minute to %d", u, d, m)
			}
			moved += d
			prev = p
		}
	}
	if perDay := moved / float64(s.Users) / 3; perDay < 5000 {
		t.Errorf("users move %.0f m a day on average: hardly moving", perDay)
	}
}

// The reference finds every group mate of a user (groups meet within a
// day) and the rule holds: each contact was within the distance for the
// minimum run; Correlate on every point of a day gives the same answer as
// the brute force; and users of different groups meet by chance only.
func TestReferenceCorrelations(t *testing.T) {
	s := Sim{Seed: 11, Users: 40, GroupSize: 4}
	rule := Rule{Meters: 100, MinMinutes: 15}
	h := Held{Points: 2 * 24 * 60 * s.Users, Cutoff: TS(24 * 60)}
	from, to := h.Cutoff, TS(2*24*60)
	var all []Point
	for m := Minute(from); m < Minute(to); m++ {
		for v := int64(0); v < s.Users; v++ {
			all = append(all, s.At(v, m))
		}
	}
	chance := 0
	for u := int64(0); u < s.Users; u += 3 {
		want := s.Correlations(h, u, from, to, rule)
		mates := map[int64]bool{}
		for _, c := range want {
			if c.Minutes < rule.MinMinutes || c.User == u {
				t.Fatalf("user %d: contact %+v breaks the rule", u, c)
			}
			if c.User/s.GroupSize == u/s.GroupSize {
				mates[c.User] = true
			} else {
				chance++
			}
		}
		if len(mates) != int(s.GroupSize)-1 {
			t.Errorf("user %d: %d group mates among its contacts %v", u, len(mates), want)
		}
		track := s.Timeline(h, u, from, to)
		if len(track) != 24*60 {
			t.Fatalf("user %d: timeline of %d points over a day", u, len(track))
		}
		if got := Correlate(track, all, rule); !equalContacts(got, want) {
			t.Fatalf("user %d: Correlate %v, brute force %v", u, got, want)
		}
	}
	if chance > int(s.Users)/3 {
		t.Errorf("%d chance contacts among %d users in a day: the city is too crowded", chance, s.Users)
	}
}

// What a store must hold follows the ingest count and the GC cutoff.
func TestHeld(t *testing.T) {
	s := Sim{Seed: 1, Users: 10}
	h := Held{Points: 1005, Cutoff: TS(30) + 1}
	if got := s.Count(h); got != 1005-31*10 {
		t.Errorf("count %d", got)
	}
	if s.Has(h, 5, 100) || !s.Has(h, 4, 100) || !s.Has(h, 5, 99) || s.Has(h, 3, 30) || !s.Has(h, 3, 31) || s.Has(h, 10, 50) {
		t.Errorf("Has wrong around the edges")
	}
	if got := len(s.Timeline(h, 2, 0, TS(1000))); got != 70 {
		t.Errorf("timeline of user 2: %d points, want 70 (minutes 31..100)", got)
	}
}
