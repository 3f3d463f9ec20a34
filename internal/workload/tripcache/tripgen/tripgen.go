// Package tripgen is the GPS tick stream of the trip-builder study (seed
// 004, its point-data-stream module): ticks of many sensors, each sensor
// driving trips back to back, at a target rate. Every tick is a pure
// function of the configuration and its index, so the generator holds no
// state but its position in the stream, and what a completed trip must
// look like in the cache (its ticks, start, end and distance) is
// recomputed from the same functions when the run is verified.
//
// The layout of the stream, for tick index i:
//
//	clone c = i mod Multiplier, base tick b = i / Multiplier
//	slot  s = b mod Sensors,    round r = b / Sensors
//
// Slot s drives trips of a fixed length L(s) ticks (drawn between
// MinTicks and MaxTicks), shifted by an offset so that the slots' trips
// do not all end together: trip k of slot s covers its rounds
// [k·L(s) − off(s), (k+1)·L(s) − off(s)) (the first trip is cut short at
// the start of the stream). The base trip number is k·Sensors + s; its
// shape (start point, heading, speed) is drawn from (seed, base trip mod
// TripsDayLimit): a day of at most TripsDayLimit trips replayed, as the
// seed replays its day of trips. Each base tick is sent Multiplier times,
// once per clone, under trip id base·Multiplier + c and sensor id
// s·Multiplier + c — the seed's trips.day.multiplier ("each trip is
// duplicated with a new id").
package tripgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"storebench/internal/workload/gen"
)

// Config is the generator's knobs (the seed's names in brackets).
type Config struct {
	Seed int64 `json:"seed"`
	// Rate is events per second [packet.size].
	Rate float64 `json:"rate"`
	// Sensors is the number of base sensors, each with one trip under way
	// at any time (before cloning).
	Sensors int64 `json:"sensors"`
	// TripsDayLimit bounds the distinct trip shapes of a day
	// [trips.day.limit].
	TripsDayLimit int64 `json:"trips_day_limit"`
	// Multiplier clones every trip under new ids [trips.day.multiplier].
	Multiplier int64 `json:"multiplier"`
	// MinTicks and MaxTicks bound a trip's length in ticks.
	MinTicks int64 `json:"min_ticks"`
	MaxTicks int64 `json:"max_ticks"`
}

// Validate checks the configuration; the study's decoder names the field.
func (c Config) Validate() error {
	switch {
	case c.Rate <= 0 || math.IsInf(c.Rate, 0) || math.IsNaN(c.Rate):
		return errors.New("rate: want events per second, more than 0")
	case c.Sensors < 1 || c.Sensors > 1e9:
		return errors.New("sensors: want 1..1e9")
	case c.TripsDayLimit < 1 || c.TripsDayLimit > 1e9:
		return errors.New("trips_day_limit: want 1..1e9")
	case c.Multiplier < 1 || c.Multiplier > 1e6:
		return errors.New("multiplier: want 1..1e6")
	case c.MinTicks < 2:
		return errors.New("min_ticks: a trip has at least 2 ticks (a start and an end)")
	case c.MaxTicks < c.MinTicks || c.MaxTicks > 1e6:
		return fmt.Errorf("max_ticks: want %d..1e6", c.MinTicks)
	}
	return nil
}

// Flags of a tick.
const (
	FlagStart = 1 << iota // the trip's first tick: the consumer creates the trip
	FlagEnd               // the trip's last tick: the consumer completes it
)

// Tick is one GPS event.
type Tick struct {
	Index  uint64 // position in the stream
	Trip   uint64 // trip id (unique over the stream)
	Sensor uint64
	Seq    uint32 // the tick's number within its trip (the first may be > 0, see package doc)
	Flags  uint8
	// GenNs is when the tick was due to be generated (Unix ns): the
	// stream's start plus Index/Rate. It is both the GPS timestamp and the
	// start of the tick's end-to-end latency, so a generator that falls
	// behind cannot hide it.
	GenNs int64
	Lat   int32 // microdegrees
	Lon   int32 // microdegrees
	Speed uint16
}

