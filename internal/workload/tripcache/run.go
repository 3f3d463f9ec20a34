package tripcache

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/workload"
	"storebench/internal/workload/tripcache/tripgen"
)

// Classes of a processed tick (service time per class in ByOp).
var tickClasses = []string{"create", "update", "complete"}

const (
	classCreate = iota
	classUpdate
	classComplete
)

// Classes of a cache operation.
var opClasses = []string{"get", "put"}

// source is where the consumer reads ticks from: the socket or Kafka.
type source interface {
	// next returns the next tick's encoding (valid until the next call),
	// io.EOF at the end of the stream.
	next() ([]byte, error)
	// ordered says ticks arrive in index order (one socket); Kafka
	// keeps order per partition only.
	ordered() bool
	// lanes is how many lanes the transport keeps order in: a trip's
	// ticks travel in lane trip mod lanes, in index order within it (1
	// for the socket; Kafka's partitions). When a trial is cut, how far
	// each lane was read tells which trips were read whole.
	lanes() int
	// stop makes next return soon (the consumer's deadline).
	stop()
	// finish waits for the generator and tells how it ended: nil when it
	// sent everything; cut says the consumer stopped it on purpose.
	finish(cut bool) (genCPU time.Duration, err error)
	// facts describe the transport for the report.
	facts() map[string]string
	// transportCPU is the CPU a managed transport (the Kafka broker)
	// used over the step (after finish; 0: none measured).
	transportCPU() time.Duration
}

type run struct {
	p          Params
	step       workload.Step
	env        *workload.Env
	cache      cache
	cfg        tripgen.Config
	dur        time.Duration
	goroutines int
	// open is a test's transport (nil: the step's phase names it).
	open func(ctx context.Context, total uint64) (source, int64, error)
}

// counter is padded to its own cache line: each processing goroutine
// counts its ticks without sharing a line with another.
type counter struct {
	n atomic.Int64
	_ [56]byte
}

type tickSample struct {
	queue, backlog int64
	rss            int64
	cpu            float64
}

func (r *run) execute(ctx context.Context) (*results.Step, error) {
	total := uint64(r.cfg.Rate * r.dur.Seconds())
	if total < 1 {
		total = 1
	}
	src, startNs, err := r.openSource(ctx, total)
	if err != nil {
		return nil, err
	}
	stream, err := tripgen.New(r.cfg, startNs)
	if err != nil {
		src.finish(true)
		return nil, err
	}
	t := r.newTrial(ctx, src, stream, startNs, total)
	defer t.cancel()

	if r.env.Window != nil {
		r.env.Window(true)
	}
	cpu0, cpuOK := readCPUTimes()
	// The consumer reads until the end of the stream or the deadline, the
	// grace past the last tick's due time.
	deadline := time.Unix(0, startNs).Add(r.dur + time.Duration(r.p.Grace))
	timer := time.AfterFunc(time.Until(deadline), func() { t.cut.Store(true); src.stop() })
	defer timer.Stop()
	t.consume()
	cpu1, cpuOK1 := readCPUTimes()
	if r.env.Window != nil {
		r.env.Window(false)
	}
	t.ticks.Close()
	t.ops.Close()
	genCPU, genErr := src.finish(t.cut.Load() || t.firstErr != nil || ctx.Err() != nil)

	st := t.result()
	t.addCounts(st, genCPU)
	if cpuOK && cpuOK1 {
		st.Metrics["machine_cpu_percent"], st.Metrics["machine_iowait_percent"] = machineCPU(cpu0, cpu1)
	}
	if ctx.Err() != nil {
		st.Partial = true
		return st, ctx.Err()
	}
	if t.firstErr != nil {
		return st, t.firstErr
	}
	if genErr != nil {
		return st, fmt.Errorf("tripcache: the generator: %w", genErr)
	}
	// Every completed trip whose ticks were all read is read back and
	// compared with what the generator produced. All ticks read were
	// processed (the queues were drained), so the set is exact.
	if err := r.verify(ctx, stream, t.through, st); err != nil {
		return st, err
	}
	return st, nil
}

