package latency

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Interval is what one goroutine recorded between two ticks it noticed.
type Interval struct {
	Epoch    uint64
	Ops      int64
	Late     int64
	Service  *hdr.Histogram
	Intended *hdr.Histogram // nil in closed loop
	// ByClass holds service time per operation class (e.g. READ, UPDATE)
	// when the run has classes.
	ByClass []*hdr.Histogram
}

// Clock hands out ticks. Load goroutines read Epoch once per operation (one
// atomic load of a word nobody writes more than once a second); when it
// moved, they hand their interval to the collector and start a new one.
type Clock struct {
	epoch atomic.Uint64
	// The word is read by every load goroutine on every operation: it
	// gets a cache line of its own, so that no write to a neighbouring
	// object invalidates it in every core's cache.
	_ [cacheLine - 8]byte
}

// Tick starts a new interval.
func (c *Clock) Tick() { c.epoch.Add(1) }

// Epoch is the current interval number.
func (c *Clock) Epoch() uint64 { return c.epoch.Load() }

const cacheLine = 64

// The recorders' histograms are the counts arrays of HdrHistograms of
// storebench's geometry (New: 1 ns to 100 s, 3 significant digits),
// written directly: an operation costs an index computation and an
// increment, where hdr's RecordValue is a call with four checks. The
// geometry below is the one hdrhistogram-go derives from those parameters
// (lowest 1: unit magnitude 0; 3 digits: 2048 sub-buckets);
// TestCountsIndexIsHdrs checks it against the library value by value.
const (
	subBucketHalfCountMagnitude = 10
	subBucketHalfCount          = 1 << subBucketHalfCountMagnitude
	subBucketMask               = 2*subBucketHalfCount - 1
)

// countsLen is the length of the counts array of New's geometry.
var countsLen = len(New().Export().Counts)

// countsIndex is where hdrhistogram-go files value v (1 <= v <= highest).
func countsIndex(v int64) int {
	bucket := 64 - bits.LeadingZeros64(uint64(v)|subBucketMask) - (subBucketHalfCountMagnitude + 1)
	sub := int(v >> uint(bucket))
	return (bucket+1)<<subBucketHalfCountMagnitude + sub - subBucketHalfCount
}

// valueAt is the lowest value filed at index i, which files back at i.
func valueAt(i int) int64 {
	bucket := i>>subBucketHalfCountMagnitude - 1
	sub := i&(subBucketHalfCount-1) + subBucketHalfCount
	if bucket < 0 {
		sub -= subBucketHalfCount
		bucket = 0
	}
	return int64(sub) << uint(bucket)
}

// counts is one histogram of a recorder. lo..hi is the range of indexes
// written since it was last drained (lo > hi: none), so a drain reads and
// clears only the buckets near the values recorded, not ~28,000 of them.
type counts struct {
	c      []int64
	lo, hi int
}

// countsPool keeps drained (all-zero) counts arrays across runs: a run's
// recorders then do not allocate and clear ~230 KB each.
var countsPool sync.Pool

func newCounts() counts {
	c, _ := countsPool.Get().([]int64)
	if len(c) != countsLen {
		c = make([]int64, countsLen)
	}
	return counts{c: c, lo: countsLen, hi: -1}
}

func (h *counts) release() {
	if h.c != nil {
		// Boxing the slice header allocates 24 bytes; the 230 KB array
		// behind it is what is reused.
		countsPool.Put(h.c)
		h.c = nil
	}
}

// record adds d, clamped into the trackable range as Record does.
func (h *counts) record(d time.Duration) {
	i := countsIndex(min(max(int64(d), lowest), highest))
	h.c[i]++
	h.lo = min(h.lo, i)
	h.hi = max(h.hi, i)
}

// drainInto adds the counts to a (and to b unless nil) and clears them.
func (h *counts) drainInto(a, b *hdr.Histogram) int64 {
	var total int64
	for i := h.lo; i <= h.hi; i++ {
		n := h.c[i]
		if n == 0 {
			continue
		}
		v := valueAt(i)
		// In range by construction (record clamps): the error cannot occur.
		_ = a.RecordValues(v, n)
		if b != nil {
			_ = b.RecordValues(v, n)
		}
		h.c[i] = 0
		total += n
	}
	h.lo, h.hi = len(h.c), -1
	return total
}

// pending is a recorder's current interval, handed whole to the collector
// on a tick. It is written on every operation by its goroutine alone.
type pending struct {
	epoch     uint64
	ops, late int64
	service   counts
	intended  counts // c nil in closed loop
	byClass   []counts
	// These fields fill exactly two cache lines (128 bytes, a size class
	// the allocator aligns to 64), so no other goroutine's object shares a
	// line with these counters; TestHotStateFillsWholeCacheLines keeps it so.
}

func (p *pending) release() {
	p.service.release()
	p.intended.release()
	for i := range p.byClass {
		p.byClass[i].release()
	}
}

// Collector receives intervals from every recorder and merges them exactly:
// per epoch (the time series) and in total (the phase's distribution).
type Collector struct {
	openLoop bool
	classes  int
	in       chan *pending
	free     chan *pending
	done     chan struct{}

	mu        sync.Mutex
	total     *Interval
	perEpoch  map[uint64]*Interval
	opsSoFar  atomic.Int64
	lateSoFar atomic.Int64
}