// Stream is the generator: a configuration and the stream's start time.
type Stream struct {
	cfg     Config
	StartNs int64
}

// New returns the stream of cfg starting at startNs (Unix ns).
func New(cfg Config, startNs int64) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Stream{cfg: cfg, StartNs: startNs}, nil
}

// Config is the stream's configuration.
func (s *Stream) Config() Config { return s.cfg }

// DueNs is when tick i is due (Unix ns).
func (s *Stream) DueNs(i uint64) int64 {
	return s.StartNs + int64(float64(i)*1e9/s.cfg.Rate)
}

// slot is the per-slot constants.
func (s *Stream) slot(slot uint64) (length, off uint64) {
	c := s.cfg
	span := uint64(c.MaxTicks - c.MinTicks + 1)
	length = uint64(c.MinTicks) + gen.Mix(uint64(c.Seed), 0x5107, slot)%span
	off = gen.Mix(uint64(c.Seed), 0x0ff5, slot) % length
	return length, off
}

// shape is a base trip's start point (microdegrees), step per tick
// (microdegrees) and speed (km/h).
type shape struct {
	lat0, lon0 int32
	dlat, dlon int32
	speed      uint16
}

func (s *Stream) shape(base uint64) shape {
	c := s.cfg
	h := gen.Mix(uint64(c.Seed), 0x7219, base%uint64(c.TripsDayLimit))
	// Start points in a city-sized box (about 50 km across) around
	// 55.75N 37.62E; a tick every few seconds moves tens of metres.
	lat0 := int32(55_750_000 + int64(h%450_000) - 225_000)
	lon0 := int32(37_620_000 + int64((h>>20)%800_000) - 400_000)
	h2 := gen.SplitMix(h)
	speed := uint16(5 + h2%110)
	// Step proportional to speed in a direction drawn from the hash;
	// integer microdegrees, so every point is exact.
	ang := float64(h2>>16%3600) * math.Pi / 1800
	step := float64(speed) * 4 // microdegrees per tick
	return shape{lat0: lat0, lon0: lon0,
		dlat: int32(math.Round(step * math.Sin(ang))), dlon: int32(math.Round(step * math.Cos(ang))),
		speed: speed}
}

// Tick returns tick i of the stream.
func (s *Stream) Tick(i uint64) Tick {
	c := s.cfg
	m, n := uint64(c.Multiplier), uint64(c.Sensors)
	clone, b := i%m, i/m
	slot, round := b%n, b/n
	length, off := s.slot(slot)
	q := round + off
	k, j := q/length, q%length
	base := k*n + slot
	sh := s.shape(base)
	t := Tick{
		Index:  i,
		Trip:   base*m + clone,
		Sensor: slot*m + clone,
		Seq:    uint32(j),
		GenNs:  s.DueNs(i),
		Lat:    sh.lat0 + int32(j)*sh.dlat,
		Lon:    sh.lon0 + int32(j)*sh.dlon,
		Speed:  sh.speed,
	}
	if round == 0 || j == 0 {
		t.Flags |= FlagStart
	}
	if j == length-1 {
		t.Flags |= FlagEnd
	}
	return t
}

// Trip is what a completed trip must look like in the cache.
type Trip struct {
	ID, Sensor       uint64
	Ticks            uint32
	FirstSeq         uint32
	StartNs, EndNs   int64
	StartLat, EndLat int32
	StartLon, EndLon int32
	// Meters is the sum of the distances between consecutive ticks
	// (Distance), added in tick order.
	Meters float64
}