// openSource starts the step's transport (or a test's): the source to
// read ticks from and the stream's start, in Unix nanoseconds.
func (r *run) openSource(ctx context.Context, total uint64) (source, int64, error) {
	switch {
	case r.open != nil:
		return r.open(ctx, total)
	case r.step.Phase == tripgen.TransportSocket:
		return startSocket(ctx, r.cfg, total)
	case r.step.Phase == tripgen.TransportKafka:
		return startKafka(ctx, r.p, r.step, r.cfg, total)
	}
	return nil, 0, fmt.Errorf("tripcache: unknown transport %q", r.step.Phase)
}

// trial is one execution's shared state: the transport, the queues from
// the reader to the processing goroutines, what they measure and count,
// and the first error, which stops them all.
type trial struct {
	r       *run
	src     source
	stream  *tripgen.Stream
	startNs int64
	total   uint64
	// ctx is the processing's: the first error cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	errOnce  sync.Once
	firstErr error

	queues     []chan tripgen.Tick
	clock      *latency.Clock
	ticks, ops *latency.Collector
	done       []counter
	lateAfter  int64
	lastDone   atomic.Int64
	read       atomic.Int64
	created    atomic.Int64
	completed  atomic.Int64
	// createdKeys is the bytes of the created trips' keys.
	createdKeys atomic.Int64
	cut         atomic.Bool
	// through[l] is one past the index of the last tick read in lane l
	// (0: none yet); the reader's own until it is done.
	through []uint64

	smu     sync.Mutex
	samples []tickSample
}

func (r *run) newTrial(ctx context.Context, src source, stream *tripgen.Stream, startNs int64, total uint64) *trial {
	t := &trial{r: r, src: src, stream: stream, startNs: startNs, total: total}
	t.ctx, t.cancel = context.WithCancel(ctx)
	perQueue := max(1, r.p.Queue/r.goroutines)
	t.queues = make([]chan tripgen.Tick, r.goroutines)
	for i := range t.queues {
		t.queues[i] = make(chan tripgen.Tick, perQueue)
	}
	t.clock = &latency.Clock{}
	t.ticks = latency.NewCollector(true, len(tickClasses))
	t.ops = latency.NewCollector(false, len(opClasses))
	t.done = make([]counter, r.goroutines)
	t.lateAfter = int64(r.p.LateAfter)
	t.through = make([]uint64, max(1, src.lanes()))
	return t
}

// fail keeps the first error and stops the trial.
func (t *trial) fail(err error) {
	t.errOnce.Do(func() { t.firstErr = err })
	t.cancel()
}

// processed is how many ticks the processing goroutines have done.
func (t *trial) processed() int64 {
	var n int64
	for i := range t.done {
		n += t.done[i].n.Load()
	}
	return n
}

// consume runs the reader, the processing goroutines and the sampler
// until the stream ends (or is cut) and every tick read is processed.
func (t *trial) consume() {
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer func() {
			for _, q := range t.queues {
				close(q)
			}
		}()
		t.readAll()
	}()
	var wg sync.WaitGroup
	for w := range t.queues {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			t.process(w)
		}(w)
	}
	sampleStop := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t.sample(sampleStop)
	}()
	<-readerDone
	wg.Wait()
	close(sampleStop)
	<-samplerDone
}

// readAll is the reader: ticks into the queues, by trip, until the end
// of the stream or the deadline. A full queue blocks it, and with it the
// socket and the generator: the backlog then builds where it is measured
// (ticks due but not processed), never silently dropped.
func (t *trial) readAll() {
	lanes := uint64(len(t.through))
	var next uint64
	for {
		p, err := t.src.next()
		if err != nil {
			if err == io.EOF || t.cut.Load() || t.ctx.Err() != nil {
				return
			}
			t.fail(fmt.Errorf("tripcache: reading the stream: %w", err))
			return
		}
		tk, err := tripgen.Decode(p)
		if err != nil {
			t.fail(fmt.Errorf("tripcache: %w", err))
			return
		}
		if err := t.checkOrder(tk, next); err != nil {
			t.fail(err)
			return
		}
		next = tk.Index + 1
		t.through[tk.Trip%lanes] = tk.Index + 1
		t.read.Add(1)
		select {
		case t.queues[tk.Trip%uint64(len(t.queues))] <- tk:
		case <-t.ctx.Done():
			return
		}
	}
}

