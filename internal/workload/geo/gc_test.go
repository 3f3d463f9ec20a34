package geo

import (
	"context"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target/targettest"
)

// The GC of the seed's layout on Pebble and RocksDB, by range delete
// (their kv.RangeDeleter) and key by key: both leave exactly the points
// at or after the cutoff, in both indexes, whatever the cutoff.
func TestKVLayoutGCBothPaths(t *testing.T) {
	sim := Sim{Seed: 9, Users: 30, GroupSize: 3}
	const minutes = 200 // about 12 blocks of 1000 s
	for _, name := range []string{"pebble", "rocksdb"} {
		for _, keyByKey := range []bool{false, true} {
			path := map[bool]string{false: "range", true: "keys"}[keyByKey]
			t.Run(name+"/"+path, func(t *testing.T) {
				h := targettest.Open(t, name, kv.Async)
				s, ok := h.(kv.Store)
				if !ok {
					t.Fatalf("%s is no kv.Store", name)
				}
				if _, ok := s.(kv.RangeDeleter); !ok {
					t.Fatalf("%s has no range delete", name)
				}
				l := KVLayout{S: s, KeyByKey: keyByKey}
				ctx := context.Background()
				layout, err := l.PrepareGeo(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]string{false: "range delete", true: "key by key"}[keyByKey]; !strings.Contains(layout, want) {
					t.Errorf("layout %q does not say %q", layout, want)
				}
				var pts []Point
				for i := int64(0); i < minutes*sim.Users; i++ {
					pts = append(pts, sim.Index(i))
					if len(pts) == 500 {
						if err := l.InsertPoints(ctx, pts); err != nil {
							t.Fatal(err)
						}
						pts = pts[:0]
					}
				}
				if err := l.InsertPoints(ctx, pts); err != nil {
					t.Fatal(err)
				}
				// Two passes, the second further on, as the GC runs them.
				for _, cut := range []int64{(Block(TS(60)) + 1) * BlockSeconds, (Block(TS(130)) + 1) * BlockSeconds} {
					n, err := l.DeleteBefore(ctx, cut)
					if err != nil {
						t.Fatal(err)
					}
					var want int64
					for m := int64(0); m < minutes; m++ {
						if TS(m) >= cut {
							want += sim.Users
						}
					}
					count, oldest, _, err := l.GeoStats(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if count != want || oldest < cut {
						t.Errorf("cutoff %d: %d points held (oldest %d), want %d, none before the cutoff", cut, count, oldest, want)
					}
					if keyByKey && n <= 0 {
						t.Errorf("key by key counted %d deletes", n)
					}
					// The zone index too: nothing before the cutoff, everything after.
					var zone int64
					if err := s.Scan([]byte(kvZonePrefix), kv.PrefixEnd([]byte(kvZonePrefix)), func(k, _ []byte) bool {
						if ts := int64(binary.BigEndian.Uint64(k[len(k)-16:])); ts < cut {
							t.Errorf("cutoff %d: zone index holds a point of %d", cut, ts)
							return false
						}
						zone++
						return true
					}); err != nil {
						t.Fatal(err)
					}
					if zone != want {
						t.Errorf("cutoff %d: zone index holds %d points, want %d", cut, zone, want)
					}
				}
			})
		}
	}
}

// countingStore counts how the GC deletes: single deletes, batches and
// range deletes (it offers the engine's range delete, so a GC that
// should not use it is seen not to).
type countingStore struct {
	kv.Store
	deletes, batches, ranges, puts int
}

func (c *countingStore) Put(k, v []byte) error { c.puts++; return c.Store.Put(k, v) }

func (c *countingStore) Delete(k []byte) error { c.deletes++; return c.Store.Delete(k) }
func (c *countingStore) NewBatch() kv.Batch    { c.batches++; return c.Store.NewBatch() }
func (c *countingStore) DeleteRange(lo, hi []byte) error {
	c.ranges++
	return c.Store.(kv.RangeDeleter).DeleteRange(lo, hi)
}

// gc.delete: point deletes as geo-backtracer's gc.cc: one delete of its
// own per key of every point before the cutoff (both indexes, or the
// timeline and reverse columns), no batch, no range tombstone; the range
// path of geo-backtracer's layout deletes in batches and a range. Either
// leaves exactly the points at or after the cutoff, and no reverse key of
// a block before it.
func TestGCPointByPointAndBacktracerLayout(t *testing.T) {
	sim := Sim{Seed: 4, Users: 20, GroupSize: 4}
	const minutes = 120
	for _, tc := range []struct {
		name  string
		make  func(kv.Store) Store
		point bool
	}{
		{"storebench/point", func(s kv.Store) Store { return KVLayout{S: s} }, true},
		{"backtracer/point", func(s kv.Store) Store { return BTLayout{S: s} }, true},
		{"backtracer/range", func(s kv.Store) Store { return BTLayout{S: s} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := targettest.Open(t, "pebble", kv.Async)
			cs := &countingStore{Store: h.(kv.Store)}
			st := tc.make(cs)
			if tc.point {
				pg, ok := st.(PointGCer)
				if !ok {
					t.Fatal("the layout has no point-by-point GC")
				}
				st = pg.WithPointGC()
			}
			ctx := context.Background()
			layout, err := st.PrepareGeo(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.point != strings.Contains(layout, "point by point") {
				t.Errorf("layout %q", layout)
			}
			var pts []Point
			for i := int64(0); i < minutes*sim.Users; i++ {
				pts = append(pts, sim.Index(i))
			}
			if err := st.InsertPoints(ctx, pts); err != nil {
				t.Fatal(err)
			}
			cs.batches = 0
			cut := (Block(TS(70)) + 1) * BlockSeconds
			n, err := st.DeleteBefore(ctx, cut)
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			for m := int64(0); m < minutes; m++ {
				if TS(m) < cut {
					want += sim.Users
				}
			}
			if n != want {
				t.Errorf("deleted %d points, want %d", n, want)
			}
			if tc.point && (cs.deletes != int(2*want) || cs.batches != 0 || cs.ranges != 0) {
				t.Errorf("%d single deletes (want %d), %d batches, %d range deletes (want 0, 0)", cs.deletes, 2*want, cs.batches, cs.ranges)
			}
			if !tc.point && (cs.deletes != 0 || cs.ranges != 1) {
				t.Errorf("range path: %d single deletes, %d range deletes (want 0, 1)", cs.deletes, cs.ranges)
			}
			count, oldest, _, err := st.GeoStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if count != minutes*sim.Users-want || oldest < cut {
				t.Errorf("%d points held (oldest %d), want %d, none before %d", count, oldest, minutes*sim.Users-want, cut)
			}
			if _, ok := st.(BTLayout); ok {
				if err := cs.Scan([]byte(btReversePrefix), kv.PrefixEnd([]byte(btReversePrefix)), func(k, _ []byte) bool {
					if tz := int64(binary.BigEndian.Uint64(k[len(btReversePrefix)+8:])); tz < btTZ(cut) {
						t.Errorf("a reverse key of time zone %d is left, before the cutoff's %d", tz, btTZ(cut))
						return false
					}
					return true
				}); err != nil {
					t.Fatal(err)
				}
				// Every user's timeline after the GC is the generator's.
				h := Held{Points: minutes * sim.Users, Cutoff: cut}
				for u := int64(0); u < sim.Users; u++ {
					var got []Point
					if err := st.Timeline(ctx, u, TS(0), TS(minutes), func(p Point) error { got = append(got, p); return nil }); err != nil {
						t.Fatal(err)
					}
					if w := sim.Timeline(h, u, TS(0), TS(minutes)); !reflect.DeepEqual(got, w) {
						t.Fatalf("user %d: timeline of %d points, want %d", u, len(got), len(w))
					}
				}
			}
		})
	}
}

// ingest.write: point writes as geo-backtracer's pusher.cc: each key of
// each point a Put of its own, no batch, and stores exactly what the
// batched write stores, on both layouts.
func TestPointWritesWriteEachKeyAlone(t *testing.T) {
	sim := Sim{Seed: 5, Users: 15, GroupSize: 3}
	var pts []Point
	for i := int64(0); i < 40*sim.Users; i++ {
		pts = append(pts, sim.Index(i))
	}
	dump := func(s kv.Store) map[string]string {
		m := map[string]string{}
		if err := s.Scan(nil, nil, func(k, v []byte) bool { m[string(k)] = string(v); return true }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name string
		make func(kv.Store) Store
	}{
		{"storebench", func(s kv.Store) Store { return KVLayout{S: s} }},
		{"backtracer", func(s kv.Store) Store { return BTLayout{S: s} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var stores [2]*countingStore
			for i, point := range []bool{false, true} {
				cs := &countingStore{Store: targettest.Open(t, "pebble", kv.Async).(kv.Store)}
				st := tc.make(cs)
				if point {
					pw, ok := st.(PointWriter)
					if !ok {
						t.Fatal("the layout cannot write point by point")
					}
					st = pw.WithPointWrites()
				}
				if err := st.InsertPoints(ctx, pts); err != nil {
					t.Fatal(err)
				}
				stores[i] = cs
			}
			batched, pointed := stores[0], stores[1]
			if batched.batches != 1 || batched.puts != 0 {
				t.Errorf("batched: %d batches, %d single puts; want 1, 0", batched.batches, batched.puts)
			}
			if pointed.batches != 0 || pointed.puts != 2*len(pts) {
				t.Errorf("point by point: %d batches, %d single puts; want 0, %d", pointed.batches, pointed.puts, 2*len(pts))
			}
			a, b := dump(batched), dump(pointed)
			if len(a) == 0 || !reflect.DeepEqual(a, b) {
				t.Errorf("point writes stored %d keys, the batch %d, or other ones", len(b), len(a))
			}
		})
	}
}
