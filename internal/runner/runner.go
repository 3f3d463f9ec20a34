// Package runner drives operations against a target: a closed loop (N
// goroutines as fast as the target allows) or an open loop (a fixed total
// rate, where each operation has an intended start time and latency is
// measured from it, so a stalled target cannot hide its queue: the
// coordinated-omission correction).
//
// A run is one or several concurrent streams, each with its own operation
// (or driver: event loops that keep many operations in flight, see Drive),
// goroutines, rate and histograms, and may have background tasks: a
// periodic job beside the load (a compaction, a GC pass) timed on its own.
package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
)

// Op performs operation number seq (0-based, unique within its stream) on
// load goroutine g of its stream, under the run's context: a cancel
// of the run reaches an operation waiting on a server. Returning an error
// stops the run: storebench treats an engine error or a failed
// verification as a failed phase, never as a number to average away.
type Op func(ctx context.Context, g int, seq int64) error

// Drive is the other way to run a closed-loop stream: instead of the
// runner calling an Op per operation on each of its goroutines, the
// stream's load is driven by Loops goroutines, each calling Drive once
// with its own *Loop. A driver keeps many operations in flight at once (an
// event loop owning many connections); it draws each operation's sequence
// number from its loop (Loop.Next), completes it, and reports it
// (Loop.Done), returning when Next says there is no more work and its
// in-flight operations are finished, or when ctx ends. The runner's
// accounting is the same as for an Op: the loops share no counter (Next
// hands out loop l's static share l, l+L, l+2L, ... of the operations, so
// an operation count is exact), each loop owns a recorder (per-interval
// and total histograms, progress), and a returned error fails the run.
type Drive func(ctx context.Context, l *Loop) error

// Loop is one driving goroutine's view of the run; it belongs to that
// goroutine.
type Loop struct {
	// ID is the loop's number, 0..Loops-1.
	ID                int
	next, step, bound int64
	stop              *atomic.Bool
	rec               *latency.Recorder
	classOf           func(seq int64) int
}

// Next returns the next operation's sequence number, or false when the
// loop's share is done or the run is stopping (duration reached, context
// ended, an error elsewhere). Once it returned false it keeps doing so.
func (l *Loop) Next() (int64, bool) {
	if l.stop.Load() || (l.bound > 0 && l.next >= l.bound) {
		return 0, false
	}
	seq := l.next
	l.next += l.step
	return seq, true
}

// Stopping says whether the run is stopping; a driver waiting on its
// connections checks it between waits.
func (l *Loop) Stopping() bool { return l.stop.Load() }

// Done records operation seq as completed after service (its start to its
// end). Every sequence number Next handed out should be Done once, unless
// the run was cancelled while it was in flight.
func (l *Loop) Done(seq int64, service time.Duration) {
	c := -1
	if l.classOf != nil {
		c = l.classOf(seq)
	}
	l.rec.RecordClass(c, service, 0, false)
}

// Config says how long and how hard to drive the operations.
type Config struct {
	// Goroutines is the number of load goroutines of this process
	// (default 1). "Worker" is a process (package worker), never a
	// goroutine.
	Goroutines int
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
	// Drive, with Run's op nil, drives the run's one stream with Loops
	// goroutines instead (closed loop only: Rate must be zero);
	// Goroutines is then unused.
	Drive Drive
	Loops int

	// Streams, when set, are run concurrently instead of one operation:
	// Run is then called with a nil Op, and Goroutines, Ops, Rate, Classes
	// and ClassOf above must be left zero (each stream has its own).
	// Duration, Tick, LateAfter and OnTick apply to the whole run.
	Streams []Stream
	// Background tasks run beside the load until it ends.
	Background []Task

	// Part and Parts extend the static partition across processes: when
	// Parts > 1 this run is process Part of Parts sharing one load, each
	// with the same goroutines per stream (G). Goroutine g of this process
	// is then global goroutine Part*G+g of Parts*G and takes sequence
	// numbers Part*G+g, +Parts*G, ...; Ops bounds all processes together
	// and Rate is the total of all of them, each operation's intended start
	// being Start plus seq/Rate. The processes' shares are disjoint and
	// their union is exactly what one process would do with Parts*G
	// goroutines.
	Part, Parts int
	// Start, when set, is the instant the run begins (shared by the
	// processes of a split run): Run waits for it, and the open loop's
	// intended start times count from it.
	Start time.Time
}

