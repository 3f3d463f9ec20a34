// Package runner drives operations against a target: a closed loop (N
// goroutines as fast as the target allows) or an open loop (a fixed total
// rate, where each operation has an intended start time and latency is
// measured from it, so a stalled target cannot hide its queue: the
// coordinated-omission correction).
package runner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
)

// Op performs operation number seq (0-based, unique across the run) on
// load goroutine worker. Returning an error stops the run: storebench
// treats an engine error or a failed verification as a failed phase, never
// as a number to average away.
type Op func(worker int, seq int64) error

// Config says how long and how hard to drive the operations.
type Config struct {
	// Workers is the number of load goroutines (default 1).
	Workers int
	// Ops stops the run after this many operations in total (0: no bound).
	Ops int64
	// Duration stops the run after this long (0: no bound).
	Duration time.Duration
	// Rate > 0 selects the open loop: this many operations per second in
	// total, each with an intended start time.
	Rate float64
	// Tick is the interval of the time series (default 1 s).
	Tick time.Duration
	// LateAfter counts an operation as late when it starts this long after
	// its intended time (open loop only; default 1 ms).
	LateAfter time.Duration
	// Classes names operation classes (e.g. READ, UPDATE) and ClassOf
	// tells which one operation seq is; the run then also keeps a service
	// time histogram per class. ClassOf must be cheap and deterministic.
	Classes []string
	ClassOf func(seq int64) int
	// OnTick, if set, is called from the ticker goroutine after each tick
	// with the operations completed so far; use it for progress and
	// resource sampling. It must return quickly.
	OnTick func(elapsed time.Duration, opsSoFar int64)
}

// Result of one run.
type Result struct {
	Ops       int64
	Late      int64
	Elapsed   time.Duration
	Service   *hdr.Histogram
	Intended  *hdr.Histogram // nil in closed loop
	Intervals []*latency.Interval
	// ByClass is the service time per class of Config.Classes.
	ByClass map[string]*hdr.Histogram
	// Cancelled is true when the context ended the run early.
	Cancelled bool
}

// Rate is the achieved throughput in operations per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Run drives op until cfg's bound is reached, ctx ends, or op fails. On
// failure it returns the partial Result together with the first error.
func Run(ctx context.Context, cfg Config, op Op) (Result, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.LateAfter <= 0 {
		cfg.LateAfter = time.Millisecond
	}
	if cfg.Ops <= 0 && cfg.Duration <= 0 {
		return Result{}, fmt.Errorf("runner: neither an operation count nor a duration bounds the run")
	}
	openLoop := cfg.Rate > 0
	if len(cfg.Classes) > 0 && cfg.ClassOf == nil {
		return Result{}, fmt.Errorf("runner: classes without ClassOf")
	}
	coll := latency.NewCollector(openLoop, len(cfg.Classes))
	classOf := cfg.ClassOf // nil without classes: no call on the hot path
	var clock latency.Clock

	var (
		stop     atomic.Bool
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		stop.Store(true)
	}

	start := time.Now()
	// The ticker drives the time series and the stop conditions that are
	// not per-operation (deadline, cancellation).
	tickDone := make(chan struct{})
	workersDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		t := time.NewTicker(cfg.Tick)
		defer t.Stop()
		var deadline <-chan time.Time
		if cfg.Duration > 0 {
			dt := time.NewTimer(cfg.Duration)
			defer dt.Stop()
			deadline = dt.C
		}
		for {
			select {
			case <-workersDone:
				return
			case <-ctx.Done():
				stop.Store(true)
				<-workersDone
				return
			case <-deadline:
				stop.Store(true)
				deadline = nil
			case <-t.C:
				clock.Tick()
				if cfg.OnTick != nil {
					cfg.OnTick(time.Since(start), coll.Ops())
				}
			}
		}
	}()

	var wg sync.WaitGroup
	W := int64(cfg.Workers)
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rec := coll.NewRecorder(&clock)
			defer rec.Flush()
			// Operations are partitioned statically (w, w+W, w+2W, ...) so
			// the goroutines share no counter on the hot path.
			if !openLoop {
				// Closed loop: one clock read per operation, since each
				// operation starts when the previous one ends. The few
				// nanoseconds of loop bookkeeping between them are counted
				// in the service time rather than paying a second read.
				last := mono()
				for seq := int64(w); cfg.Ops <= 0 || seq < cfg.Ops; seq += W {
					if stop.Load() {
						return
					}
					if err := op(w, seq); err != nil {
						fail(err)
						return
					}
					now := mono()
					c := -1
					if classOf != nil {
						c = classOf(seq)
					}
					rec.RecordClass(c, now-last, 0, false)
					last = now
				}
				return
			}
			startMono := mono() - time.Since(start)
			for seq := int64(w); cfg.Ops <= 0 || seq < cfg.Ops; seq += W {
				if stop.Load() {
					return
				}
				intended := startMono + time.Duration(float64(seq)/cfg.Rate*float64(time.Second))
				if d := intended - mono(); d > 0 {
					if !sleepUntil(ctx, &stop, d) {
						return
					}
				}
				t0 := mono()
				if err := op(w, seq); err != nil {
					fail(err)
					return
				}
				t1 := mono()
				c := -1
				if classOf != nil {
					c = classOf(seq)
				}
				rec.RecordClass(c, t1-t0, t1-intended, t0-intended > cfg.LateAfter)
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(workersDone)
	<-tickDone
	coll.Close()

	total := coll.Total()
	res := Result{
		Ops:       total.Ops,
		Late:      total.Late,
		Elapsed:   elapsed,
		Service:   total.Service,
		Intended:  total.Intended,
		Intervals: coll.Epochs(clock.Epoch()),
		Cancelled: ctx.Err() != nil,
	}
	if len(cfg.Classes) > 0 {
		res.ByClass = map[string]*hdr.Histogram{}
		for i, name := range cfg.Classes {
			res.ByClass[name] = total.ByClass[i]
		}
	}
	return res, firstErr
}

// clockBase anchors mono. time.Since on a time with a monotonic reading
// reads only the monotonic clock: half the cost of time.Now, which also
// reads the wall clock (~32 ns against ~65 ns on a KVM guest). The
// harness's own cost per operation is what the target does not get.
var clockBase = time.Now()

func mono() time.Duration { return time.Since(clockBase) }

// sleepUntil sleeps d unless the run is stopped meanwhile; it reports
// whether the caller should go on.
//
// Why not just time.Sleep: the Go runtime parks idle threads in the
// network poller, whose timeout has millisecond resolution, so a sub-
// millisecond sleep overshoots by ~0.5 ms on average. In an open loop that
// overshoot would be charged to the target as latency from the intended
// start. So long waits use time.Sleep up to 2 ms before the deadline and
// the rest is a nanosleep, which blocks only this goroutine's thread on a
// high-resolution timer (accurate to ~50 µs, the kernel's timer slack).
func sleepUntil(ctx context.Context, stop *atomic.Bool, d time.Duration) bool {
	deadline := mono() + d
	for {
		left := deadline - mono()
		if left <= 0 {
			return true
		}
		if stop.Load() || ctx.Err() != nil {
			return false
		}
		switch {
		case left > 50*time.Millisecond:
			time.Sleep(50 * time.Millisecond) // stay responsive to stop
		case left > 2*time.Millisecond:
			time.Sleep(left - 2*time.Millisecond)
		default:
			preciseSleep(left)
		}
	}
}
