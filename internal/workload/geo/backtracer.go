package geo

import (
	"math"
	"sort"
)

// geo-backtracer's correlation rule, transcribed from its source
// (github.com/aimxhaisse/geo-backtracer at 9d150b8: server/zones.h, which
// replaced server/constants.h; server/nearby_folk.cc; server/pusher.cc;
// server/seeker.cc; server/mixer.cc GetUserNearbyFolks). Seed 002 measures
// that system; storebench's own rule (Rule: 100 m for 15 consecutive
// minutes) is a different question, and the two are run side by side.
//
// What geo-backtracer does, and what is done here the same way:
//
//   - A point is a span: timestamp and duration. The pusher splits a point
//     whose span crosses a 1000 s time zone (kTimePrecision) into one piece
//     per zone. Here every point lasts until the user's next one (60 s,
//     BTDuration), so a point crossing a zone boundary becomes two pieces.
//   - Two pieces are nearby (IsNearbyFolk) when the user's span overlaps the
//     other's widened by ±30 s (kTimeNearbyApproximation, the correlator's
//     nearby_seconds), and latitude and longitude differ by less than
//     4e-6 degrees (kGPSZoneNearbyApproximation, "about 4.4 meters, which
//     corresponds to GPS' precision"), and altitude by less than 2 m
//     (kGPSNearbyAltitude). Coordinates are float32 (its DbValue) and the
//     differences are taken in float32, as the C++ does. The seed's client
//     sends every point at altitude 42.0; so does this rule (BTAltitude).
//   - The mixer walks the user's timeline; for each piece p it reads the
//     blocks (1000 s time zone × 0.001° longitude zone × 0.001° latitude
//     zone, float32) of p, plus the previous or next time zone when p
//     starts within 30 s of its border and the previous or next GPS zone
//     when p lies within 4e-6° of its border (BuildKeysToSearchAroundPoint).
//     Those blocks' pieces of the user and of everyone else are compared
//     pairwise, and every nearby pair adds one to the other user's score.
//     A pair is thus counted once per timeline piece whose blocks hold
//     both pieces (the mixer's "naive implementation"): that multiplicity
//     is part of the rule as geo-backtracer decides it, and kept.
//   - A user correlates when the score reaches 30 (kMinutesToMatch,
//     "minutes_to_match").
//
// A block is found only when its zone values are equal to the searched
// ones as float32 (the seeker's end-of-zone test compares them with !=),
// so blocks are compared here as float32 values too.

// geo-backtracer's constants.
const (
	BTNearbySeconds int64   = 30             // kTimeNearbyApproximation (correlator.nearby_seconds)
	BTNearbyDegrees float32 = 4.0 * 0.000001 // kGPSZoneNearbyApproximation: 4e-6°
	BTNearbyAlt     float32 = 2.0            // kGPSNearbyAltitude, meters
	BTMinScore              = 30             // kMinutesToMatch (correlator.minutes_to_match)
	BTTimeZone      int64   = 1000           // kTimePrecision, seconds
	btZonePrecision float32 = 1000.0         // kGPSZonePrecision
	btZoneDistance  float32 = 0.001          // kGPSZoneDistance
	btBorderSeconds int64   = 30             // TsIsNearZone's literal 30
	btBorderDegrees float32 = 4.0 * 0.000001 // GPSIsNearZone: kGPSZoneNearbyApproximation
	// BTAltitude is every point's altitude, as geo-backtracer's client sends it.
	BTAltitude float32 = 42.0
	// BTDuration is a point's duration here: one point a simulated minute.
	BTDuration = MinuteSeconds
)

// BTRule is geo-backtracer's correlation rule with its parameters (the
// correlator's config); SeedBTRule is its defaults.
type BTRule struct {
	Seconds  int64   // nearby_seconds: ± seconds around the other's span
	Degrees  float32 // nearby_gps_distance: latitude and longitude, each
	Altitude float32 // meters
	MinScore int     // minutes_to_match: the score a correlation needs
}