// checkOrder fails a tick that arrives out of the transport's order: off
// the index order on an ordered transport (next is the index due), or
// behind what its lane already delivered.
func (t *trial) checkOrder(tk tripgen.Tick, next uint64) error {
	if t.src.ordered() && tk.Index != next {
		what := "lost"
		if tk.Index < next {
			what = "duplicated"
		}
		return &workload.VerifyError{Phase: t.r.step.Phase, Key: tripKey(nil, tk.Trip),
			What: fmt.Sprintf("tick %d arrived where tick %d was due: a tick was %s in transport", tk.Index, next, what)}
	}
	lanes := uint64(len(t.through))
	lane := tk.Trip % lanes
	if tk.Index < t.through[lane] {
		return &workload.VerifyError{Phase: t.r.step.Phase, Key: tripKey(nil, tk.Trip),
			What: fmt.Sprintf("tick %d after tick %d in lane %d of %d: duplicated or reordered in transport", tk.Index, t.through[lane]-1, lane, lanes)}
	}
	return nil
}

// processor is one processing goroutine: its recorders and buffers.
type processor struct {
	t         *trial
	w         int
	rec, orec *latency.Recorder
	key, val  []byte
	tr        record
}

// process applies the ticks of queue w to the cache.
func (t *trial) process(w int) {
	p := &processor{t: t, w: w, rec: t.ticks.NewRecorder(t.clock), orec: t.ops.NewRecorder(t.clock)}
	defer p.rec.Flush()
	defer p.orec.Flush()
	for tk := range t.queues[w] {
		if t.ctx.Err() != nil {
			continue // drain so the reader is not blocked
		}
		p.apply(tk)
	}
}

// apply applies one tick: a trip's start makes its record, any other
// tick updates the cached one; the record is put back and the tick's
// service time and latency from its generation recorded.
func (p *processor) apply(tk tripgen.Tick) {
	t := p.t
	t0 := time.Now()
	late := t0.UnixNano()-tk.GenNs > t.lateAfter
	p.key = tripKey(p.key, tk.Trip)
	class := classCreate
	if tk.Flags&tripgen.FlagStart != 0 {
		p.tr = record{Trip: tripgen.Trip{ID: tk.Trip, Sensor: tk.Sensor, Ticks: 1, FirstSeq: tk.Seq,
			StartNs: tk.GenNs, EndNs: tk.GenNs, StartLat: tk.Lat, StartLon: tk.Lon, EndLat: tk.Lat, EndLon: tk.Lon},
			LastSeq: tk.Seq, MaxSpeed: tk.Speed, Completed: tk.Flags&tripgen.FlagEnd != 0}
		t.created.Add(1)
		t.createdKeys.Add(int64(len(p.key)))
	} else {
		c, err := p.advance(tk)
		if err != nil {
			t.fail(err)
			return
		}
		class = c
	}
	if p.tr.Completed {
		t.completed.Add(1)
	}
	p.val = p.tr.encode(p.val)
	p0 := time.Now()
	if err := t.r.cache.put(t.ctx, p.key, p.val, class == classCreate); err != nil {
		t.fail(fmt.Errorf("tripcache: put trip %d: %w", tk.Trip, err))
		return
	}
	t1 := time.Now()
	p.orec.RecordClass(1, t1.Sub(p0), 0, false)
	end := t1.UnixNano()
	p.rec.RecordClass(class, t1.Sub(t0), time.Duration(end-tk.GenNs), late)
	t.done[p.w].n.Add(1)
	for {
		l := t.lastDone.Load()
		if end <= l || t.lastDone.CompareAndSwap(l, end) {
			break
		}
	}
}