// Closed is the configuration of a closed loop of goroutines bounded by
// ops operations, for a caller that drives the runner itself (storebench
// overhead, which measures the runner's own cost); a workload's phases
// are shaped by a workload.Load and run by workload.Measure.
func Closed(goroutines int, ops int64) Config {
	return Config{Goroutines: goroutines, Ops: ops}
}

// Stream is one concurrent load of a run: its own operation, goroutines,
// rate (open loop) or closed loop, bound, and histograms.
type Stream struct {
	Name       string
	Op         Op
	Goroutines int     // default 1
	Rate       float64 // > 0: open loop at this many operations per second
	Ops        int64   // 0: bounded by Config.Duration alone
	Classes    []string
	ClassOf    func(seq int64) int
	// Drive replaces Op (see Drive): Loops goroutines (default 1) each
	// call it once; Goroutines and Rate must then be zero.
	Drive Drive
	Loops int
}

// Task is a background job: Run is called every Every (0: back to back,
// each run starting when the last ends) from the start of the load until
// the load ends. A run in progress when the load ends is waited for; its
// context is cancelled then, so a task that can stop early should. An
// error from Run fails the run like an operation's.
type Task struct {
	Name  string
	Every time.Duration
	Run   func(ctx context.Context, run int64) error
}

// Result of one run. Ops, Late, Service, Intended, Intervals and ByClass
// are the whole run: every stream merged (Intended: the open-loop streams
// only, nil when none is).
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
	// Streams are the results of Config.Streams, in order (nil for a
	// run of one operation).
	Streams []StreamResult
	// Background are the results of Config.Background, in order.
	Background []TaskResult
}

// StreamResult is what one stream did.
type StreamResult struct {
	Name       string
	Goroutines int
	Rate       float64 // offered (0: closed loop)
	Ops        int64
	Late       int64
	// Elapsed runs until the stream's last goroutine ended (a stream
	// bounded by Ops may end before the run).
	Elapsed   time.Duration
	Service   *hdr.Histogram
	Intended  *hdr.Histogram // nil in closed loop
	Intervals []*latency.Interval
	ByClass   map[string]*hdr.Histogram
}

// Achieved is the stream's throughput in operations per second.
func (s StreamResult) Achieved() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}

// TaskResult is what one background task did: Durations holds one value
// per completed run.
type TaskResult struct {
	Name      string
	Every     time.Duration
	Runs      int64
	Busy      time.Duration
	Durations *hdr.Histogram
}

// Rate is the achieved throughput in operations per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// stream is a stream's run-time state.
type stream struct {
	Stream
	coll    *latency.Collector
	wg      sync.WaitGroup
	elapsed time.Duration
}

// run is what a run's load goroutines and background tasks share: the
// process's part of the load, the clock, the stop flag, the start and
// the first error.
type run struct {
	part, parts int
	lateAfter   time.Duration
	clock       *latency.Clock
	// Every load goroutine reads the stop flag before each operation:
	// it gets a cache line of its own (see stopFlag).
	stop     *atomic.Bool
	start    time.Time
	errOnce  sync.Once
	firstErr error
}

// fail records the run's first error and stops it.
func (r *run) fail(err error) {
	r.errOnce.Do(func() { r.firstErr = err })
	r.stop.Store(true)
}

// Run drives op (or cfg.Streams) until every bound is reached, ctx ends,
// or an operation or background task fails. On failure it returns the
// partial Result together with the first error.
func Run(ctx context.Context, cfg Config, op Op) (Result, error) {
	cfg.defaults()
	if cfg.Part < 0 || cfg.Part >= cfg.Parts {
		return Result{}, fmt.Errorf("runner: part %d of %d", cfg.Part, cfg.Parts)
	}
	specs, err := cfg.specs(op)
	if err != nil {
		return Result{}, err
	}
	streams, err := cfg.newStreams(specs)
	if err != nil {
		return Result{}, err
	}
	for _, t := range cfg.Background {
		if t.Run == nil || t.Name == "" || t.Every < 0 {
			return Result{}, fmt.Errorf("runner: background task %q: needs a name, a function and an interval >= 0", t.Name)
		}
	}
	r := &run{part: cfg.Part, parts: cfg.Parts, lateAfter: cfg.LateAfter, clock: new(latency.Clock), stop: &new(stopFlag).Bool}
	start, ok := waitStart(ctx, cfg.Start)
	if !ok {
		return Result{Cancelled: true}, ctx.Err()
	}
	r.start = start
	loadDone := make(chan struct{})
	tickDone := r.tick(ctx, &cfg, streams, loadDone)

	// Background tasks stop when the load does: taskCtx ends then.
	taskCtx, endTasks := context.WithCancel(ctx)
	defer endTasks()
	tasks, taskWG := r.startTasks(taskCtx, cfg.Background)
	r.drive(ctx, streams)
	elapsed := time.Since(start)
	endTasks()
	taskWG.Wait()
	close(loadDone)
	<-tickDone

	res := Result{Elapsed: elapsed, Cancelled: ctx.Err() != nil, Background: tasks}
	if len(cfg.Background) == 0 {
		res.Background = nil
	}
	collect(&res, streams, r.clock.Epoch(), len(cfg.Streams) == 0)
	return res, r.firstErr
}