// Distance is the great-circle distance in metres between two points in
// microdegrees (haversine). The consumer adds it up tick by tick and the
// verification recomputes the same sum, so the two agree to the bit.
func Distance(lat1, lon1, lat2, lon2 int32) float64 {
	const r = 6371000.0
	const k = math.Pi / 180 / 1e6
	p1, p2 := float64(lat1)*k, float64(lat2)*k
	dp, dl := p2-p1, float64(lon2-lon1)*k
	a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(a)))
}

// Completed calls fn for every trip whose last tick is among the first
// sent ticks of the stream, with the index of that last tick, in no
// particular order; fn returning false stops. Memory is constant; time
// is proportional to the ticks of the trips reported (each trip's
// distance is replayed).
func (s *Stream) Completed(sent uint64, fn func(t Trip, last uint64) bool) {
	c := s.cfg
	m, n := uint64(c.Multiplier), uint64(c.Sensors)
	bases := sent / m // base ticks of which every clone was sent
	rem := sent % m   // clones sent of base tick `bases`
	for slot := uint64(0); slot < n; slot++ {
		length, off := s.slot(slot)
		for k := uint64(0); ; k++ {
			endRound := (k+1)*length - off - 1
			endBase := endRound*n + slot
			if endBase > bases || (endBase == bases && rem == 0) {
				break
			}
			clones := m
			if endBase == bases {
				clones = rem
			}
			var firstRound, firstSeq uint64
			if k > 0 {
				firstRound = k*length - off
			} else {
				firstSeq = off
			}
			base := k*n + slot
			sh := s.shape(base)
			var meters float64
			for j := firstSeq + 1; j < length; j++ {
				meters += Distance(sh.lat0+int32(j-1)*sh.dlat, sh.lon0+int32(j-1)*sh.dlon, sh.lat0+int32(j)*sh.dlat, sh.lon0+int32(j)*sh.dlon)
			}
			for clone := uint64(0); clone < clones; clone++ {
				first := (firstRound*n+slot)*m + clone
				last := endBase*m + clone
				t := Trip{
					ID: base*m + clone, Sensor: slot*m + clone,
					Ticks: uint32(length - firstSeq), FirstSeq: uint32(firstSeq),
					StartNs: s.DueNs(first), EndNs: s.DueNs(last),
					StartLat: sh.lat0 + int32(firstSeq)*sh.dlat, StartLon: sh.lon0 + int32(firstSeq)*sh.dlon,
					EndLat: sh.lat0 + int32(length-1)*sh.dlat, EndLon: sh.lon0 + int32(length-1)*sh.dlon,
					Meters: meters,
				}
				if !fn(t, last) {
					return
				}
			}
		}
	}
}

// WireSize is the encoded size of a tick, without its frame.
const WireSize = 8 + 8 + 8 + 4 + 1 + 8 + 4 + 4 + 2

// Append encodes t (little endian, fixed size) onto b.
func (t Tick) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, t.Index)
	b = binary.LittleEndian.AppendUint64(b, t.Trip)
	b = binary.LittleEndian.AppendUint64(b, t.Sensor)
	b = binary.LittleEndian.AppendUint32(b, t.Seq)
	b = append(b, t.Flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.GenNs))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Lat))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Lon))
	b = binary.LittleEndian.AppendUint16(b, t.Speed)
	return b
}

// Decode reads a tick encoded by Append.
func Decode(b []byte) (Tick, error) {
	if len(b) != WireSize {
		return Tick{}, fmt.Errorf("tick of %d bytes, want %d", len(b), WireSize)
	}
	le := binary.LittleEndian
	return Tick{
		Index: le.Uint64(b[0:]), Trip: le.Uint64(b[8:]), Sensor: le.Uint64(b[16:]),
		Seq: le.Uint32(b[24:]), Flags: b[28], GenNs: int64(le.Uint64(b[29:])),
		Lat: int32(le.Uint32(b[37:])), Lon: int32(le.Uint32(b[41:])), Speed: le.Uint16(b[45:]),
	}, nil
}