// advance reads tick tk's trip from the cache, checks the tick follows
// its last one and adds it to the record: its class is an update or,
// with the trip's last tick, a completion.
func (p *processor) advance(tk tripgen.Tick) (int, error) {
	t := p.t
	g0 := time.Now()
	v, found, err := t.r.cache.get(t.ctx, p.key)
	g1 := time.Now()
	p.orec.RecordClass(0, g1.Sub(g0), 0, false)
	if err != nil {
		return 0, fmt.Errorf("tripcache: get trip %d: %w", tk.Trip, err)
	}
	if !found {
		return 0, &workload.VerifyError{Phase: t.r.step.Phase, Key: p.key, What: fmt.Sprintf("tick %d (seq %d) finds no trip: its start was lost", tk.Index, tk.Seq)}
	}
	tr := &p.tr
	if err := tr.decode(v); err != nil {
		return 0, &workload.VerifyError{Phase: t.r.step.Phase, Key: p.key, What: err.Error()}
	}
	if tr.Completed || tk.Seq != tr.LastSeq+1 || tr.ID != tk.Trip {
		what := "lost"
		if tr.Completed || tk.Seq <= tr.LastSeq {
			what = "duplicated"
		}
		return 0, &workload.VerifyError{Phase: t.r.step.Phase, Key: p.key, What: fmt.Sprintf("tick %d (seq %d) after seq %d (completed %v): a tick was %s", tk.Index, tk.Seq, tr.LastSeq, tr.Completed, what)}
	}
	tr.Meters += tripgen.Distance(tr.EndLat, tr.EndLon, tk.Lat, tk.Lon)
	tr.Ticks++
	tr.LastSeq = tk.Seq
	tr.EndNs, tr.EndLat, tr.EndLon = tk.GenNs, tk.Lat, tk.Lon
	tr.MaxSpeed = max(tr.MaxSpeed, tk.Speed)
	if tk.Flags&tripgen.FlagEnd != 0 {
		tr.Completed = true
		return classComplete, nil
	}
	return classUpdate, nil
}

// sample is the sampler: one tick a second from the stream's start, the
// queue's length (the seed's indicator) and the backlog (ticks due by
// now and not yet processed: the queue, the socket and the generator's
// lag together), until stop is closed.
func (t *trial) sample(stop <-chan struct{}) {
	r := t.r
	for k := 1; ; k++ {
		at := time.Unix(0, t.startNs).Add(time.Duration(k) * time.Second)
		select {
		case <-stop:
			return
		case <-time.After(time.Until(at)):
		}
		t.clock.Tick()
		var q int64
		for _, c := range t.queues {
			q += int64(len(c))
		}
		due := int64(float64(time.Since(time.Unix(0, t.startNs)).Seconds()) * r.cfg.Rate)
		due = min(due, int64(t.total))
		s := tickSample{queue: q, backlog: max(0, due-t.processed())}
		if r.env.Sample != nil {
			s.rss, s.cpu = r.env.Sample()
		}
		if r.env.Progress != nil {
			r.env.Progress(t.processed(), int64(t.total))
		}
		t.smu.Lock()
		t.samples = append(t.samples, s)
		t.smu.Unlock()
	}
}

// addCounts adds to the step what the trial counted beside its
// latencies: the transport's facts, the trips, the generator's and the
// transport's CPU, the ticks read, and whether the consumer was cut.
func (t *trial) addCounts(st *results.Step, genCPU time.Duration) {
	st.Facts = t.src.facts()
	st.Metrics["trips_created"] = float64(t.created.Load())
	st.Metrics["trips_completed"] = float64(t.completed.Load())
	workload.SetItemBytes(st, itemBytes(t.created.Load(), t.createdKeys.Load(), t.r.step.N))
	st.Metrics["generator_cpu_s"] = genCPU.Seconds()
	if c := t.src.transportCPU(); c > 0 {
		st.Metrics["transport_cpu_s"] = c.Seconds()
	}
	st.Metrics["ticks_read"] = float64(t.read.Load())
	if t.cut.Load() {
		st.Facts["cut"] = fmt.Sprintf("the consumer stopped reading %s after the last tick was due, with %d of %d ticks read", time.Duration(t.r.p.Grace), t.read.Load(), t.total)
	}
}

