package geo

import (
	"context"
	"encoding/binary"
	"math"
	"sort"

	"storebench/internal/kv"
)

// geo-backtracer's own key layout (its db.cc on RocksDB), on any ordered
// key-value engine (layout: backtracer):
//
//	Bt | tz | -lonzone | -latzone | user | ts%1000  ->  lat | lon   (timeline column)
//	Br | user | tz | -lonzone | -latzone            ->  (empty)     (reverse column)
//
// Its DbKey message holds (timestamp, user, longitude zone, latitude
// zone); its timeline comparator orders them by time zone (ts / 1000),
// longitude zone and latitude zone (both descending), user, then the
// rest of the timestamp: a block is one time zone of one 0.001° × 0.001°
// GPS zone, every user in it. The reverse column lists, per user, the
// blocks the user has points in. Here the same order is made of
// big-endian bytes (zones as the integer floor(x × 1000) of the float32
// coordinate, negated for the descending order).
//
// A timeline reads the user's reverse keys (one seek) and then each block
// of the user (one seek each); "who was near" reads each block a point's
// box touches, whole; the GC walks the timeline column from its head
// (every block before the cutoff is there, time zone first) and deletes
// each point's timeline key and its reverse key, as gc.cc does. Points are
// stored under the block of their timestamp and not split into pieces (a
// point here has no duration; the rule splits them itself: backtracer.go).

const (
	btTimelinePrefix = "Bt"
	btReversePrefix  = "Br"
)

// BTLayout puts the geo workload on an ordered key-value store in
// geo-backtracer's layout.
type BTLayout struct {
	S kv.Store
	// PointByPoint deletes every key with a delete of its own (gc.cc);
	// otherwise the timeline column's old blocks go as one range delete
	// where the engine has one, and the reverse keys in batches.
	PointByPoint bool
	// PointWrites writes each point's timeline key and reverse key with a
	// Put of its own, as geo-backtracer's pusher.cc does
	// (ingest.write: point); otherwise a request is one atomic batch.
	PointWrites bool
}

// WithPointGC implements PointGCer.
func (l BTLayout) WithPointGC() Store {
	l.PointByPoint = true
	return l
}

// WithPointWrites implements PointWriter.
func (l BTLayout) WithPointWrites() Store {
	l.PointWrites = true
	return l
}

// btZoneIndex is floor(x × 1000) in float32, GPSLocationToGPSZone's numerator.
func btZoneIndex(x float64) int32 {
	return int32(math.Floor(float64(float32(float32(x) * btZonePrecision))))
}

func btTimelineKey(b []byte, tz int64, lonz, latz int32, user, tsLow int64) []byte {
	b = append(b, btTimelinePrefix...)
	b = be64(b, tz)
	b = zone32(b, -lonz)
	b = zone32(b, -latz)
	b = be64(b, user)
	return binary.BigEndian.AppendUint16(b, uint16(tsLow))
}

func btReverseKey(b []byte, user, tz int64, lonz, latz int32) []byte {
	b = append(b, btReversePrefix...)
	b = be64(b, user)
	b = be64(b, tz)
	b = zone32(b, -lonz)
	return zone32(b, -latz)
}

// btDecodeTimeline decodes a timeline key.
func btDecodeTimeline(k []byte) (tz int64, lonz, latz int32, user, ts int64) {
	k = k[len(btTimelinePrefix):]
	tz = int64(binary.BigEndian.Uint64(k))
	lonz = -int32(binary.BigEndian.Uint32(k[8:]) ^ (1 << 31))
	latz = -int32(binary.BigEndian.Uint32(k[12:]) ^ (1 << 31))
	user = int64(binary.BigEndian.Uint64(k[16:]))
	ts = tz*BTTimeZone + int64(binary.BigEndian.Uint16(k[24:]))
	return
}

// PrepareGeo implements Store.
func (l BTLayout) PrepareGeo(ctx context.Context) (string, error) {
	gc := "GC: the timeline column's old blocks by range delete, reverse keys in batches"
	if l.PointByPoint {
		gc = "GC point by point (one delete per timeline and reverse key, as geo-backtracer's gc.cc)"
	}
	return "geo-backtracer's layout: Bt|tz(1000 s)|lon zone|lat zone(0.001°, descending)|user|ts%1000 -> lat,lon and reverse Br|user|tz|lon zone|lat zone; " + gc, nil
}

// InsertPoints implements Store: the timeline and reverse keys of the
// request in one atomic batch, or each with a Put of its own
// (PointWrites, pusher.cc's way).
func (l BTLayout) InsertPoints(ctx context.Context, pts []Point) error {
	b := writerFor(l.S, l.PointWrites)
	var k, v []byte
	for _, p := range pts {
		tz, lonz, latz := btTZ(p.TS), btZoneIndex(p.Lon), btZoneIndex(p.Lat)
		v = latLon(v[:0], p)
		k = btTimelineKey(k[:0], tz, lonz, latz, p.User, p.TS-tz*BTTimeZone)
		b.Put(k, v)
		k = btReverseKey(k[:0], p.User, tz, lonz, latz)
		b.Put(k, nil)
	}
	return b.Commit()
}

type btBlockKey struct {
	tz         int64
	lonz, latz int32
}

