package geo

import (
	"math"
	"sort"
	"sync"
)

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

// track is one query user's points indexed by minute from lo: the
// reference's view of a timeline, so that a minute's point is found
// without a map.
type track struct {
	lo  int64
	at  []Point
	has []bool
}

func (s *Sim) trackOf(h Held, u, from, to int64) (t track, pts []Point) {
	pts = s.Timeline(h, u, from, to)
	if len(pts) == 0 {
		return t, nil
	}
	t.lo = Minute(pts[0].TS)
	n := Minute(pts[len(pts)-1].TS) - t.lo + 1
	t.at, t.has = make([]Point, n), make([]bool, n)
	for _, p := range pts {
		i := Minute(p.TS) - t.lo
		t.at[i], t.has[i] = p, true
	}
	return t, pts
}

// point is the track's point at minute m, if it has one.
func (t *track) point(m int64) (Point, bool) {
	i := m - t.lo
	if i < 0 || i >= int64(len(t.has)) || !t.has[i] {
		return Point{}, false
	}
	return t.at[i], true
}

// RefQuery is what a batched reference answers: the contacts of each of
// Users over the minutes [From, To] of the points Held, by brute force
// split over Parts goroutines. Stop, checked once per user, ends it
// early (the caller then discards the answer).
type RefQuery struct {
	Held     Held
	Users    []int64
	From, To int64
	Parts    int
	Stop     func() bool
}

// parts is the goroutines the brute force is split over: Parts, at
// least one and at most one per user.
func (q RefQuery) parts(s *Sim) int { return max(1, min(q.Parts, int(s.Users))) }

// eachOtherPoint is the brute force shared by the batched references:
// every user's point at every minute of [lo, hi] that the store holds
// (rq.Held), each generated once for all the query users, split by user
// over rq's parts goroutines. begin(part, v) comes before user v's
// points; fn(part, v, p) sees user v's points in minute order, users in
// increasing order within a part, parts covering increasing user
// ranges. It stops early when rq.Stop returns true (checked once per
// user).
func (s *Sim) eachOtherPoint(rq RefQuery, lo, hi int64, begin func(part int, v int64), fn func(part int, v int64, p Point)) {
	h, stop, parts := rq.Held, rq.Stop, rq.parts(s)
	var wg sync.WaitGroup
	for part := 0; part < parts; part++ {
		vlo, vhi := s.Users*int64(part)/int64(parts), s.Users*int64(part+1)/int64(parts)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := vlo; v < vhi; v++ {
				if stop() {
					return
				}
				begin(part, v)
				for m := max(lo, 0); m <= hi; m++ {
					if s.Has(h, v, m) {
						fn(part, v, s.At(v, m))
					}
				}
			}
		}()
	}
	wg.Wait()
}

// CorrelationsAll is Correlations for each of rq's users at once, over
// the same window: the same brute force over every user and minute (each
// other user's point generated once for all of them rather than once
// per query user), split over rq's parts goroutines.
func (s *Sim) CorrelationsAll(rq RefQuery, r Rule) [][]Contact {
	users := rq.Users
	tracks := make([]track, len(users))
	lo, hi := int64(math.MaxInt64), int64(-1)
	for i, u := range users {
		t, pts := s.trackOf(rq.Held, u, rq.From, rq.To)
		tracks[i] = t
		if len(pts) > 0 {
			lo, hi = min(lo, t.lo), max(hi, t.lo+int64(len(t.has))-1)
		}
	}
	parts := rq.parts(s)
	type state struct{ best, run, prev int }
	st := make([][]state, parts)
	found := make([][][]Contact, parts) // part -> query -> contacts
	last := make([]int64, parts)        // the user each part saw last (-1: none yet)
	for p := range st {
		st[p] = make([]state, len(users))
		found[p] = make([][]Contact, len(users))
		last[p] = -1
		for i := range users {
			st[p][i] = state{prev: -2}
		}
	}
	// flush records what user v's run gave each query user and starts
	// the next user's.
	flush := func(part int, v int64) {
		for i := range users {
			if st[part][i].best >= r.MinMinutes && v >= 0 {
				found[part][i] = append(found[part][i], Contact{User: v, Minutes: st[part][i].best})
			}
			st[part][i] = state{prev: -2}
		}
	}
	s.eachOtherPoint(rq, lo, hi, func(part int, v int64) {
		flush(part, last[part])
		last[part] = v
	}, func(part int, v int64, q Point) {
		m := Minute(q.TS)
		for i, u := range users {
			if v == u {
				continue
			}
			p, ok := tracks[i].point(m)
			if !ok || Dist(p, q) > r.Meters {
				continue
			}
			c := &st[part][i]
			if int64(c.prev) == m-1 {
				c.run++
			} else {
				c.run = 1
			}
			c.prev = int(m)
			c.best = max(c.best, c.run)
		}
	})
	out := make([][]Contact, len(users))
	for p := range found {
		flush(p, last[p])
		for i := range users {
			out[i] = append(out[i], found[p][i]...)
		}
	}
	return out
}

// BTCorrelationsAll is BTCorrelations for each of rq's users at once:
// the same brute force, each other user's point generated once for all
// of them, split over rq's parts goroutines.
func (s *Sim) BTCorrelationsAll(rq RefQuery, r BTRule) [][]BTContact {
	users := rq.Users
	tracks := make([]track, len(users))
	spans := make([][]Point, len(users))
	lo, hi := int64(math.MaxInt64), int64(-1)
	for i, u := range users {
		t, pts := s.trackOf(rq.Held, u, rq.From, rq.To)
		tracks[i], spans[i] = t, pts
		if len(pts) > 0 {
			lo, hi = min(lo, t.lo-1), max(hi, t.lo+int64(len(t.has)))
		}
	}
	parts := rq.parts(s)
	near := make([][][]Point, parts) // part -> query -> points
	for p := range near {
		near[p] = make([][]Point, len(users))
	}
	const reach = 1e-5
	s.eachOtherPoint(rq, lo, hi, func(int, int64) {}, func(part int, v int64, q Point) {
		m := Minute(q.TS)
		for i, u := range users {
			if v == u || len(spans[i]) == 0 {
				continue
			}
			// BTCorrelations looks one minute either side of the track's ends.
			if m < tracks[i].lo-1 || m > tracks[i].lo+int64(len(tracks[i].has)) {
				continue
			}
			for d := int64(-1); d <= 1; d++ {
				if p, ok := tracks[i].point(m + d); ok && math.Abs(p.Lat-q.Lat) < reach && math.Abs(p.Lon-q.Lon) < reach {
					near[part][i] = append(near[part][i], q)
					break
				}
			}
		}
	})
	out := make([][]BTContact, len(users))
	for i := range users {
		if len(spans[i]) == 0 {
			continue
		}
		var all []Point
		for p := range near {
			all = append(all, near[p][i]...)
		}
		out[i] = BTCorrelate(SpansOf(spans[i]), SpansOf(all), r)
	}
	return out
}