// verify reads back every completed trip whose every tick was read:
// those whose last tick is below how far their lane was read (through,
// per lane, as the reader left it). A trip's ticks travel in its lane in
// order, so its last tick read means all were. Ticks are not read in
// index order across lanes (Kafka's partitions), so when a trial is cut
// the ticks read are not the stream's first ones: a trip of a lane read
// less far may have ended before ticks read in another and still be
// incomplete in the cache. A tick lost inside a lane is still found:
// its trip is verified if a later tick of the lane was read (and a lost
// tick that is not a trip's last fails the run as it is applied).
func (r *run) verify(ctx context.Context, s *tripgen.Stream, through []uint64, st *results.Step) error {
	var key []byte
	var got record
	var err error
	checked := int64(0)
	lanes := uint64(len(through))
	hi := uint64(0)
	for _, t := range through {
		hi = max(hi, t)
	}
	s.Completed(hi, func(want tripgen.Trip, last uint64) bool {
		if err = ctx.Err(); err != nil {
			return false
		}
		if last >= through[want.ID%lanes] {
			return true // its lane was not read as far as its last tick
		}
		key = tripKey(key, want.ID)
		v, found, gerr := r.cache.get(ctx, key)
		switch {
		case gerr != nil:
			err = fmt.Errorf("tripcache: verify trip %d: %w", want.ID, gerr)
		case !found:
			err = &workload.VerifyError{Phase: r.step.Phase, Key: key, What: "completed trip missing from the cache"}
		default:
			if derr := got.decode(v); derr != nil {
				err = &workload.VerifyError{Phase: r.step.Phase, Key: key, What: derr.Error()}
			} else if !got.Completed || got.Trip != want {
				err = &workload.VerifyError{Phase: r.step.Phase, Key: key, What: fmt.Sprintf("trip %+v (completed %v), the generator made %+v", got.Trip, got.Completed, want)}
			}
		}
		if err != nil {
			return false
		}
		checked++
		return true
	})
	st.Verify.Checked = checked
	st.Metrics["trips_verified"] = float64(checked)
	if err != nil {
		st.Verify.Failed = 1
		st.Verify.First = err.Error()
		return err
	}
	return nil
}