// defaults fills in the defaults of the run-wide settings.
func (cfg *Config) defaults() {
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.LateAfter <= 0 {
		cfg.LateAfter = time.Millisecond
	}
	if cfg.Parts <= 0 {
		cfg.Parts = 1
	}
}

// specs are the run's streams: cfg.Streams, or the one stream of op (or
// of cfg.Drive).
func (cfg *Config) specs(op Op) ([]Stream, error) {
	switch {
	case (op != nil || cfg.Drive != nil) && len(cfg.Streams) > 0:
		return nil, fmt.Errorf("runner: both an operation and streams given")
	case op != nil && cfg.Drive != nil:
		return nil, fmt.Errorf("runner: both an operation and a driver given")
	case op == nil && cfg.Drive == nil && len(cfg.Streams) == 0:
		return nil, fmt.Errorf("runner: no operation and no stream")
	case op != nil:
		return []Stream{{Op: op, Goroutines: cfg.Goroutines, Rate: cfg.Rate, Ops: cfg.Ops, Classes: cfg.Classes, ClassOf: cfg.ClassOf}}, nil
	case cfg.Drive != nil:
		return []Stream{{Drive: cfg.Drive, Loops: cfg.Loops, Rate: cfg.Rate, Ops: cfg.Ops, Classes: cfg.Classes, ClassOf: cfg.ClassOf}}, nil
	case cfg.Goroutines != 0 || cfg.Ops != 0 || cfg.Rate != 0 || cfg.Classes != nil || cfg.ClassOf != nil || cfg.Loops != 0:
		return nil, fmt.Errorf("runner: with streams, goroutines, operations, rate and classes are each stream's")
	}
	return cfg.Streams, nil
}

// newStreams checks the streams and makes their run-time state.
func (cfg *Config) newStreams(specs []Stream) ([]*stream, error) {
	streams := make([]*stream, len(specs))
	names := map[string]bool{}
	for i, sp := range specs {
		if sp.Drive != nil {
			if sp.Op != nil || sp.Goroutines != 0 || sp.Rate != 0 {
				return nil, fmt.Errorf("runner: stream %q: a driven stream has no operation, goroutines or rate (it is closed loop)", sp.Name)
			}
			sp.Goroutines = max(sp.Loops, 1)
		}
		if sp.Goroutines <= 0 {
			sp.Goroutines = 1
		}
		switch {
		case sp.Op == nil && sp.Drive == nil:
			return nil, fmt.Errorf("runner: stream %q has no operation", sp.Name)
		case sp.Ops <= 0 && cfg.Duration <= 0:
			if len(cfg.Streams) == 0 {
				return nil, fmt.Errorf("runner: neither an operation count nor a duration bounds the run")
			}
			return nil, fmt.Errorf("runner: neither an operation count nor a duration bounds stream %q", sp.Name)
		case sp.Rate < 0:
			return nil, fmt.Errorf("runner: stream %q: negative rate", sp.Name)
		case len(sp.Classes) > 0 && sp.ClassOf == nil:
			return nil, fmt.Errorf("runner: classes without ClassOf")
		case len(cfg.Streams) > 0 && (sp.Name == "" || names[sp.Name]):
			return nil, fmt.Errorf("runner: stream name %q empty or given twice", sp.Name)
		}
		names[sp.Name] = true
		streams[i] = &stream{Stream: sp, coll: latency.NewCollector(sp.Rate > 0, len(sp.Classes))}
	}
	return streams, nil
}

// waitStart waits for the run's start, when one is set (false: ctx
// ended first), and returns it (now when none is set).
func waitStart(ctx context.Context, at time.Time) (time.Time, bool) {
	if at.IsZero() {
		return time.Now(), true
	}
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return at, false
		case <-t.C:
		}
	}
	return at, true
}

