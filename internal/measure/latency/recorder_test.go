package latency

import (
	"math/rand"
	"sync"
	"testing"
	"time"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// hdrIndex is where hdrhistogram-go itself files v: the one non-zero
// bucket of a histogram holding v alone.
func hdrIndex(t *testing.T, v int64) int {
	t.Helper()
	h := New()
	if err := h.RecordValue(v); err != nil {
		t.Fatal(err)
	}
	at := -1
	for i, n := range h.Export().Counts {
		if n != 0 {
			if at >= 0 {
				t.Fatalf("value %d in two buckets", v)
			}
			at = i
		}
	}
	return at
}

// The recorders file values where the library does: every power of two
// and its neighbours across the range, bucket edges, and random values.
func TestCountsIndexIsHdrs(t *testing.T) {
	vals := []int64{1, 2, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, highest - 1, highest}
	for s := 0; (int64(1) << s) <= highest; s++ {
		p := int64(1) << s
		vals = append(vals, p-1, p, p+1, p+p/3)
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		vals = append(vals, 1+r.Int63n(highest))
	}
	for _, v := range vals {
		if v < lowest || v > highest {
			continue
		}
		want := hdrIndex(t, v)
		if got := countsIndex(v); got != want {
			t.Fatalf("value %d: index %d, hdrhistogram-go files it at %d", v, got, want)
		}
		// The value a drain records for that index is filed back there.
		if got := hdrIndex(t, valueAt(want)); got != want {
			t.Fatalf("index %d: value %d files at %d", want, valueAt(want), got)
		}
	}
	if countsLen < 20000 || countsIndex(highest) >= countsLen {
		t.Fatalf("countsLen %d, index of the highest value %d", countsLen, countsIndex(highest))
	}
}

// A run's merged histograms, per epoch and in total, are exactly the
// histograms of the raw values, recomputed here with hdrhistogram-go
// alone: several goroutines, several ticks, classes and intended times,
// values across the whole range including clamped ones.
func TestCollectorMergesExactlyWhatWasRecorded(t *testing.T) {
	const goroutines, perEpoch, epochs = 4, 3000, 5
	var clock Clock
	c := NewCollector(true, 2)
	type op struct {
		epoch             uint64
		class             int
		service, intended time.Duration
		late              bool
	}
	ops := make([][]op, goroutines)
	var ready, wg sync.WaitGroup
	steps := make([]chan struct{}, goroutines)
	for g := range ops {
		steps[g] = make(chan struct{})
		ready.Add(1)
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rec := c.NewRecorder(&clock)
			defer rec.Flush()
			r := rand.New(rand.NewSource(int64(g)))
			// A recorder files an operation under the interval it is in
			// and moves to the next one after the first operation that
			// sees the tick.
			cur := clock.Epoch()
			ready.Done()
			for e := uint64(0); e < epochs; e++ {
				<-steps[g]
				for i := 0; i < perEpoch; i++ {
					o := op{epoch: cur, class: r.Intn(4) - 1, late: r.Intn(3) == 0}
					switch r.Intn(4) {
					case 0:
						o.service = time.Duration(r.Int63n(3000))
					case 1:
						o.service = time.Duration(r.Int63n(int64(time.Millisecond)))
					case 2:
						o.service = -time.Duration(r.Int63n(10)) // clamped to 1 ns
					default:
						o.service = time.Duration(r.Int63n(2 * highest)) // some clamped to 100 s
					}
					o.intended = o.service + time.Duration(r.Int63n(int64(time.Second)))
					rec.RecordClass(o.class, o.service, o.intended, o.late)
					ops[g] = append(ops[g], o)
					cur = clock.Epoch()
				}
				steps[g] <- struct{}{}
			}
		}(g)
	}
	ready.Wait()
	for e := 0; e < epochs; e++ {
		for g := range steps {
			steps[g] <- struct{}{}
			<-steps[g]
		}
		clock.Tick()
	}
	wg.Wait()
	c.Close()

	total, byEpoch := newInterval(true, 2), map[uint64]*Interval{}
	for _, g := range ops {
		for _, o := range g {
			e := byEpoch[o.epoch]
			if e == nil {
				e = newInterval(true, 0)
				byEpoch[o.epoch] = e
			}
			for _, iv := range []*Interval{total, e} {
				iv.Ops++
				Record(iv.Service, o.service)
				Record(iv.Intended, o.intended)
				if o.late {
					iv.Late++
				}
			}
			if o.class >= 0 && o.class < 2 {
				Record(total.ByClass[o.class], o.service)
			}
		}
	}
	same := func(what string, got, want *hdr.Histogram) {
		t.Helper()
		if !got.Equals(want) {
			t.Fatalf("%s: merged histogram differs from the raw values' (count %d, want %d; p99 %d, want %d)",
				what, got.TotalCount(), want.TotalCount(), got.ValueAtQuantile(99), want.ValueAtQuantile(99))
		}
	}
	got := c.Total()
	if got.Ops != total.Ops || got.Late != total.Late || got.Ops != goroutines*perEpoch*epochs {
		t.Fatalf("total ops %d late %d, want %d and %d", got.Ops, got.Late, total.Ops, total.Late)
	}
	same("total service", got.Service, total.Service)
	same("total intended", got.Intended, total.Intended)
	same("class 0", got.ByClass[0], total.ByClass[0])
	same("class 1", got.ByClass[1], total.ByClass[1])
	ivs := c.Epochs(clock.Epoch())
	if len(ivs) != epochs+1 {
		t.Fatalf("%d epochs, want %d", len(ivs), epochs+1)
	}
	for _, iv := range ivs {
		want := byEpoch[iv.Epoch]
		if want == nil {
			want = newInterval(true, 0)
		}
		if iv.Ops != want.Ops || iv.Late != want.Late {
			t.Fatalf("epoch %d: ops %d late %d, want %d and %d", iv.Epoch, iv.Ops, iv.Late, want.Ops, want.Late)
		}
		same("epoch service", iv.Service, want.Service)
		same("epoch intended", iv.Intended, want.Intended)
	}

	// The arrays are handed back clear: the next collector's recorders
	// start from zero even when they reuse them.
	c2 := NewCollector(false, 0)
	rec := c2.NewRecorder(&clock)
	rec.Record(5*time.Microsecond, 0, false)
	rec.Flush()
	c2.Close()
	if n := c2.Total().Service.TotalCount(); n != 1 {
		t.Fatalf("a reused recorder holds %d values after one record", n)
	}
}

// What every load goroutine writes on each operation, and the clock word
// they all read, each fill whole cache lines (the allocator aligns these
// size classes to them), so no goroutine's write invalidates another's line.
func TestHotStateFillsWholeCacheLines(t *testing.T) {
	for name, size := range map[string]uintptr{
		"pending":  unsafe.Sizeof(pending{}),
		"Recorder": unsafe.Sizeof(Recorder{}),
		"Clock":    unsafe.Sizeof(Clock{}),
	} {
		if size%cacheLine != 0 {
			t.Errorf("%s is %d bytes, not whole cache lines", name, size)
		}
	}
}