// result builds the step from what was measured.
func (t *trial) result() *results.Step {
	r := t.r
	processed, total, lastDone := t.processed(), int64(t.total), t.lastDone.Load()
	start := time.Unix(0, t.startNs)
	// The achieved rate is the ticks processed over the stream's length
	// when every tick was processed: how late they were is the e2e
	// latency's and the late count's to say, and a slow last tick must
	// not count twice (on a trial of a few seconds, one 200 ms stall at
	// the end would cost 5% of the rate). A consumer that could not
	// finish within the grace is judged over the time it took.
	elapsed := r.dur
	if processed < total && lastDone > t.startNs {
		elapsed = max(r.dur, time.Duration(lastDone-t.startNs))
	}
	tot := t.ticks.Total()
	st := &results.Step{
		Started: start, Seconds: elapsed.Seconds(), Ops: processed, Unit: "tick",
		Latency: latency.Summarize(tot.Service), Rate: r.cfg.Rate, Late: tot.Late,
	}
	in := latency.Summarize(tot.Intended)
	st.Intended = &in
	st.Hist, _ = latency.Encode(tot.Service)
	st.HistIntended, _ = latency.Encode(tot.Intended)
	st.ByOp = map[string]latency.Summary{}
	for i, h := range tot.ByClass {
		if h.TotalCount() > 0 {
			st.ByOp[tickClasses[i]] = latency.Summarize(h)
		}
	}
	otot := t.ops.Total()
	var cacheOps int64
	for i, h := range otot.ByClass {
		if h.TotalCount() > 0 {
			st.ByOp[opClasses[i]] = latency.Summarize(h)
			cacheOps += h.TotalCount()
		}
	}
	samples := t.samples
	qmax, qsum := addSeries(st, t.ticks.Epochs(t.clock.Epoch()), samples, elapsed)
	qmean := 0.0
	if len(samples) > 0 {
		qmean = float64(qsum) / float64(len(samples))
	}
	var backlogEnd int64
	if len(samples) > 0 {
		backlogEnd = samples[len(samples)-1].backlog
	}
	secs := elapsed.Seconds()
	cfg := t.stream.Config()
	st.Metrics = map[string]float64{
		"ticks": float64(processed), "ticks_per_s": float64(processed) / secs, "offered_per_s": r.cfg.Rate,
		"ticks_offered": float64(total),
		"cache_ops":     float64(cacheOps), "cache_ops_per_s": float64(cacheOps) / secs,
		"e2e_p99_ns": float64(in.P99), "queue_max": float64(qmax), "queue_mean": qmean,
		"queue_capacity": float64(max(1, r.p.Queue/r.goroutines) * r.goroutines), "backlog_end": float64(backlogEnd),
		"goroutines": float64(r.goroutines), "sensors": float64(cfg.Sensors * cfg.Multiplier),
	}
	return st
}

// addSeries adds the step's per-second series and intervals from the
// epochs' intervals (the step started at st.Started and lasted elapsed)
// and the sampler's samples; it returns the largest queue sampled and
// the sum of the queues sampled.
func addSeries(st *results.Step, ivs []*latency.Interval, samples []tickSample, elapsed time.Duration) (qmax, qsum int64) {
	start := st.Started
	for i, iv := range ivs {
		t := results.Tick{T: float64(i + 1), Ops: iv.Ops, Late: iv.Late}
		dur := time.Second
		if i == len(ivs)-1 {
			dur = elapsed - time.Duration(i)*time.Second
			t.T = elapsed.Seconds()
		}
		if dur > 0 {
			t.OpsPerS = float64(iv.Ops) / dur.Seconds()
		}
		if iv.Service.TotalCount() > 0 {
			t.P50, t.P99, t.Max = iv.Service.ValueAtQuantile(50), iv.Service.ValueAtQuantile(99), iv.Service.Max()
		}
		if iv.Intended.TotalCount() > 0 {
			t.IntendedP99, t.IntendedMax = iv.Intended.ValueAtQuantile(99), iv.Intended.Max()
		}
		if i < len(samples) {
			sm := samples[i]
			t.RSSBytes, t.CPU = sm.rss, sm.cpu
			t.Counts = map[string]int64{"queue": sm.queue, "backlog": sm.backlog}
			qmax = max(qmax, sm.queue)
			qsum += sm.queue
		}
		st.Series = append(st.Series, t)
		enc, _ := latency.Encode(iv.Service)
		ri := results.Interval{StartMs: start.Add(time.Duration(i) * time.Second).UnixMilli(), LenMs: dur.Milliseconds(), MaxNs: iv.Service.Max(), Hist: enc}
		ri.HistIntended, _ = latency.Encode(iv.Intended)
		ri.MaxIntendedNs = iv.Intended.Max()
		st.Intervals = append(st.Intervals, ri)
	}
	return qmax, qsum
}

// itemBytes is one trip as the consumer writes it: its key ("trip:<id>",
// whose length grows with the id) and its record (recordSize), the key
// the mean of the trips the step created (each kept under its one key);
// with none created, that of the last trip of the first round (n trips
// under way, ids 0..n-1).
func itemBytes(created, keyBytes, n int64) float64 {
	if created == 0 {
		return float64(len(tripKey(nil, uint64(max(n-1, 0)))) + recordSize)
	}
	return float64(keyBytes)/float64(created) + recordSize
}
