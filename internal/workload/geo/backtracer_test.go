package geo

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target/targettest"
)

// refMixer is a brute-force reference of geo-backtracer's correlation,
// transcribed statement by statement from its C++ (mixer.cc
// GetUserNearbyFolks and BuildKeysToSearchAroundPoint, seeker.cc
// InternalBuildBlockForUser, nearby_folk.cc IsNearbyFolk, zones.cc), over
// every stored piece: no index, no candidate selection. It returns every
// other user's score (including those below the threshold).
func refMixer(db []Span, user int64, nearbySec int64, nearbyDeg float32) map[int64]int {
	zone := func(x float32) float32 { // GPSLocationToGPSZone
		return float32(float32(math.Floor(float64(float32(x*1000.0)))) / 1000.0)
	}
	tsZone := func(ts int64) int64 { return ts / 1000 }
	type dbKey struct {
		ts       int64
		lon, lat float32
	}
	var timeline []Span
	for _, s := range db {
		if s.User == user {
			timeline = append(timeline, s)
		}
	}
	scores := map[int64]int{}
	for _, point := range timeline {
		// BuildKeysToSearchAroundPoint.
		tss := []int64{tsZone(point.TS)}
		if point.TS%1000 < 30 {
			tss = append(tss, tsZone(point.TS)-1)
		} else if 1000-point.TS%1000 < 30 {
			tss = append(tss, tsZone(point.TS)+1)
		}
		near := func(x float32) []float32 {
			out := []float32{zone(x)}
			if float32(x-zone(x)) <= float32(4.0*0.000001) {
				out = append(out, float32(zone(x)-0.001))
			}
			if float32(float32(zone(x)+0.001)-x) <= float32(4.0*0.000001) {
				out = append(out, float32(zone(x)+0.001))
			}
			return out
		}
		var keys []dbKey
		for _, t := range tss {
			for _, lon := range near(point.Lon) {
				for _, lat := range near(point.Lat) {
					keys = append(keys, dbKey{t * 1000, lon, lat})
				}
			}
		}
		// InternalBuildBlockForUser for each key: the pieces of its block.
		var userEntries, folkEntries []Span
		for _, k := range keys {
			for _, s := range db {
				if s.TS < k.ts || s.TS > k.ts+1000-1 || zone(s.Lon) != k.lon || zone(s.Lat) != k.lat {
					continue
				}
				if s.User == user {
					userEntries = append(userEntries, s)
				} else {
					folkEntries = append(folkEntries, s)
				}
			}
		}
		// IsNearbyFolk on every pair.
		for _, u := range userEntries {
			for _, f := range folkEntries {
				ub, ue := u.TS, u.TS+u.Dur
				nb, ne := f.TS-nearbySec, f.TS+f.Dur+nearbySec
				ts := (ub >= nb && ub <= ne) || (ue >= nb && ue <= ne) || (nb >= ub && nb <= ue) || (ne >= ub && ne <= ue)
				lon := float32(math.Abs(float64(float32(u.Lon-f.Lon)))) < nearbyDeg
				lat := float32(math.Abs(float64(float32(u.Lat-f.Lat)))) < nearbyDeg
				alt := float32(math.Abs(float64(float32(u.Alt-f.Alt)))) < 2.0
				if ts && lon && lat && alt {
					scores[f.User]++
				}
			}
		}
	}
	return scores
}

// correlated is the pairs (user, other) whose score reaches min.
func correlated(scores map[int64]map[int64]int, min int) [][2]int64 {
	var out [][2]int64
	for u, m := range scores {
		for v, s := range m {
			if s >= min {
				out = append(out, [2]int64{u, v})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i][0] < out[j][0] || out[i][0] == out[j][0] && out[i][1] < out[j][1]
	})
	return out
}

// randomSpans are points the way geo-backtracer's client makes them
// (client.cc Wanderer: durations of 1..10 minutes, altitude 42) but
// packed: users move by a few 1e-6° around a corner of four GPS zones,
// with timestamps at any second across several time zones, so that
// pairs fall on both sides of every border of the rule.
func randomSpans(seed uint64, users, perUser int) []Span {
	rng := rand.New(rand.NewPCG(seed, 7))
	var db []Span
	for u := 0; u < users; u++ {
		ts := int64(1584316000 + rng.IntN(600))
		lat, lon := 48.824+(rng.Float64()-0.5)*2e-5, 2.3+(rng.Float64()-0.5)*2e-5
		for i := 0; i < perUser; i++ {
			dur := int64(60 * (1 + rng.IntN(10)))
			if rng.IntN(3) == 0 {
				dur = int64(1 + rng.IntN(120)) // short spans: gaps at any second
			}
			db = append(db, Pieces(Span{User: int64(u), TS: ts, Dur: dur, Lat: float32(lat), Lon: float32(lon), Alt: BTAltitude})...)
			ts += dur + int64(rng.IntN(40))
			lat += (rng.Float64() - 0.5) * 6e-6
			lon += (rng.Float64() - 0.5) * 6e-6
		}
	}
	return db
}

