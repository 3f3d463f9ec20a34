package geo

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"storebench/internal/kv"
)

// storebench's layout of GPS points (layout: storebench), on any ordered
// key-value engine (kv.Store); geo-backtracer's own is btlayout.go:
//
//	Gz | block | zx | zy | ts | user  ->  lat | lon    (points by zone)
//	Gu | block | user | ts            ->  lat | lon    (timelines)
//
// block is the timestamp's 1000 s time block and (zx, zy) its 100 × 100 m
// zone, all big-endian so that keys sort by time block first: writes of
// the present land in one narrow, ascending key range (the memtable's),
// the points of one place and time are neighbours on disk (one seek per
// zone and block to find who was there), and the GC drops whole old
// blocks as one contiguous range at the head of each index.

const (
	kvZonePrefix = "Gz"
	kvUserPrefix = "Gu"
	// gcBatch bounds the deletes of one GC batch (the memory of one pass).
	gcBatch = 10000
)

// KVLayout puts the geo workload on an ordered key-value store.
type KVLayout struct {
	S kv.Store
	// KeyByKey makes the GC delete key by key even on an engine with a
	// range delete (kv.RangeDeleter), to compare the two.
	KeyByKey bool
	// PointByPoint makes the GC delete as geo-backtracer's gc.cc does: one
	// delete per key of every point older than the cutoff, each a write
	// of its own (no batch, no range tombstone).
	PointByPoint bool
	// PointWrites makes InsertPoints write each key of each point with a
	// write of its own (ingest.write: point) rather than one atomic batch
	// per request.
	PointWrites bool
}

// PointWriter is a layout that can write a request's points key by key,
// each a write of its own, as geo-backtracer's pusher.cc does
// (ingest.write: point).
type PointWriter interface {
	WithPointWrites() Store
}

// WithPointWrites implements PointWriter.
func (l KVLayout) WithPointWrites() Store {
	l.PointWrites = true
	return l
}

// PointGCer is a layout that can run its GC point by point, as
// geo-backtracer's does (gc.delete: point).
type PointGCer interface {
	WithPointGC() Store
}

// WithPointGC implements PointGCer.
func (l KVLayout) WithPointGC() Store {
	l.PointByPoint = true
	return l
}

func be64(b []byte, v int64) []byte   { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func zone32(b []byte, z int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(z)^(1<<31)) }

func zoneKey(b []byte, block int64, zx, zy int32, ts, user int64) []byte {
	b = append(b, kvZonePrefix...)
	b = be64(b, block)
	b = zone32(b, zx)
	b = zone32(b, zy)
	b = be64(b, ts)
	return be64(b, user)
}

func userKey(b []byte, block, user, ts int64) []byte {
	b = append(b, kvUserPrefix...)
	b = be64(b, block)
	b = be64(b, user)
	return be64(b, ts)
}

func latLon(b []byte, p Point) []byte {
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Lat))
	return binary.BigEndian.AppendUint64(b, math.Float64bits(p.Lon))
}

func decodeLatLon(v []byte) (lat, lon float64, err error) {
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("geo: a point's value is %d bytes, want 16", len(v))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(v)), math.Float64frombits(binary.BigEndian.Uint64(v[8:])), nil
}

// PrepareGeo implements Store: the worker hands a fresh directory to a
// fresh step, so there is nothing to drop.
func (l KVLayout) PrepareGeo(ctx context.Context) (string, error) {
	gc := "GC key by key in batches"
	if l.PointByPoint {
		gc = "GC point by point (one delete per key, as geo-backtracer's gc.cc)"
	} else if _, ok := l.S.(kv.RangeDeleter); ok && !l.KeyByKey {
		gc = "GC by range delete (one range tombstone per index)"
	}
	return "storebench's layout: Gz|block(1000 s)|zone(100x100 m)|ts|user -> lat,lon and Gu|block|user|ts -> lat,lon, big-endian (time-sorted keys); " + gc, nil
}

// InsertPoints implements Store: both indexes of the batch in one atomic batch.
func (l KVLayout) InsertPoints(ctx context.Context, pts []Point) error {
	w := writerFor(l.S, l.PointWrites)
	var k, v []byte
	for _, p := range pts {
		zx, zy := Zone(p.Lat, p.Lon)
		v = latLon(v[:0], p)
		k = zoneKey(k[:0], Block(p.TS), zx, zy, p.TS, p.User)
		w.Put(k, v)
		k = userKey(k[:0], Block(p.TS), p.User, p.TS)
		w.Put(k, v)
	}
	return w.Commit()
}

