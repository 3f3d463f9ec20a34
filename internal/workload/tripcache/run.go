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
	p       Params
	step    workload.Step
	env     *workload.Env
	cache   cache
	cfg     tripgen.Config
	dur     time.Duration
	workers int
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
	var src source
	var startNs int64
	var err error
	switch {
	case r.open != nil:
		src, startNs, err = r.open(ctx, total)
	case r.step.Phase == tripgen.TransportSocket:
		src, startNs, err = startSocket(ctx, r.cfg, total)
	case r.step.Phase == tripgen.TransportKafka:
		src, startNs, err = startKafka(ctx, r.p, r.step, r.cfg, total)
	default:
		err = fmt.Errorf("tripcache: unknown transport %q", r.step.Phase)
	}
	if err != nil {
		return nil, err
	}
	stream, err := tripgen.New(r.cfg, startNs)
	if err != nil {
		src.finish(true)
		return nil, err
	}

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		cancel()
	}

	perQueue := max(1, r.p.Queue/r.workers)
	queues := make([]chan tripgen.Tick, r.workers)
	for i := range queues {
		queues[i] = make(chan tripgen.Tick, perQueue)
	}
	clock := &latency.Clock{}
	ticks := latency.NewCollector(true, len(tickClasses))
	ops := latency.NewCollector(false, len(opClasses))
	done := make([]counter, r.workers)
	var lastDone atomic.Int64
	var read atomic.Int64
	var created, completed atomic.Int64
	var createdKeys atomic.Int64 // bytes of the created trips' keys
	lateAfter := int64(r.p.LateAfter)

	if r.env.Window != nil {
		r.env.Window(true)
	}
	cpu0, cpuOK := readCPUTimes()

	// The reader: ticks into the queues, by trip, until the end of the
	// stream or the deadline. A full queue blocks it, and with it the
	// socket and the generator: the backlog then builds where it is
	// measured (ticks due but not processed), never silently dropped.
	deadline := time.Unix(0, startNs).Add(r.dur + time.Duration(r.p.Grace))
	cut := atomic.Bool{}
	timer := time.AfterFunc(time.Until(deadline), func() { cut.Store(true); src.stop() })
	defer timer.Stop()
	// through[l] is one past the index of the last tick read in lane l
	// (0: none yet); the reader's own until it is done.
	lanes := uint64(max(1, src.lanes()))
	through := make([]uint64, lanes)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		var next uint64
		for {
			p, err := src.next()
			if err != nil {
				if err == io.EOF || cut.Load() || pctx.Err() != nil {
					return
				}
				fail(fmt.Errorf("tripcache: reading the stream: %w", err))
				return
			}
			tk, err := tripgen.Decode(p)
			if err != nil {
				fail(fmt.Errorf("tripcache: %w", err))
				return
			}
			if src.ordered() && tk.Index != next {
				what := "lost"
				if tk.Index < next {
					what = "duplicated"
				}
				fail(&workload.VerifyError{Phase: r.step.Phase, Key: tripKey(nil, tk.Trip),
					What: fmt.Sprintf("tick %d arrived where tick %d was due: a tick was %s in transport", tk.Index, next, what)})
				return
			}
			next = tk.Index + 1
			lane := tk.Trip % lanes
			if tk.Index < through[lane] {
				fail(&workload.VerifyError{Phase: r.step.Phase, Key: tripKey(nil, tk.Trip),
					What: fmt.Sprintf("tick %d after tick %d in lane %d of %d: duplicated or reordered in transport", tk.Index, through[lane]-1, lane, lanes)})
				return
			}
			through[lane] = tk.Index + 1
			read.Add(1)
			select {
			case queues[tk.Trip%uint64(r.workers)] <- tk:
			case <-pctx.Done():
				return
			}
		}
	}()

	// The processing goroutines.
	var wg sync.WaitGroup
	for w := 0; w < r.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rec := ticks.NewRecorder(clock)
			orec := ops.NewRecorder(clock)
			defer rec.Flush()
			defer orec.Flush()
			var key, val []byte
			var tr record
			for tk := range queues[w] {
				if pctx.Err() != nil {
					continue // drain so the reader is not blocked
				}
				t0 := time.Now()
				late := t0.UnixNano()-tk.GenNs > lateAfter
				key = tripKey(key, tk.Trip)
				class := classCreate
				if tk.Flags&tripgen.FlagStart != 0 {
					tr = record{Trip: tripgen.Trip{ID: tk.Trip, Sensor: tk.Sensor, Ticks: 1, FirstSeq: tk.Seq,
						StartNs: tk.GenNs, EndNs: tk.GenNs, StartLat: tk.Lat, StartLon: tk.Lon, EndLat: tk.Lat, EndLon: tk.Lon},
						LastSeq: tk.Seq, MaxSpeed: tk.Speed, Completed: tk.Flags&tripgen.FlagEnd != 0}
					created.Add(1)
					createdKeys.Add(int64(len(key)))
				} else {
					g0 := time.Now()
					v, found, err := r.cache.get(pctx, key)
					g1 := time.Now()
					orec.RecordClass(0, g1.Sub(g0), 0, false)
					if err != nil {
						fail(fmt.Errorf("tripcache: get trip %d: %w", tk.Trip, err))
						continue
					}
					if !found {
						fail(&workload.VerifyError{Phase: r.step.Phase, Key: key, What: fmt.Sprintf("tick %d (seq %d) finds no trip: its start was lost", tk.Index, tk.Seq)})
						continue
					}
					if err := tr.decode(v); err != nil {
						fail(&workload.VerifyError{Phase: r.step.Phase, Key: key, What: err.Error()})
						continue
					}
					if tr.Completed || tk.Seq != tr.LastSeq+1 || tr.ID != tk.Trip {
						what := "lost"
						if tr.Completed || tk.Seq <= tr.LastSeq {
							what = "duplicated"
						}
						fail(&workload.VerifyError{Phase: r.step.Phase, Key: key, What: fmt.Sprintf("tick %d (seq %d) after seq %d (completed %v): a tick was %s", tk.Index, tk.Seq, tr.LastSeq, tr.Completed, what)})
						continue
					}
					tr.Meters += tripgen.Distance(tr.EndLat, tr.EndLon, tk.Lat, tk.Lon)
					tr.Ticks++
					tr.LastSeq = tk.Seq
					tr.EndNs, tr.EndLat, tr.EndLon = tk.GenNs, tk.Lat, tk.Lon
					tr.MaxSpeed = max(tr.MaxSpeed, tk.Speed)
					class = classUpdate
					if tk.Flags&tripgen.FlagEnd != 0 {
						tr.Completed = true
						class = classComplete
					}
				}
				if tr.Completed {
					completed.Add(1)
				}
				val = tr.encode(val)
				p0 := time.Now()
				if err := r.cache.put(pctx, key, val, class == classCreate); err != nil {
					fail(fmt.Errorf("tripcache: put trip %d: %w", tk.Trip, err))
					continue
				}
				t1 := time.Now()
				orec.RecordClass(1, t1.Sub(p0), 0, false)
				end := t1.UnixNano()
				rec.RecordClass(class, t1.Sub(t0), time.Duration(end-tk.GenNs), late)
				done[w].n.Add(1)
				for {
					l := lastDone.Load()
					if end <= l || lastDone.CompareAndSwap(l, end) {
						break
					}
				}
			}
		}(w)
	}

	// The sampler: one tick a second from the stream's start, the
	// queue's length (the seed's indicator) and the backlog (ticks due
	// by now and not yet processed: the queue, the socket and the
	// generator's lag together).
	var samples []tickSample
	var smu sync.Mutex
	sampleStop := make(chan struct{})
	samplerDone := make(chan struct{})
	processed := func() int64 {
		var n int64
		for i := range done {
			n += done[i].n.Load()
		}
		return n
	}
	go func() {
		defer close(samplerDone)
		for k := 1; ; k++ {
			at := time.Unix(0, startNs).Add(time.Duration(k) * time.Second)
			select {
			case <-sampleStop:
				return
			case <-time.After(time.Until(at)):
			}
			clock.Tick()
			var q int64
			for _, c := range queues {
				q += int64(len(c))
			}
			due := int64(float64(time.Since(time.Unix(0, startNs)).Seconds()) * r.cfg.Rate)
			due = min(due, int64(total))
			s := tickSample{queue: q, backlog: max(0, due-processed())}
			if r.env.Sample != nil {
				s.rss, s.cpu = r.env.Sample()
			}
			if r.env.Progress != nil {
				r.env.Progress(processed(), int64(total))
			}
			smu.Lock()
			samples = append(samples, s)
			smu.Unlock()
		}
	}()

	<-readerDone
	wg.Wait()
	close(sampleStop)
	<-samplerDone
	cpu1, cpuOK1 := readCPUTimes()
	if r.env.Window != nil {
		r.env.Window(false)
	}
	ticks.Close()
	ops.Close()
	genCPU, genErr := src.finish(cut.Load() || firstErr != nil || ctx.Err() != nil)

	st := r.result(stream, startNs, lastDone.Load(), ticks, ops, clock, samples, processed(), int64(total))
	st.Facts = src.facts()
	st.Metrics["trips_created"] = float64(created.Load())
	st.Metrics["trips_completed"] = float64(completed.Load())
	workload.SetItemBytes(st, itemBytes(created.Load(), createdKeys.Load(), r.step.N))
	st.Metrics["generator_cpu_s"] = genCPU.Seconds()
	if c := src.transportCPU(); c > 0 {
		st.Metrics["transport_cpu_s"] = c.Seconds()
	}
	st.Metrics["ticks_read"] = float64(read.Load())
	if cpuOK && cpuOK1 {
		st.Metrics["machine_cpu_percent"], st.Metrics["machine_iowait_percent"] = machineCPU(cpu0, cpu1)
	}
	if cut.Load() {
		st.Facts["cut"] = fmt.Sprintf("the consumer stopped reading %s after the last tick was due, with %d of %d ticks read", time.Duration(r.p.Grace), read.Load(), total)
	}
	if ctx.Err() != nil {
		st.Partial = true
		return st, ctx.Err()
	}
	if firstErr != nil {
		return st, firstErr
	}
	if genErr != nil {
		return st, fmt.Errorf("tripcache: the generator: %w", genErr)
	}
	// Every completed trip whose ticks were all read is read back and
	// compared with what the generator produced. All ticks read were
	// processed (the queues were drained), so the set is exact.
	if err := r.verify(ctx, stream, through, st); err != nil {
		return st, err
	}
	return st, nil
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
func (r *run) result(s *tripgen.Stream, startNs, lastDone int64, ticks, ops *latency.Collector, clock *latency.Clock,
	samples []tickSample, processed, total int64) *results.Step {
	start := time.Unix(0, startNs)
	// The achieved rate is the ticks processed over the stream's length
	// when every tick was processed: how late they were is the e2e
	// latency's and the late count's to say, and a slow last tick must
	// not count twice (on a trial of a few seconds, one 200 ms stall at
	// the end would cost 5% of the rate). A consumer that could not
	// finish within the grace is judged over the time it took.
	elapsed := r.dur
	if processed < total && lastDone > startNs {
		elapsed = max(r.dur, time.Duration(lastDone-startNs))
	}
	tot := ticks.Total()
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
	otot := ops.Total()
	var cacheOps int64
	for i, h := range otot.ByClass {
		if h.TotalCount() > 0 {
			st.ByOp[opClasses[i]] = latency.Summarize(h)
			cacheOps += h.TotalCount()
		}
	}
	ivs := ticks.Epochs(clock.Epoch())
	var qmax, qsum int64
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
	qmean := 0.0
	if len(samples) > 0 {
		qmean = float64(qsum) / float64(len(samples))
	}
	var backlogEnd int64
	if len(samples) > 0 {
		backlogEnd = samples[len(samples)-1].backlog
	}
	secs := elapsed.Seconds()
	st.Metrics = map[string]float64{
		"ticks": float64(processed), "ticks_per_s": float64(processed) / secs, "offered_per_s": r.cfg.Rate,
		"ticks_offered": float64(total),
		"cache_ops":     float64(cacheOps), "cache_ops_per_s": float64(cacheOps) / secs,
		"e2e_p99_ns": float64(in.P99), "queue_max": float64(qmax), "queue_mean": qmean,
		"queue_capacity": float64(max(1, r.p.Queue/r.workers) * r.workers), "backlog_end": float64(backlogEnd),
		"workers": float64(r.workers), "sensors": float64(s.Config().Sensors * s.Config().Multiplier),
	}
	return st
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
