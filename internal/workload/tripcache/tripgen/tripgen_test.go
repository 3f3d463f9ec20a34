package tripgen

import (
	"bytes"
	"context"
	"io"
	"testing"
)

func testConfig() Config {
	return Config{Seed: 7, Rate: 1e6, Sensors: 13, TripsDayLimit: 5, Multiplier: 3, MinTicks: 2, MaxTicks: 9}
}

// Replaying the stream tick by tick and building trips naively must give
// exactly the trips Completed computes without replaying it, for every
// prefix length (cuts inside a round of clones included).
func TestCompletedMatchesReplay(t *testing.T) {
	s, err := New(testConfig(), 1_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	type acc struct {
		Trip
		lastSeq uint32
		done    bool
	}
	for _, sent := range []uint64{0, 1, 38, 39, 40, 41, 500, 1001} {
		trips := map[uint64]*acc{}
		var want []Trip
		wantLast := map[uint64]uint64{}
		for i := uint64(0); i < sent; i++ {
			tk := s.Tick(i)
			if tk.Index != i || tk.GenNs != s.DueNs(i) {
				t.Fatalf("tick %d: index %d due %d", i, tk.Index, tk.GenNs)
			}
			a := trips[tk.Trip]
			if tk.Flags&FlagStart != 0 {
				if a != nil {
					t.Fatalf("trip %d started twice (tick %d)", tk.Trip, i)
				}
				a = &acc{Trip: Trip{ID: tk.Trip, Sensor: tk.Sensor, FirstSeq: tk.Seq, StartNs: tk.GenNs, StartLat: tk.Lat, StartLon: tk.Lon}, lastSeq: tk.Seq}
				trips[tk.Trip] = a
			} else {
				if a == nil || a.done {
					t.Fatalf("tick %d of trip %d without a trip under way", i, tk.Trip)
				}
				if tk.Seq != a.lastSeq+1 || tk.Sensor != a.Sensor {
					t.Fatalf("tick %d of trip %d: seq %d after %d", i, tk.Trip, tk.Seq, a.lastSeq)
				}
				a.Meters += Distance(a.EndLat, a.EndLon, tk.Lat, tk.Lon)
				a.lastSeq = tk.Seq
			}
			a.Ticks++
			a.EndNs, a.EndLat, a.EndLon = tk.GenNs, tk.Lat, tk.Lon
			if tk.Flags&FlagStart != 0 {
				a.EndLat, a.EndLon = tk.Lat, tk.Lon
			}
			if tk.Flags&FlagEnd != 0 {
				a.done = true
				want = append(want, a.Trip)
				wantLast[tk.Trip] = i
			}
		}
		got := map[uint64]Trip{}
		s.Completed(sent, func(tr Trip, last uint64) bool {
			if _, dup := got[tr.ID]; dup {
				t.Fatalf("sent %d: trip %d reported twice", sent, tr.ID)
			}
			if w, ok := wantLast[tr.ID]; !ok || last != w {
				t.Fatalf("sent %d: trip %d ends at tick %d, the replay says %d (%v)", sent, tr.ID, last, w, ok)
			}
			got[tr.ID] = tr
			return true
		})
		if len(got) != len(want) {
			t.Fatalf("sent %d: Completed gave %d trips, replay %d", sent, len(got), len(want))
		}
		for _, w := range want {
			if g := got[w.ID]; g != w {
				t.Fatalf("sent %d: trip %d: Completed %+v, replay %+v", sent, w.ID, g, w)
			}
		}
		if sent == 1001 && len(want) < 100 {
			t.Fatalf("only %d trips completed in 1001 ticks", len(want))
		}
	}
}

// The knobs do what the seed says: the multiplier clones each base tick
// under new trip and sensor ids with the same position; the day limit
// replays trip shapes under new ids.
func TestKnobs(t *testing.T) {
	c := testConfig()
	s, _ := New(c, 0)
	a, b := s.Tick(30), s.Tick(31) // clones 0 and 1 of one base tick
	if a.Trip == b.Trip || a.Sensor == b.Sensor || a.Lat != b.Lat || a.Lon != b.Lon || a.Seq != b.Seq {
		t.Fatalf("clones: %+v %+v", a, b)
	}
	c2 := c
	c2.Seed = 8
	s2, _ := New(c2, 0)
	same := 0
	for i := uint64(0); i < 200; i++ {
		if s.Tick(i) == s2.Tick(i) {
			same++
		}
	}
	if same > 20 {
		t.Fatalf("seed 8 repeats %d of 200 ticks of seed 7", same)
	}
	ids := map[uint64]bool{}
	shapes := map[[2]int32]bool{}
	s.Completed(5000, func(tr Trip, _ uint64) bool {
		if ids[tr.ID] {
			t.Fatalf("trip id %d twice", tr.ID)
		}
		ids[tr.ID] = true
		if tr.FirstSeq == 0 {
			shapes[[2]int32{tr.StartLat, tr.StartLon}] = true
		}
		return true
	})
	// TripsDayLimit 5: at most 5 distinct start points among whole trips.
	if len(shapes) == 0 || len(shapes) > 5 {
		t.Fatalf("%d distinct start points with a day limit of 5", len(shapes))
	}
	for _, bad := range []Config{{}, {Rate: 1, Sensors: 1, TripsDayLimit: 1, Multiplier: 1, MinTicks: 1, MaxTicks: 2}, {Rate: 1, Sensors: 1, TripsDayLimit: 1, Multiplier: 1, MinTicks: 3, MaxTicks: 2}} {
		if _, err := New(bad, 0); err == nil {
			t.Fatalf("config %+v accepted", bad)
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Run sends every tick once, in order, framed, after the hello.
func TestRunFrames(t *testing.T) {
	c := testConfig()
	c.Rate = 20000
	var buf bytes.Buffer
	s, _ := New(c, 0)
	s.StartNs = s.StartNs + 1 // due times in the past: sent at once
	n, err := Run(context.Background(), s, 777, NewSocketSink(nopCloser{&buf}))
	if err != nil || n != 777 {
		t.Fatalf("Run: %d, %v", n, err)
	}
	fr := NewFrameReader(&buf)
	if start, err := fr.ReadHello(); err != nil || start != s.StartNs {
		t.Fatalf("hello: %d %v", start, err)
	}
	for i := uint64(0); i < 777; i++ {
		p, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		tk, err := Decode(p)
		if err != nil || tk != s.Tick(i) {
			t.Fatalf("frame %d: %+v %v, want %+v", i, tk, err, s.Tick(i))
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("after the last tick: %v, want EOF", err)
	}
	// A frame cut short is an error, not a clean end.
	if _, err := NewFrameReader(bytes.NewReader([]byte{8, 0, 0, 0, 1, 2})).Next(); err == nil || err == io.EOF {
		t.Fatalf("cut frame: %v", err)
	}
}