// NewCollector starts a collector. openLoop says whether recorders also
// keep intended-start-time latency.
func NewCollector(openLoop bool, classes int) *Collector {
	c := &Collector{
		openLoop: openLoop,
		classes:  classes,
		in:       make(chan *pending, 64),
		free:     make(chan *pending, 64),
		done:     make(chan struct{}),
		total:    newInterval(openLoop, classes),
		perEpoch: map[uint64]*Interval{},
	}
	go c.loop()
	return c
}

func newInterval(openLoop bool, classes int) *Interval {
	iv := &Interval{Service: New()}
	if openLoop {
		iv.Intended = New()
	}
	for i := 0; i < classes; i++ {
		iv.ByClass = append(iv.ByClass, New())
	}
	return iv
}

func (c *Collector) loop() {
	defer close(c.done)
	for p := range c.in {
		c.mu.Lock()
		c.total.Ops += p.ops
		c.total.Late += p.late
		e := c.perEpoch[p.epoch]
		if e == nil {
			e = newInterval(c.openLoop, 0)
			e.Epoch = p.epoch
			c.perEpoch[p.epoch] = e
		}
		e.Ops += p.ops
		e.Late += p.late
		// Each drain adds every bucket's count to the whole run and to
		// the epoch, and leaves the recorder's arrays clear for reuse.
		p.service.drainInto(c.total.Service, e.Service)
		if c.openLoop {
			p.intended.drainInto(c.total.Intended, e.Intended)
		}
		for i := range p.byClass {
			p.byClass[i].drainInto(c.total.ByClass[i], nil)
		}
		c.mu.Unlock()
		c.opsSoFar.Add(p.ops)
		c.lateSoFar.Add(p.late)
		p.ops, p.late = 0, 0
		select {
		case c.free <- p:
		default:
			p.release()
		}
	}
	for {
		select {
		case p := <-c.free:
			p.release()
		default:
			return
		}
	}
}

func (c *Collector) get(epoch uint64) *pending {
	var p *pending
	select {
	case p = <-c.free:
	default:
		p = &pending{service: newCounts()}
		if c.openLoop {
			p.intended = newCounts()
		}
		for i := 0; i < c.classes; i++ {
			p.byClass = append(p.byClass, newCounts())
		}
	}
	p.epoch = epoch
	return p
}

// Ops is the number of operations handed in so far (it lags by up to a
// tick; it is meant for progress display).
func (c *Collector) Ops() int64 { return c.opsSoFar.Load() }

// Close waits for every handed interval to be merged. Call it after every
// recorder has been flushed.
func (c *Collector) Close() {
	close(c.in)
	<-c.done
}

// Total is the merged distribution of the whole run (valid after Close).
func (c *Collector) Total() *Interval { return c.total }

// Epochs returns the merged intervals by epoch in order (valid after Close).
// Epochs with no operation are present with zero counts, so a stall shows
// in the time series as a zero rather than as a gap.
func (c *Collector) Epochs(last uint64) []*Interval {
	out := make([]*Interval, 0, last+1)
	for e := uint64(0); e <= last; e++ {
		iv := c.perEpoch[e]
		if iv == nil {
			iv = &Interval{Epoch: e, Service: New()}
			if c.openLoop {
				iv.Intended = New()
			}
		}
		out = append(out, iv)
	}
	return out
}

// Recorder belongs to exactly one goroutine.
type Recorder struct {
	clock *Clock
	coll  *Collector
	cur   *pending
	// Read on every operation: a cache line of its own.
	_ [cacheLine - 24]byte
}

// NewRecorder makes a recorder for one load goroutine.
func (c *Collector) NewRecorder(clock *Clock) *Recorder {
	return &Recorder{clock: clock, coll: c, cur: c.get(clock.Epoch())}
}

// Record adds one operation's service time (and, in open loop, its latency
// from the intended start time; late says it started behind schedule).
func (r *Recorder) Record(service, intended time.Duration, late bool) {
	r.RecordClass(-1, service, intended, late)
}

// RecordClass is Record that also files the service time under an
// operation class (class < 0: none).
func (r *Recorder) RecordClass(class int, service, intended time.Duration, late bool) {
	cur := r.cur
	cur.service.record(service)
	if class >= 0 && class < len(cur.byClass) {
		cur.byClass[class].record(service)
	}
	if cur.intended.c != nil {
		cur.intended.record(intended)
		if late {
			cur.late++
		}
	}
	cur.ops++
	if e := r.clock.Epoch(); e != cur.epoch {
		r.next(e)
	}
}

// next hands the current interval to the collector and starts epoch e's.
func (r *Recorder) next(e uint64) {
	r.coll.in <- r.cur
	r.cur = r.coll.get(e)
}

// Flush hands whatever is pending to the collector. The recorder must not
// be used afterwards.
func (r *Recorder) Flush() {
	if r.cur != nil {
		r.coll.in <- r.cur
		r.cur = nil
	}
}