// SeedBTRule is geo-backtracer's rule as it ships.
func SeedBTRule() BTRule {
	return BTRule{Seconds: BTNearbySeconds, Degrees: BTNearbyDegrees, Altitude: BTNearbyAlt, MinScore: BTMinScore}
}

// Span is one stored piece of a point, as geo-backtracer holds it.
type Span struct {
	User          int64
	TS, Dur       int64
	Lat, Lon, Alt float32
}

// BTBlock is one block of geo-backtracer's timeline column: a time zone
// and a longitude and latitude zone (float32, compared exactly).
type BTBlock struct {
	TZ       int64
	Lon, Lat float32
}

func btTZ(ts int64) int64 {
	if ts < 0 {
		return (ts - BTTimeZone + 1) / BTTimeZone
	}
	return ts / BTTimeZone
}

// btZone is GPSLocationToGPSZone: floor(x * 1000) / 1000 in float32.
func btZone(x float32) float32 {
	return float32(float32(math.Floor(float64(float32(x*btZonePrecision)))) / btZonePrecision)
}

// Block is the block a piece is stored in (pusher.cc's keys).
func (s Span) Block() BTBlock { return BTBlock{TZ: btTZ(s.TS), Lon: btZone(s.Lon), Lat: btZone(s.Lat)} }

// Pieces splits a span at the time zones' borders, as the pusher does.
func Pieces(s Span) []Span {
	var out []Span
	ts, end := s.TS, s.TS+s.Dur
	for {
		next := min(end, (btTZ(ts)+1)*BTTimeZone)
		p := s
		p.TS, p.Dur = ts, next-ts
		out = append(out, p)
		ts = next
		if ts >= end {
			return out
		}
	}
}

// SpansOf turns this study's points (one a minute) into geo-backtracer's
// pieces: each lasts BTDuration, at altitude BTAltitude, float32 coordinates.
func SpansOf(pts []Point) []Span {
	out := make([]Span, 0, len(pts)+len(pts)/16)
	for _, p := range pts {
		out = append(out, Pieces(Span{User: p.User, TS: p.TS, Dur: BTDuration, Lat: float32(p.Lat), Lon: float32(p.Lon), Alt: BTAltitude})...)
	}
	return out
}

