package geo

import (
	"math"

	"storebench/internal/workload/gen"
)

// The simulation: U users in a city of Size × Size meters, each emitting
// one point per simulated minute. Everything is a pure function of the
// seed, the user and the minute (O(1) time and memory per point), so the
// workload never holds the data set and can recompute any point to check
// what an engine returns.
//
// Movement: every simulated hour j a user has a place (an anchor) within
// 2 km of their home; they stay at it for the first Stay minutes of the
// hour (wandering a few meters) then walk in a straight line to the next
// hour's place. Users form groups of GroupSize; in some hours (one in
// three) a group meets: each member's anchor is then the group's meeting
// place, a few meters apart, so the members are within tens of meters of
// each other for at least Stay minutes: the correlations a contact tracer
// must find. Chance encounters of other users happen as in a real city.

// Epoch is simulated minute 0, in Unix seconds (2020-03-16 00:00 UTC,
// when contact tracing became a question).
const Epoch int64 = 1584316800

// MinuteSeconds is the simulated interval between two points of a user.
const MinuteSeconds int64 = 60

const (
	// Lat0, Lon0: the city's south-west corner (Paris' 10 km square).
	Lat0 = 48.815
	Lon0 = 2.28
	// Size is the side of the city in meters.
	Size = 10000.0
	// metersPerDegLat converts latitude degrees to meters (equirectangular
	// projection around Lat0: exact enough over 10 km, and every distance
	// in storebench is computed with this same projection).
	metersPerDegLat = 111320.0
	// Stay is how many minutes of each hour a user stays at the hour's place.
	Stay = 20
	// homeRadius bounds how far a user's places are from home.
	homeRadius = 2000.0
	// jitter is the per-minute wander around a place (± meters per axis).
	jitter = 12.0
	// meetOffset is how far a member stands from the meeting place (± m per axis).
	meetOffset = 12.0
)

var metersPerDegLon = metersPerDegLat * math.Cos(Lat0*math.Pi/180)

// Point is one GPS point: the user, the time (Unix seconds, simulated)
// and the position.
type Point struct {
	User     int64
	TS       int64
	Lat, Lon float64
}

// Sim generates the points of one run.
type Sim struct {
	Seed      uint64
	Users     int64
	GroupSize int64
}

// Minute is the simulated minute of a timestamp.
func Minute(ts int64) int64 { return (ts - Epoch) / MinuteSeconds }

// TS is the timestamp of simulated minute m.
func TS(m int64) int64 { return Epoch + m*MinuteSeconds }

// unit is a uniform value in [0, 1) from a hash.
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// signed is a uniform value in [-1, 1) from a hash.
func signed(h uint64) float64 { return 2*unit(h) - 1 }

func clamp(v float64) float64 { return math.Min(math.Max(v, 0), Size) }

// disc is a point within radius r of (cx, cy), drawn from h.
func disc(h uint64, cx, cy, r float64) (float64, float64) {
	a := 2 * math.Pi * unit(h)
	d := r * math.Sqrt(unit(gen.SplitMix(h)))
	return clamp(cx + d*math.Cos(a)), clamp(cy + d*math.Sin(a))
}

const (
	tagHome = iota + 1
	tagAnchor
	tagMeet
	tagMeetPlace
	tagOffset
	tagJitter
)

// home is where user u's places are drawn around: within 1 km of their
// group's centre, so that a group's members live in one part of the city.
func (s *Sim) home(u int64) (float64, float64) {
	g := u / max(s.GroupSize, 1)
	h := gen.Mix(s.Seed, tagHome, uint64(g))
	cx, cy := 1500+unit(h)*(Size-3000), 1500+unit(gen.SplitMix(h))*(Size-3000)
	return disc(gen.Mix(s.Seed, tagHome, uint64(g), uint64(u)), cx, cy, 1000)
}

// Meets reports whether user u's group meets in hour j.
func (s *Sim) Meets(u, j int64) bool {
	if s.GroupSize < 2 {
		return false
	}
	g := u / s.GroupSize
	// The last group may be incomplete; a group of one meets nobody.
	if (g+1)*s.GroupSize > s.Users && s.Users-g*s.GroupSize < 2 {
		return false
	}
	return gen.Mix(s.Seed, tagMeet, uint64(g), uint64(j))%3 == 0
}

// anchor is user u's place in hour j, in meters from the south-west corner.
func (s *Sim) anchor(u, j int64) (float64, float64) {
	if s.Meets(u, j) {
		g := u / s.GroupSize
		// The meeting place is near the first member's home.
		hx, hy := s.home(g * s.GroupSize)
		mx, my := disc(gen.Mix(s.Seed, tagMeetPlace, uint64(g), uint64(j)), hx, hy, homeRadius)
		o := gen.Mix(s.Seed, tagOffset, uint64(u), uint64(j))
		return clamp(mx + meetOffset*signed(o)), clamp(my + meetOffset*signed(gen.SplitMix(o)))
	}
	hx, hy := s.home(u)
	return disc(gen.Mix(s.Seed, tagAnchor, uint64(u), uint64(j)), hx, hy, homeRadius)
}

