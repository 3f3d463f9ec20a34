package latency

import (
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
}

// Tick starts a new interval.
func (c *Clock) Tick() { c.epoch.Add(1) }

// Epoch is the current interval number.
func (c *Clock) Epoch() uint64 { return c.epoch.Load() }

// Collector receives intervals from every recorder and merges them exactly:
// per epoch (the time series) and in total (the phase's distribution).
type Collector struct {
	openLoop bool
	classes  int
	in       chan *Interval
	free     chan *Interval
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
		in:       make(chan *Interval, 64),
		free:     make(chan *Interval, 64),
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
	for iv := range c.in {
		c.mu.Lock()
		c.total.Ops += iv.Ops
		c.total.Late += iv.Late
		c.total.Service.Merge(iv.Service)
		e := c.perEpoch[iv.Epoch]
		if e == nil {
			e = newInterval(c.openLoop, 0)
			e.Epoch = iv.Epoch
			c.perEpoch[iv.Epoch] = e
		}
		e.Ops += iv.Ops
		e.Late += iv.Late
		e.Service.Merge(iv.Service)
		if c.openLoop {
			c.total.Intended.Merge(iv.Intended)
			e.Intended.Merge(iv.Intended)
		}
		for i, h := range iv.ByClass {
			c.total.ByClass[i].Merge(h)
		}
		c.mu.Unlock()
		c.opsSoFar.Add(iv.Ops)
		c.lateSoFar.Add(iv.Late)
		// Recycle the histograms: a reset is a memclr, far cheaper than
		// allocating ~200 KB per goroutine per second.
		iv.Service.Reset()
		if iv.Intended != nil {
			iv.Intended.Reset()
		}
		for _, h := range iv.ByClass {
			h.Reset()
		}
		iv.Ops, iv.Late = 0, 0
		select {
		case c.free <- iv:
		default:
		}
	}
}

func (c *Collector) get(epoch uint64) *Interval {
	var iv *Interval
	select {
	case iv = <-c.free:
	default:
		iv = newInterval(c.openLoop, c.classes)
	}
	iv.Epoch = epoch
	return iv
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
	cur   *Interval
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
	Record(cur.Service, service)
	if class >= 0 && class < len(cur.ByClass) {
		Record(cur.ByClass[class], service)
	}
	if cur.Intended != nil {
		Record(cur.Intended, intended)
		if late {
			cur.Late++
		}
	}
	cur.Ops++
	if e := r.clock.Epoch(); e != cur.Epoch {
		r.coll.in <- cur
		r.cur = r.coll.get(e)
	}
}

// Flush hands whatever is pending to the collector. The recorder must not
// be used afterwards.
func (r *Recorder) Flush() {
	if r.cur != nil {
		r.coll.in <- r.cur
		r.cur = nil
	}
}