func abs32(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// Nearby is IsNearbyFolk: the user's piece u against another's piece f.
func (r BTRule) Nearby(u, f Span) bool {
	ub, ue := u.TS, u.TS+u.Dur
	nb, ne := f.TS-r.Seconds, f.TS+f.Dur+r.Seconds
	ts := (ub >= nb && ub <= ne) || (ue >= nb && ue <= ne) || (nb >= ub && nb <= ue) || (ne >= ub && ne <= ue)
	return ts && abs32(float32(u.Lon-f.Lon)) < r.Degrees && abs32(float32(u.Lat-f.Lat)) < r.Degrees &&
		abs32(float32(u.Alt-f.Alt)) < r.Altitude
}

// btZonesAround is the zone of x and the neighbour it is within 4e-6° of
// (GPSIsNearZone, GPSPreviousZone, GPSNextZone).
func btZonesAround(x float32) []float32 {
	z := btZone(x)
	out := []float32{z}
	if float32(x-z) <= btBorderDegrees {
		return append(out, float32(z-btZoneDistance))
	}
	if next := float32(z + btZoneDistance); float32(next-x) <= btBorderDegrees {
		out = append(out, next)
	}
	return out
}

// SearchBlocks is the blocks the mixer reads around a timeline piece
// (BuildKeysToSearchAroundPoint).
func SearchBlocks(p Span) []BTBlock {
	tz := []int64{btTZ(p.TS)}
	switch off := p.TS - btTZ(p.TS)*BTTimeZone; {
	case off < btBorderSeconds:
		tz = append(tz, tz[0]-1)
	case BTTimeZone-off < btBorderSeconds:
		tz = append(tz, tz[0]+1)
	}
	var out []BTBlock
	for _, t := range tz {
		for _, lon := range btZonesAround(p.Lon) {
			for _, lat := range btZonesAround(p.Lat) {
				out = append(out, BTBlock{TZ: t, Lon: lon, Lat: lat})
			}
		}
	}
	return out
}

// BTContact is a user geo-backtracer correlates, with its score.
type BTContact struct {
	User  int64
	Score int
}

// BTCorrelate decides, as geo-backtracer's mixer does, which users
// correlate with the user of track (every piece of that user the store
// holds): near must hold every piece of another user that is nearby a
// piece of track (more is fine, duplicates too). Each nearby pair counts
// once per piece of track whose search blocks hold both pieces.
func BTCorrelate(track, near []Span, r BTRule) []BTContact {
	if len(track) == 0 {
		return nil
	}
	// Candidates, once each, by their block.
	type key struct {
		user, ts, dur int64
	}
	seen := map[key]bool{}
	byTZ := map[int64][]Span{} // candidates by time zone
	for _, f := range near {
		k := key{f.User, f.TS, f.Dur}
		if f.User == track[0].User || seen[k] {
			continue
		}
		seen[k] = true
		byTZ[btTZ(f.TS)] = append(byTZ[btTZ(f.TS)], f)
	}
	// For each timeline piece p: the blocks it searches.
	search := make([]map[BTBlock]bool, len(track))
	for i, p := range track {
		search[i] = map[BTBlock]bool{}
		for _, b := range SearchBlocks(p) {
			search[i][b] = true
		}
	}
	scores := map[int64]int{}
	for _, q := range track {
		bq := q.Block()
		for tz := btTZ(q.TS) - 1; tz <= btTZ(q.TS)+1; tz++ {
			for _, f := range byTZ[tz] {
				if !r.Nearby(q, f) {
					continue
				}
				bf := f.Block()
				for i := range track {
					if search[i][bq] && search[i][bf] {
						scores[f.User]++
					}
				}
			}
		}
	}
	var out []BTContact
	for u, s := range scores {
		if s >= r.MinScore {
			out = append(out, BTContact{User: u, Score: s})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out
}

// btTrackForNear is the track a store's Near must be asked with so that it
// returns every point nearby under r: each point at its own minute and at
// the minutes before and after (a 60 s piece, widened by r.Seconds < 60,
// reaches no further), in a box that holds r.Degrees in float32 (BTBox).
func btTrackForNear(track []Point) []Point {
	out := make([]Point, 0, 3*len(track))
	for _, p := range track {
		for _, d := range []int64{-MinuteSeconds, 0, MinuteSeconds} {
			q := p
			q.TS += d
			out = append(out, q)
		}
	}
	return out
}

// BTBoxMeters is the half-side of the box Near is asked for under
// geo-backtracer's rule: 4e-6° is 0.45 m of latitude; float32 rounding at
// this city's latitude (an ulp is 3.8e-6°) can double it; 2 m holds both.
const BTBoxMeters = 2.0

// BTCorrelations is the reference answer under geo-backtracer's rule for
// user u over [from, to), by brute force over every other user's points
// at the minutes around each of u's (those farther than 1e-5° from every
// track point at the minutes around theirs cannot be nearby and are left
// out before the pairwise count).
func (s *Sim) BTCorrelations(h Held, u, from, to int64, r BTRule) []BTContact {
	trackPts := s.Timeline(h, u, from, to)
	if len(trackPts) == 0 {
		return nil
	}
	at := make(map[int64]Point, len(trackPts))
	for _, p := range trackPts {
		at[Minute(p.TS)] = p
	}
	lo, hi := Minute(trackPts[0].TS)-1, Minute(trackPts[len(trackPts)-1].TS)+1
	const reach = 1e-5
	var near []Point
	for v := int64(0); v < s.Users; v++ {
		if v == u {
			continue
		}
		for m := max(lo, 0); m <= hi; m++ {
			if !s.Has(h, v, m) {
				continue
			}
			q := s.At(v, m)
			for d := int64(-1); d <= 1; d++ {
				if p, ok := at[m+d]; ok && math.Abs(p.Lat-q.Lat) < reach && math.Abs(p.Lon-q.Lon) < reach {
					near = append(near, q)
					break
				}
			}
		}
	}
	return BTCorrelate(SpansOf(trackPts), SpansOf(near), r)
}