// tick starts the ticker goroutine: it drives the time series and the
// stop conditions that are not per-operation (deadline, cancellation),
// until loadDone is closed. The channel it returns is closed when it
// has ended.
func (r *run) tick(ctx context.Context, cfg *Config, streams []*stream, loadDone <-chan struct{}) <-chan struct{} {
	tickDone := make(chan struct{})
	tick, duration, onTick := cfg.Tick, cfg.Duration, cfg.OnTick
	go func() {
		defer close(tickDone)
		t := time.NewTicker(tick)
		defer t.Stop()
		var deadline <-chan time.Time
		if duration > 0 {
			dt := time.NewTimer(duration)
			defer dt.Stop()
			deadline = dt.C
		}
		for {
			select {
			case <-loadDone:
				return
			case <-ctx.Done():
				r.stop.Store(true)
				<-loadDone
				return
			case <-deadline:
				r.stop.Store(true)
				deadline = nil
			case <-t.C:
				r.clock.Tick()
				if onTick != nil {
					onTick(time.Since(r.start), opsSoFar(streams))
				}
			}
		}
	}()
	return tickDone
}

// opsSoFar is the operations the streams have completed.
func opsSoFar(streams []*stream) int64 {
	var n int64
	for _, s := range streams {
		n += s.coll.Ops()
	}
	return n
}

// startTasks starts the background tasks, each until ctx ends.
func (r *run) startTasks(ctx context.Context, background []Task) ([]TaskResult, *sync.WaitGroup) {
	tasks := make([]TaskResult, len(background))
	taskWG := new(sync.WaitGroup)
	for i, t := range background {
		tasks[i] = TaskResult{Name: t.Name, Every: t.Every, Durations: latency.New()}
		taskWG.Add(1)
		go func(t Task, tr *TaskResult) {
			defer taskWG.Done()
			runTask(ctx, r.stop, t, tr, r.fail)
		}(t, &tasks[i])
	}
	return tasks, taskWG
}

// drive runs the streams' load goroutines and returns when every one
// has ended, each stream's elapsed time set.
func (r *run) drive(ctx context.Context, streams []*stream) {
	var all sync.WaitGroup
	for _, s := range streams {
		for g := 0; g < s.Goroutines; g++ {
			s.wg.Add(1)
			go func(s *stream, g int) {
				defer s.wg.Done()
				s.work(ctx, r, g)
			}(s, g)
		}
		all.Add(1)
		go func(s *stream) {
			defer all.Done()
			s.wg.Wait()
			s.elapsed = time.Since(r.start)
		}(s)
	}
	all.Wait()
}

// collect sets res's streams from the streams' collectors (up to epoch
// last), and the whole run's figures: the one stream's when the run was
// of one operation (one), else their sum.
func collect(res *Result, streams []*stream, last uint64, one bool) {
	for _, s := range streams {
		s.coll.Close()
		total := s.coll.Total()
		sr := StreamResult{
			Name: s.Name, Goroutines: s.Goroutines, Rate: s.Rate, Elapsed: s.elapsed,
			Ops: total.Ops, Late: total.Late, Service: total.Service, Intended: total.Intended,
			Intervals: s.coll.Epochs(last),
		}
		if len(s.Classes) > 0 {
			sr.ByClass = map[string]*hdr.Histogram{}
			for i, name := range s.Classes {
				sr.ByClass[name] = total.ByClass[i]
			}
		}
		res.Streams = append(res.Streams, sr)
	}
	if len(res.Streams) == 1 && one {
		// One operation: the whole is the stream.
		sr := res.Streams[0]
		res.Ops, res.Late, res.Service, res.Intended = sr.Ops, sr.Late, sr.Service, sr.Intended
		res.Intervals, res.ByClass, res.Streams = sr.Intervals, sr.ByClass, nil
		return
	}
	mergeStreams(res)
}

// mergeStreams sets the whole run's figures from its streams: exact
// histogram sums, per tick and in total.
func mergeStreams(res *Result) {
	res.Service = latency.New()
	for _, sr := range res.Streams {
		res.Ops += sr.Ops
		res.Late += sr.Late
		res.Service.Merge(sr.Service)
		if sr.Intended != nil {
			if res.Intended == nil {
				res.Intended = latency.New()
			}
			res.Intended.Merge(sr.Intended)
		}
		for name, h := range sr.ByClass {
			if res.ByClass == nil {
				res.ByClass = map[string]*hdr.Histogram{}
			}
			if res.ByClass[name] == nil {
				res.ByClass[name] = latency.New()
			}
			res.ByClass[name].Merge(h)
		}
	}
	if len(res.Streams) == 0 {
		return
	}
	for e := range res.Streams[0].Intervals {
		iv := &latency.Interval{Epoch: uint64(e), Service: latency.New()}
		if res.Intended != nil {
			iv.Intended = latency.New()
		}
		for _, sr := range res.Streams {
			s := sr.Intervals[e]
			iv.Ops += s.Ops
			iv.Late += s.Late
			iv.Service.Merge(s.Service)
			if s.Intended != nil {
				iv.Intended.Merge(s.Intended)
			}
		}
		res.Intervals = append(res.Intervals, iv)
	}
}