// Timeline implements Store: the user's blocks from the reverse column,
// then each block's points of the user.
func (l BTLayout) Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	if to <= from {
		return nil
	}
	var blocks []btBlockKey
	lo := append(be64([]byte(btReversePrefix), user), be64(nil, btTZ(from))...)
	hi := append(be64([]byte(btReversePrefix), user), be64(nil, btTZ(to-1)+1)...)
	if err := l.S.Scan(lo, hi, func(k, _ []byte) bool {
		k = k[len(btReversePrefix)+8:]
		blocks = append(blocks, btBlockKey{int64(binary.BigEndian.Uint64(k)), -int32(binary.BigEndian.Uint32(k[8:]) ^ (1 << 31)), -int32(binary.BigEndian.Uint32(k[12:]) ^ (1 << 31))})
		return true
	}); err != nil {
		return err
	}
	var pts []Point
	var klo, khi []byte
	for _, b := range blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		klo = btTimelineKey(klo[:0], b.tz, b.lonz, b.latz, user, 0)
		khi = btTimelineKey(khi[:0], b.tz, b.lonz, b.latz, user+1, 0)
		var ferr error
		if err := l.S.Scan(klo, khi, func(k, v []byte) bool {
			_, _, _, u, ts := btDecodeTimeline(k)
			if u != user || ts < from || ts >= to {
				return true
			}
			lat, lon, err := decodeLatLon(v)
			if err != nil {
				ferr = err
				return false
			}
			pts = append(pts, Point{User: user, TS: ts, Lat: lat, Lon: lon})
			return true
		}); err != nil {
			return err
		}
		if ferr != nil {
			return ferr
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].TS < pts[j].TS })
	for _, p := range pts {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// Near implements Store: every block a track point's box touches, read
// whole once (as the seeker reads a block), keeping the points of other
// users at a timestamp of the track.
func (l BTLayout) Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error {
	want := make(map[int64]int64, len(track))
	seen := map[btBlockKey]bool{}
	var blocks []btBlockKey
	for _, p := range track {
		want[p.TS] = p.User
		latLo, latHi, lonLo, lonHi := Box(p, meters)
		tz := btTZ(p.TS)
		for x := btZoneIndex(lonLo); x <= btZoneIndex(lonHi); x++ {
			for y := btZoneIndex(latLo); y <= btZoneIndex(latHi); y++ {
				if b := (btBlockKey{tz, x, y}); !seen[b] {
					seen[b] = true
					blocks = append(blocks, b)
				}
			}
		}
	}
	var lo, hi []byte
	for _, b := range blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		lo = btTimelineKey(lo[:0], b.tz, b.lonz, b.latz, 0, 0)
		hi = kv.PrefixEnd(lo[:len(btTimelinePrefix)+16])
		var ferr error
		if err := l.S.Scan(lo, hi, func(k, v []byte) bool {
			_, _, _, user, ts := btDecodeTimeline(k)
			if u, ok := want[ts]; !ok || u == user {
				return true
			}
			lat, lon, err := decodeLatLon(v)
			if err != nil {
				ferr = err
				return false
			}
			ferr = fn(Point{User: user, TS: ts, Lat: lat, Lon: lon})
			return ferr == nil
		}); err != nil {
			return err
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// DeleteBefore implements Store: the timeline column's keys before the
// cutoff's time zone (a contiguous head), each with its reverse key.
func (l BTLayout) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	hi := be64([]byte(btTimelinePrefix), btTZ(before))
	lo := []byte(btTimelinePrefix)
	rd, ranged := l.S.(kv.RangeDeleter)
	var points int64
	for {
		if err := ctx.Err(); err != nil {
			return points, err
		}
		var keys, rev [][]byte
		if err := l.S.Scan(lo, hi, func(k, _ []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			tz, lonz, latz, user, _ := btDecodeTimeline(k)
			rev = append(rev, btReverseKey(nil, user, tz, lonz, latz))
			return len(keys) < gcBatch
		}); err != nil {
			return points, err
		}
		if len(keys) == 0 {
			break
		}
		if l.PointByPoint {
			for i := range keys {
				if err := l.S.Delete(keys[i]); err != nil {
					return points, err
				}
				if err := l.S.Delete(rev[i]); err != nil {
					return points, err
				}
			}
		} else {
			b := l.S.NewBatch()
			for i := range rev {
				if i == 0 || string(rev[i]) != string(rev[i-1]) {
					b.Delete(rev[i])
				}
				if !ranged {
					b.Delete(keys[i])
				}
			}
			if err := b.Commit(); err != nil {
				return points, err
			}
		}
		points += int64(len(keys))
		lo = append(keys[len(keys)-1], 0)
		if !l.PointByPoint && ranged && len(keys) < gcBatch {
			break
		}
	}
	if !l.PointByPoint && ranged {
		if err := rd.DeleteRange([]byte(btTimelinePrefix), hi); err != nil {
			return points, err
		}
	}
	return points, nil
}

// GeoStats implements Store: a scan of the timeline column.
func (l BTLayout) GeoStats(ctx context.Context) (count, oldest, newest int64, err error) {
	err = l.S.Scan([]byte(btTimelinePrefix), kv.PrefixEnd([]byte(btTimelinePrefix)), func(k, _ []byte) bool {
		_, _, _, _, ts := btDecodeTimeline(k)
		if count == 0 || ts < oldest {
			oldest = ts
		}
		newest = max(newest, ts)
		count++
		// A scan of every point held: an interrupt ends it (checked
		// every 64Ki keys).
		return count&0xffff != 0 || ctx.Err() == nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && count == 0 {
		return 0, 0, 0, nil
	}
	return count, oldest, newest, err
}