// scoresOf runs BTCorrelate (with every other user's pieces as what a
// store returned) for every user, at threshold 1 to get every score.
func scoresOf(db []Span, users int, r BTRule) map[int64]map[int64]int {
	r.MinScore = 1
	out := map[int64]map[int64]int{}
	for u := 0; u < users; u++ {
		var track, near []Span
		for _, s := range db {
			if s.User == int64(u) {
				track = append(track, s)
			} else {
				near = append(near, s)
			}
		}
		out[int64(u)] = map[int64]int{}
		for _, c := range BTCorrelate(track, near, r) {
			out[int64(u)][c.User] = c.Score
		}
	}
	return out
}

func refScores(db []Span, users int, sec int64, deg float32) map[int64]map[int64]int {
	out := map[int64]map[int64]int{}
	for u := 0; u < users; u++ {
		out[int64(u)] = refMixer(db, int64(u), sec, deg)
	}
	return out
}

// geo-backtracer's rule as BTCorrelate decides it equals the brute-force
// transcription of its mixer on random points: every user's scores and
// the set of correlated pairs at its threshold of 30.
func TestBTCorrelateMatchesBruteForce(t *testing.T) {
	const users, perUser = 7, 60
	pairs := 0
	for seed := uint64(1); seed <= 4; seed++ {
		db := randomSpans(seed, users, perUser)
		got, want := scoresOf(db, users, SeedBTRule()), refScores(db, users, 30, float32(4.0*0.000001))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: scores\n got %v\nwant %v", seed, got, want)
		}
		c := correlated(want, BTMinScore)
		if g := correlated(got, BTMinScore); !reflect.DeepEqual(g, c) {
			t.Fatalf("seed %d: correlated pairs %v, want %v", seed, g, c)
		}
		pairs += len(c)
	}
	t.Logf("%d pairs correlated over 4 data sets", pairs)
	if pairs == 0 {
		t.Fatal("no pair correlated in any data set: the test data proves nothing")
	}
}

// The comparison catches a rule off by one second or by 1e-6°.
func TestBTCorrelateWrongRuleIsCaught(t *testing.T) {
	const users, perUser = 7, 60
	for _, tc := range []struct {
		name string
		rule BTRule
	}{
		{"31 s", BTRule{Seconds: 31, Degrees: BTNearbyDegrees, Altitude: BTNearbyAlt}},
		{"5e-6 degrees", BTRule{Seconds: 30, Degrees: 5.0 * 0.000001, Altitude: BTNearbyAlt}},
		{"3e-6 degrees", BTRule{Seconds: 30, Degrees: 3.0 * 0.000001, Altitude: BTNearbyAlt}},
	} {
		caught := false
		for seed := uint64(1); seed <= 4 && !caught; seed++ {
			db := randomSpans(seed, users, perUser)
			caught = !reflect.DeepEqual(scoresOf(db, users, tc.rule), refScores(db, users, 30, float32(4.0*0.000001)))
		}
		t.Logf("%s: caught %v", tc.name, caught)
		if !caught {
			t.Errorf("a rule of %s gives the same scores as geo-backtracer's", tc.name)
		}
	}
}

// Through a store: points of this study (one a minute, 60 s each) packed
// within meters of each other, ingested in the seed's layout on Pebble;
// the workload's path (its timeline, Near around the minutes before and
// after, BTCorrelate) finds what the brute-force mixer finds.
func TestBTCorrelateThroughAStore(t *testing.T) {
	h := targettest.Open(t, "pebble", kv.Async)
	l := KVLayout{S: h.(kv.Store)}
	ctx := context.Background()
	if _, err := l.PrepareGeo(ctx); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	const users, minutes = 6, 90
	var pts []Point
	for u := int64(0); u < users; u++ {
		lat, lon := 48.824+(rng.Float64()-0.5)*1e-5, 2.3+(rng.Float64()-0.5)*1e-5
		for m := int64(0); m < minutes; m++ {
			pts = append(pts, Point{User: u, TS: TS(m) + 200, Lat: lat, Lon: lon})
			lat += (rng.Float64() - 0.5) * 4e-6
			lon += (rng.Float64() - 0.5) * 4e-6
		}
	}
	if err := l.InsertPoints(ctx, pts); err != nil {
		t.Fatal(err)
	}
	db := SpansOf(pts)
	found := 0
	for u := int64(0); u < users; u++ {
		var track, near []Point
		if err := l.Timeline(ctx, u, TS(0), TS(minutes+10), func(p Point) error { track = append(track, p); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := l.Near(ctx, btTrackForNear(track), BTBoxMeters, func(p Point) error { near = append(near, p); return nil }); err != nil {
			t.Fatal(err)
		}
		r := SeedBTRule()
		r.MinScore = 1
		got := map[int64]int{}
		for _, c := range BTCorrelate(SpansOf(track), SpansOf(near), r) {
			got[c.User] = c.Score
		}
		want := refMixer(db, u, 30, BTNearbyDegrees)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("user %d: scores %v, the brute-force mixer has %v", u, got, want)
		}
		found += len(got)
	}
	t.Logf("%d users with a nearby pair", found)
	if found == 0 {
		t.Fatal("no nearby pair at all: the test data proves nothing")
	}
}