// writer is where InsertPoints puts a request's keys: one atomic batch,
// or the store itself, a write per key (ingest.write: point).
type writer interface {
	Put(key, value []byte)
	Commit() error
}

func writerFor(s kv.Store, pointWrites bool) writer {
	if pointWrites {
		return &keyWriter{s: s}
	}
	return s.NewBatch()
}

// keyWriter writes each key as it comes, stopping at the first error
// (Commit returns it).
type keyWriter struct {
	s   kv.Store
	err error
}

func (w *keyWriter) Put(key, value []byte) {
	if w.err == nil {
		w.err = w.s.Put(key, value)
	}
}

func (w *keyWriter) Commit() error { return w.err }

// Timeline implements Store: one range scan per time block.
func (l KVLayout) Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	if to <= from {
		return nil
	}
	var lo, hi []byte
	for blk := Block(from); blk <= Block(to-1); blk++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		lo = userKey(lo[:0], blk, user, from)
		hi = userKey(hi[:0], blk, user, to)
		var ferr error
		err := l.S.Scan(lo, hi, func(k, v []byte) bool {
			lat, lon, err := decodeLatLon(v)
			if err != nil {
				ferr = err
				return false
			}
			ferr = fn(Point{User: user, TS: int64(binary.BigEndian.Uint64(k[len(k)-8:])), Lat: lat, Lon: lon})
			return ferr == nil
		})
		if err != nil {
			return err
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// Near implements Store: each zone and time block the track's boxes
// touch is read once, over the track's time span within the block.
func (l KVLayout) Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error {
	cells, want := TrackCells(track, meters)
	var lo, hi []byte
	for _, c := range cells {
		if err := ctx.Err(); err != nil {
			return err
		}
		lo = zoneKey(lo[:0], c.Block, c.ZX, c.ZY, c.From, 0)
		hi = zoneKey(hi[:0], c.Block, c.ZX, c.ZY, c.To+1, 0)
		var ferr error
		err := l.S.Scan(lo, hi, func(k, v []byte) bool {
			n := len(k)
			ts, user := int64(binary.BigEndian.Uint64(k[n-16:])), int64(binary.BigEndian.Uint64(k[n-8:]))
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
		})
		if err != nil {
			return err
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// DeleteBefore implements Store: both indexes' blocks before the cutoff
// are a contiguous range at the head of each: one range tombstone each
// on an engine that has them (the points are then not counted: -1), else
// deleted key by key in batches, or one delete per key (PointByPoint,
// as geo-backtracer's GC).
func (l KVLayout) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	if rd, ok := l.S.(kv.RangeDeleter); ok && !l.KeyByKey && !l.PointByPoint {
		for _, prefix := range []string{kvZonePrefix, kvUserPrefix} {
			if err := ctx.Err(); err != nil {
				return -1, err
			}
			if err := rd.DeleteRange([]byte(prefix), be64([]byte(prefix), Block(before))); err != nil {
				return -1, err
			}
		}
		return -1, nil
	}
	var points int64
	for _, prefix := range []string{kvZonePrefix, kvUserPrefix} {
		lo := []byte(prefix)
		hi := be64([]byte(prefix), Block(before))
		for {
			if err := ctx.Err(); err != nil {
				return points, err
			}
			var keys [][]byte
			if err := l.S.Scan(lo, hi, func(k, _ []byte) bool {
				keys = append(keys, append([]byte(nil), k...))
				return len(keys) < gcBatch
			}); err != nil {
				return points, err
			}
			if len(keys) == 0 {
				break
			}
			if l.PointByPoint {
				for _, k := range keys {
					if err := l.S.Delete(k); err != nil {
						return points, err
					}
				}
			} else {
				b := l.S.NewBatch()
				for _, k := range keys {
					b.Delete(k)
				}
				if err := b.Commit(); err != nil {
					return points, err
				}
			}
			if prefix == kvUserPrefix {
				points += int64(len(keys))
			}
			lo = append(keys[len(keys)-1], 0)
		}
	}
	return points, nil
}

// GeoStats implements Store: a scan of the timeline index.
func (l KVLayout) GeoStats(ctx context.Context) (count, oldest, newest int64, err error) {
	err = l.S.Scan([]byte(kvUserPrefix), kv.PrefixEnd([]byte(kvUserPrefix)), func(k, _ []byte) bool {
		ts := int64(binary.BigEndian.Uint64(k[len(k)-8:]))
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
	return count, oldest, newest, err
}