// XY is where user u is at minute m, in meters.
func (s *Sim) XY(u, m int64) (float64, float64) {
	j, k := m/60, m%60
	x, y := s.anchor(u, j)
	if k >= Stay {
		nx, ny := s.anchor(u, j+1)
		f := float64(k-Stay) / float64(60-Stay)
		x, y = x+(nx-x)*f, y+(ny-y)*f
	}
	h := gen.Mix(s.Seed, tagJitter, uint64(u), uint64(m))
	return clamp(x + jitter*signed(h)), clamp(y + jitter*signed(gen.SplitMix(h)))
}

// At is user u's point at minute m.
func (s *Sim) At(u, m int64) Point {
	x, y := s.XY(u, m)
	return Point{User: u, TS: TS(m), Lat: Lat0 + y/metersPerDegLat, Lon: Lon0 + x/metersPerDegLon}
}

// Index is the point of ingest order i: minute i/U, user i%U (every user
// emits the point of a minute before anyone emits the next minute's).
func (s *Sim) Index(i int64) Point { return s.At(i%s.Users, i/s.Users) }

// Meters converts a point's position to meters from the south-west corner.
func Meters(lat, lon float64) (x, y float64) {
	return (lon - Lon0) * metersPerDegLon, (lat - Lat0) * metersPerDegLat
}

// Dist is the distance in meters between two positions (the projection's
// Euclidean distance: every engine's answer is judged with it).
func Dist(a, b Point) float64 {
	dx := (a.Lon - b.Lon) * metersPerDegLon
	dy := (a.Lat - b.Lat) * metersPerDegLat
	return math.Hypot(dx, dy)
}

// Box is the latitude/longitude box of half-side r meters around p, a
// little wider than exact (a store may return more points than the ones
// within r, never fewer: the workload keeps those within r itself).
func Box(p Point, r float64) (latLo, latHi, lonLo, lonHi float64) {
	dLat := r/metersPerDegLat*1.001 + 1e-9
	dLon := r/metersPerDegLon*1.001 + 1e-9
	return p.Lat - dLat, p.Lat + dLat, p.Lon - dLon, p.Lon + dLon
}

// ZoneMeters is the side of a zone of the seed's layout.
const ZoneMeters = 100.0

// BlockSeconds is the length of a time block of the seed's layout.
const BlockSeconds int64 = 1000

// Zone is the zone of a position: its column and row, 100 m each.
func Zone(lat, lon float64) (zx, zy int32) {
	x, y := Meters(lat, lon)
	return int32(math.Floor(math.Max(x, -ZoneMeters) / ZoneMeters)), int32(math.Floor(math.Max(y, -ZoneMeters) / ZoneMeters))
}

// Block is the time block of a timestamp.
func Block(ts int64) int64 {
	if ts < 0 {
		return (ts - BlockSeconds + 1) / BlockSeconds
	}
	return ts / BlockSeconds
}

// Cell is one zone of one time block: the unit the seed's layout (and
// the Cassandra and Redis layouts after it) stores a block's points by.
type Cell struct {
	Block  int64
	ZX, ZY int32
}

// CellSpan is a cell a correlation must read, over the span [From, To]
// of the track's timestamps in it.
type CellSpan struct {
	Cell
	From, To int64
}

// TrackCells is what a correlation of track reads from a zone layout:
// every cell the boxes of half-side meters around its points touch, in
// the order first touched, each once over the track's span in it; and
// want, the track's user at each of its timestamps (a point at a
// timestamp of the track, of another user, is a candidate contact).
func TrackCells(track []Point, meters float64) (cells []CellSpan, want map[int64]int64) {
	at := map[Cell]int{} // cell -> its index in cells
	want = make(map[int64]int64, len(track))
	for _, p := range track {
		want[p.TS] = p.User
		latLo, latHi, lonLo, lonHi := Box(p, meters)
		x0, y0 := Zone(latLo, lonLo)
		x1, y1 := Zone(latHi, lonHi)
		for zx := x0; zx <= x1; zx++ {
			for zy := y0; zy <= y1; zy++ {
				c := Cell{Block(p.TS), zx, zy}
				i, ok := at[c]
				if !ok {
					at[c] = len(cells)
					cells = append(cells, CellSpan{Cell: c, From: p.TS, To: p.TS})
					continue
				}
				cells[i].From, cells[i].To = min(cells[i].From, p.TS), max(cells[i].To, p.TS)
			}
		}
	}
	return cells, want
}
