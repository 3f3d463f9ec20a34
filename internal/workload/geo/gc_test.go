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
	deletes, batches, ranges int
}

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