// work is load goroutine g of stream s in run r.
func (s *stream) work(ctx context.Context, r *run, g int) {
	rec := s.coll.NewRecorder(r.clock)
	defer rec.Flush()
	// This goroutine's first sequence number and stride: its global
	// index among all processes' goroutines, and their number.
	first, G := int64(r.part*s.Goroutines+g), int64(r.parts*s.Goroutines)
	switch {
	case s.Drive != nil:
		l := &Loop{ID: g, next: first, step: G, bound: s.Ops, stop: r.stop, rec: rec, classOf: s.ClassOf}
		if err := s.Drive(ctx, l); err != nil {
			r.fail(err)
		}
	case s.Rate <= 0:
		s.closed(ctx, r, rec, g, first, G)
	default:
		s.open(ctx, r, rec, g, first, G)
	}
}

// closed is the closed loop of load goroutine g: sequence numbers first,
// first+G, first+2G, ... Operations are partitioned statically so the
// goroutines share no counter on the hot path.
func (s *stream) closed(ctx context.Context, r *run, rec *latency.Recorder, g int, first, G int64) {
	op, classOf, ops, stop := s.Op, s.ClassOf, s.Ops, r.stop // nil classOf: no call on the hot path
	// One clock read per operation, since each operation starts when the
	// previous one ends. The few nanoseconds of loop bookkeeping between
	// them are counted in the service time rather than paying a second
	// read.
	last := mono()
	for seq := first; ops <= 0 || seq < ops; seq += G {
		if stop.Load() {
			return
		}
		if err := op(ctx, g, seq); err != nil {
			r.fail(err)
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
}

// open is the open loop of load goroutine g (see closed): each operation
// has an intended start, the run's start plus seq/Rate.
func (s *stream) open(ctx context.Context, r *run, rec *latency.Recorder, g int, first, G int64) {
	op, classOf, ops, stop, lateAfter := s.Op, s.ClassOf, s.Ops, r.stop, r.lateAfter
	rate := s.Rate
	startMono := mono() - time.Since(r.start)
	for seq := first; ops <= 0 || seq < ops; seq += G {
		if stop.Load() {
			return
		}
		intended := startMono + time.Duration(float64(seq)/rate*float64(time.Second))
		if d := intended - mono(); d > 0 {
			if !sleepUntil(ctx, stop, d) {
				return
			}
		}
		t0 := mono()
		if err := op(ctx, g, seq); err != nil {
			r.fail(err)
			return
		}
		t1 := mono()
		c := -1
		if classOf != nil {
			c = classOf(seq)
		}
		rec.RecordClass(c, t1-t0, t1-intended, t0-intended > lateAfter)
	}
}

// stopFlag is the run's stop flag alone on its cache line. A flag
// allocated as a bare atomic.Bool is a one-byte object that Go's tiny
// allocator packs into 16 bytes with other small objects; a write to one
// of those by any goroutine would invalidate the line that every load
// goroutine reads on each operation.
type stopFlag struct {
	atomic.Bool
	_ [64 - unsafe.Sizeof(atomic.Bool{})]byte
}

// runTask runs one background task until ctx ends (the load ended or the
// run was cancelled) or the run stops.
func runTask(ctx context.Context, stop *atomic.Bool, t Task, tr *TaskResult, fail func(error)) {
	var tick <-chan time.Time
	if t.Every > 0 {
		tk := time.NewTicker(t.Every)
		defer tk.Stop()
		tick = tk.C
	}
	for run := int64(0); ; run++ {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		}
		if ctx.Err() != nil || stop.Load() {
			return
		}
		t0 := mono()
		err := t.Run(ctx, run)
		d := mono() - t0
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// Cut short by the end of the load: not a failure, and
				// not a complete run to time.
				return
			}
			fail(fmt.Errorf("background task %s (run %d): %w", t.Name, run+1, err))
			return
		}
		tr.Runs++
		tr.Busy += d
		latency.Record(tr.Durations, d)
	}
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
