package geo

import "sort"

// The reference answers: what a store holding exactly the points of
// ingest order 0..P-1 with timestamps at or after a cutoff must answer,
// computed by brute force from the generator.

// Held describes the points a store must hold: the first P points of
// ingest order, minus those the GC removed (timestamps before Cutoff).
type Held struct {
	Points int64 // P: points ingested (ingest order 0..P-1)
	Cutoff int64 // Unix seconds: points before it were deleted
}

// Has reports whether the store holds user u's point of minute m.
func (s *Sim) Has(h Held, u, m int64) bool {
	return u >= 0 && u < s.Users && m >= 0 && m*s.Users+u < h.Points && TS(m) >= h.Cutoff
}

// LastMinute is the last minute with any point ingested (-1: none).
func (s *Sim) LastMinute(h Held) int64 {
	if h.Points == 0 {
		return -1
	}
	return (h.Points - 1) / s.Users
}

// FirstMinute is the first minute at or after the cutoff.
func FirstMinute(h Held) int64 {
	if h.Cutoff <= Epoch {
		return 0
	}
	return (h.Cutoff - Epoch + MinuteSeconds - 1) / MinuteSeconds
}

// Count is how many points the store must hold.
func (s *Sim) Count(h Held) int64 {
	gone := FirstMinute(h) * s.Users
	return max(h.Points-gone, 0)
}

// Timeline is user u's points in [from, to) that the store holds, in
// time order.
func (s *Sim) Timeline(h Held, u, from, to int64) []Point {
	var out []Point
	lo := max(FirstMinute(h), (max(from, Epoch)-Epoch+MinuteSeconds-1)/MinuteSeconds)
	for m := lo; TS(m) < to && m <= s.LastMinute(h); m++ {
		if s.Has(h, u, m) {
			out = append(out, s.At(u, m))
		}
	}
	return out
}

// Contact is one correlation: another user who was within the distance
// for at least the minimum run of consecutive minutes; Minutes is their
// longest such run.
type Contact struct {
	User    int64
	Minutes int
}

// Rule is what makes a correlation.
type Rule struct {
	Meters     float64 // within this distance (the seed's D: 100 m)
	MinMinutes int     // for at least this many consecutive minutes (15)
}

// Correlations is the reference answer for user u over [from, to):
// every other user within r.Meters for r.MinMinutes consecutive minutes
// or more, by brute force over every user and minute.
func (s *Sim) Correlations(h Held, u, from, to int64, r Rule) []Contact {
	track := s.Timeline(h, u, from, to)
	var out []Contact
	for v := int64(0); v < s.Users; v++ {
		if v == u {
			continue
		}
		best, run := 0, 0
		prev := int64(-2)
		for _, p := range track {
			m := Minute(p.TS)
			if s.Has(h, v, m) && Dist(p, s.At(v, m)) <= r.Meters {
				if m == prev+1 {
					run++
				} else {
					run = 1
				}
				prev = m
				best = max(best, run)
			}
		}
		if best >= r.MinMinutes {
			out = append(out, Contact{User: v, Minutes: best})
		}
	}
	return out
}

// Correlate turns a user's track and the nearby points a store returned
// into the correlations: the store may return points farther than the
// distance (a box around each point) but must return every one within
// it. Points of the user itself and at minutes outside the track are
// ignored.
func Correlate(track []Point, near []Point, r Rule) []Contact {
	at := make(map[int64]Point, len(track))
	for _, p := range track {
		at[p.TS] = p
	}
	close := map[int64][]int64{} // user -> minutes within the distance
	for _, q := range near {
		p, ok := at[q.TS]
		if !ok || q.User == p.User || Dist(p, q) > r.Meters {
			continue
		}
		close[q.User] = append(close[q.User], Minute(q.TS))
	}
	var out []Contact
	for v, ms := range close {
		sort.Slice(ms, func(i, j int) bool { return ms[i] < ms[j] })
		best, run := 0, 0
		for i, m := range ms {
			switch {
			case i > 0 && m == ms[i-1]:
				continue // a store returned the same point twice: counted once
			case i > 0 && m == ms[i-1]+1:
				run++
			default:
				run = 1
			}
			best = max(best, run)
		}
		if best >= r.MinMinutes {
			out = append(out, Contact{User: v, Minutes: best})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out
}
