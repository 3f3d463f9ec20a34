package runner

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

func TestClosedLoopRunsEveryOperationOnce(t *testing.T) {
	const n = 100000
	seen := make([]atomic.Int32, n)
	res, err := Run(context.Background(), Config{Goroutines: 4, Ops: n}, func(_ context.Context, w int, seq int64) error {
		seen[seq].Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != n || res.Service.TotalCount() != n {
		t.Fatalf("ops=%d histogram count=%d, want %d", res.Ops, res.Service.TotalCount(), n)
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("operation %d ran %d times", i, c)
		}
	}
	var sum int64
	for _, iv := range res.Intervals {
		sum += iv.Ops
	}
	if sum != n {
		t.Fatalf("time series sums to %d ops, want %d", sum, n)
	}
}

func TestIntervalsMergeExactly(t *testing.T) {
	// Every operation takes ~1ms; a 50ms tick gives several intervals whose
	// histograms must add up to the total, count for count.
	res, err := Run(context.Background(), Config{Goroutines: 3, Duration: 300 * time.Millisecond, Tick: 50 * time.Millisecond},
		func(context.Context, int, int64) error { time.Sleep(time.Millisecond); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Intervals) < 4 {
		t.Fatalf("got %d intervals over 300ms at a 50ms tick", len(res.Intervals))
	}
	var count int64
	for _, iv := range res.Intervals {
		count += iv.Service.TotalCount()
	}
	if count != res.Service.TotalCount() || count != res.Ops {
		t.Fatalf("intervals hold %d values, total %d, ops %d", count, res.Service.TotalCount(), res.Ops)
	}
	if p50 := time.Duration(res.Service.ValueAtQuantile(50)); p50 < time.Millisecond || p50 > 20*time.Millisecond {
		t.Fatalf("p50 of 1ms sleeps = %v", p50)
	}
}

func TestOpenLoopHoldsRateAndMeasuresFromIntendedStart(t *testing.T) {
	// 1000 ops/s for 1s with one worker; operation 100 stalls 200ms. A closed
	// loop would record one slow operation; the open loop must show that the
	// ~200 operations scheduled during the stall were all late.
	res, err := Run(context.Background(), Config{Goroutines: 1, Duration: time.Second, Rate: 1000}, func(_ context.Context, w int, seq int64) error {
		if seq == 100 {
			time.Sleep(200 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops < 900 || res.Ops > 1010 {
		t.Fatalf("open loop at 1000/s for 1s did %d ops", res.Ops)
	}
	if res.Late < 150 {
		t.Fatalf("only %d late operations after a 200ms stall", res.Late)
	}
	svc99 := time.Duration(res.Service.ValueAtQuantile(99))
	int99 := time.Duration(res.Intended.ValueAtQuantile(99))
	if int99 < 100*time.Millisecond {
		t.Fatalf("intended-start p99 %v does not show the stall", int99)
	}
	if svc99 > 10*time.Millisecond {
		t.Fatalf("service-time p99 %v should not include queueing", svc99)
	}
}

func TestErrorStopsRunAndIsReturned(t *testing.T) {
	boom := errors.New("boom")
	var after atomic.Int64
	res, err := Run(context.Background(), Config{Goroutines: 2, Ops: 1 << 30}, func(_ context.Context, w int, seq int64) error {
		if seq == 1000 {
			return boom
		}
		if seq > 100000 {
			after.Add(1)
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if res.Ops >= 1<<30 || after.Load() > 0 && res.Ops > 1000000 {
		t.Fatalf("run went on after the error: %d ops", res.Ops)
	}
}

func TestCancelStopsQuickly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	t0 := time.Now()
	res, err := Run(ctx, Config{Goroutines: 2, Duration: time.Hour, Rate: 10}, func(context.Context, int, int64) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || time.Since(t0) > time.Second {
		t.Fatalf("cancelled=%v after %v", res.Cancelled, time.Since(t0))
	}
}

func TestRejectsUnboundedRun(t *testing.T) {
	if _, err := Run(context.Background(), Config{}, func(context.Context, int, int64) error { return nil }); err == nil {
		t.Fatal("an unbounded run was accepted")
	}
}

// BenchmarkOpenLoopFloor prints the harness's own contribution to
// open-loop latency: a no-op operation at 2000/s on 8 goroutines. Whatever
// latency from the intended start it shows is scheduling, not the target.
//
//	go test -run '^$' -bench OpenLoopFloor ./internal/runner
func BenchmarkOpenLoopFloor(b *testing.B) {
	for i := 0; i < b.N; i++ {
		res, err := Run(context.Background(), Config{Goroutines: 8, Duration: time.Second, Rate: 2000}, func(context.Context, int, int64) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Intended.ValueAtQuantile(50))/1e3, "intended-p50-µs")
		b.ReportMetric(float64(res.Intended.ValueAtQuantile(99))/1e3, "intended-p99-µs")
		b.ReportMetric(100*float64(res.Late)/float64(res.Ops), "late-%")
	}
}

// BenchmarkClosedLoopPerOp is the runner's cost per operation around a
// no-op (one clock read, one histogram record, one epoch check).
func BenchmarkClosedLoopPerOp(b *testing.B) {
	b.ReportAllocs()
	_, _ = Run(context.Background(), Config{Goroutines: 1, Ops: int64(b.N)}, func(context.Context, int, int64) error { return nil })
}

func TestStreamsHoldTheirOwnRatesAndHistograms(t *testing.T) {
	// Two open-loop streams at 400/s and 100/s for 1s: each holds its own
	// rate, its histograms count exactly its operations, and the whole is
	// their sum, tick by tick.
	var fast, slow atomic.Int64
	res, err := Run(context.Background(), Config{Duration: time.Second, Tick: 100 * time.Millisecond, Streams: []Stream{
		{Name: "fast", Goroutines: 2, Rate: 400, Op: func(context.Context, int, int64) error { fast.Add(1); return nil }},
		{Name: "slow", Goroutines: 1, Rate: 100, Op: func(context.Context, int, int64) error { slow.Add(1); return nil }},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Streams) != 2 || res.Streams[0].Name != "fast" || res.Streams[1].Name != "slow" {
		t.Fatalf("streams = %+v", res.Streams)
	}
	for i, want := range []struct {
		rate float64
		ops  int64
	}{{400, fast.Load()}, {100, slow.Load()}} {
		s := res.Streams[i]
		if s.Ops != want.ops || s.Service.TotalCount() != want.ops || s.Intended == nil || s.Intended.TotalCount() != want.ops {
			t.Fatalf("%s: ops %d, service count %d, ran %d", s.Name, s.Ops, s.Service.TotalCount(), want.ops)
		}
		if got := s.Achieved(); got < 0.9*want.rate || got > 1.1*want.rate {
			t.Fatalf("%s: achieved %.0f/s at an offered %.0f/s", s.Name, got, want.rate)
		}
		var sum int64
		for _, iv := range s.Intervals {
			sum += iv.Service.TotalCount()
		}
		if sum != s.Ops {
			t.Fatalf("%s: ticks hold %d values, %d ops", s.Name, sum, s.Ops)
		}
	}
	if res.Ops != fast.Load()+slow.Load() || res.Service.TotalCount() != res.Ops || res.Intended.TotalCount() != res.Ops {
		t.Fatalf("whole: ops %d, service %d, intended %d; streams ran %d", res.Ops, res.Service.TotalCount(), res.Intended.TotalCount(), fast.Load()+slow.Load())
	}
	var sum int64
	for _, iv := range res.Intervals {
		sum += iv.Ops
	}
	if sum != res.Ops {
		t.Fatalf("whole time series sums to %d, ops %d", sum, res.Ops)
	}
}

func TestStreamsAreBoundedEachByItsOwnCount(t *testing.T) {
	res, err := Run(context.Background(), Config{Streams: []Stream{
		{Name: "a", Goroutines: 3, Ops: 1000, Op: func(context.Context, int, int64) error { return nil }},
		{Name: "b", Ops: 10, Rate: 1000, Op: func(context.Context, int, int64) error { return nil }},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Streams[0].Ops != 1000 || res.Streams[1].Ops != 10 || res.Ops != 1010 {
		t.Fatalf("ops a=%d b=%d whole=%d", res.Streams[0].Ops, res.Streams[1].Ops, res.Ops)
	}
}

func TestBackgroundTaskRunsPeriodicallyAndStopsWithTheLoad(t *testing.T) {
	var runs atomic.Int64
	var running atomic.Bool
	res, err := Run(context.Background(), Config{Goroutines: 1, Duration: 500 * time.Millisecond, Rate: 1000,
		Background: []Task{{Name: "gc", Every: 50 * time.Millisecond, Run: func(ctx context.Context, run int64) error {
			running.Store(true)
			defer running.Store(false)
			runs.Add(1)
			time.Sleep(5 * time.Millisecond)
			return nil
		}}}},
		func(context.Context, int, int64) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if running.Load() {
		t.Fatal("a background run was still going when Run returned")
	}
	n := runs.Load()
	if len(res.Background) != 1 {
		t.Fatalf("background results: %+v", res.Background)
	}
	bg := res.Background[0]
	// Every 50ms over 500ms: 9 or 10 runs (the first after one interval).
	if n < 8 || n > 10 {
		t.Fatalf("task ran %d times in 500ms every 50ms", n)
	}
	if bg.Runs != n || bg.Durations.TotalCount() != n {
		t.Fatalf("runs %d, histogram count %d, ran %d", bg.Runs, bg.Durations.TotalCount(), n)
	}
	if p50 := time.Duration(bg.Durations.ValueAtQuantile(50)); p50 < 5*time.Millisecond || p50 > 100*time.Millisecond {
		t.Fatalf("task p50 %v for 5ms runs", p50)
	}
	if after := runs.Load(); after != n {
		t.Fatalf("task ran again after the load ended (%d, then %d)", n, after)
	}
}

func TestBackgroundBackToBackAndErrorFailsTheRun(t *testing.T) {
	boom := errors.New("compaction broke")
	t0 := time.Now()
	res, err := Run(context.Background(), Config{Goroutines: 1, Duration: time.Hour,
		Background: []Task{{Name: "compact", Run: func(ctx context.Context, run int64) error {
			if run == 20 {
				return boom
			}
			return nil
		}}}},
		func(context.Context, int, int64) error { time.Sleep(100 * time.Microsecond); return nil })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "background task compact") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(t0) > 5*time.Second {
		t.Fatalf("the failed task did not stop the run (%v)", time.Since(t0))
	}
	if res.Background[0].Runs != 20 || res.Background[0].Durations.TotalCount() != 20 {
		t.Fatalf("back-to-back runs before the failure: %d (histogram %d), want 20", res.Background[0].Runs, res.Background[0].Durations.TotalCount())
	}
}

func TestCancelReachesOperations(t *testing.T) {
	// An operation waiting on a server (here: on its context alone) must
	// see the run's cancellation, as must a background task.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	var saw, taskSaw atomic.Int64
	t0 := time.Now()
	res, _ := Run(ctx, Config{Duration: time.Hour, Streams: []Stream{
		{Name: "wait", Goroutines: 2, Op: func(ctx context.Context, _ int, _ int64) error {
			<-ctx.Done()
			saw.Add(1)
			return ctx.Err()
		}},
	}, Background: []Task{{Name: "t", Run: func(ctx context.Context, _ int64) error {
		<-ctx.Done()
		taskSaw.Add(1)
		return ctx.Err()
	}}}}, nil)
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("cancel took %v to reach the operations", time.Since(t0))
	}
	if saw.Load() != 2 || taskSaw.Load() != 1 || !res.Cancelled {
		t.Fatalf("operations that saw the cancel: %d of 2, tasks %d of 1, cancelled=%v", saw.Load(), taskSaw.Load(), res.Cancelled)
	}
}

func TestRejectsBadStreams(t *testing.T) {
	op := func(context.Context, int, int64) error { return nil }
	for name, cfg := range map[string]Config{
		"unbounded stream": {Streams: []Stream{{Name: "a", Op: op}}},
		"duplicate name":   {Duration: time.Second, Streams: []Stream{{Name: "a", Op: op}, {Name: "a", Op: op}}},
		"rate beside":      {Duration: time.Second, Rate: 5, Streams: []Stream{{Name: "a", Op: op}}},
		"task no func":     {Duration: time.Second, Streams: []Stream{{Name: "a", Op: op}}, Background: []Task{{Name: "x"}}},
	} {
		if _, err := Run(context.Background(), cfg, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// inflight is a toy driver: it keeps k operations in flight, completing
// the oldest one each step after a short pause, the way an event loop
// owning k connections completes responses out of their start order.
func inflight(k int, pause time.Duration, seen []atomic.Int32, loops []atomic.Int32) Drive {
	return func(ctx context.Context, l *Loop) error {
		type op struct {
			seq   int64
			start time.Time
		}
		var q []op
		more := true
		for {
			for more && len(q) < k {
				seq, ok := l.Next()
				if !ok {
					more = false
					break
				}
				q = append(q, op{seq, time.Now()})
			}
			if len(q) == 0 {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(pause)
			o := q[0]
			q = q[1:]
			if seen != nil {
				seen[o.seq].Add(1)
				loops[l.ID].Add(1)
			}
			l.Done(o.seq, time.Since(o.start))
		}
	}
}

// A driven stream does every operation of a count exactly once, split
// statically across its loops, and its time series adds up to the total.
func TestDriveRunsEveryOperationOnceAcrossLoops(t *testing.T) {
	const n, L = 20001, 3
	seen := make([]atomic.Int32, n)
	loops := make([]atomic.Int32, L)
	res, err := Run(context.Background(), Config{Drive: inflight(7, 0, seen, loops), Loops: L, Ops: n, Tick: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != n || res.Service.TotalCount() != n {
		t.Fatalf("ops=%d histogram count=%d, want %d", res.Ops, res.Service.TotalCount(), n)
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("operation %d ran %d times", i, c)
		}
	}
	for l := range loops {
		if got, want := loops[l].Load(), int32((n-l+L-1)/L); got != want {
			t.Errorf("loop %d did %d operations, want its share %d", l, got, want)
		}
	}
	var sum, count int64
	for _, iv := range res.Intervals {
		sum += iv.Ops
		count += iv.Service.TotalCount()
	}
	if sum != n || count != n {
		t.Fatalf("time series sums to %d ops, %d values, want %d", sum, count, n)
	}
}

// A duration bounds a driven stream (Next says stop, in-flight operations
// finish and are counted); the intervals are per tick and exact; the
// service times are the driver's, not the gaps between completions.
func TestDriveDurationAndIntervals(t *testing.T) {
	res, err := Run(context.Background(), Config{Drive: inflight(4, time.Millisecond, nil, nil), Loops: 2, Duration: 300 * time.Millisecond, Tick: 50 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Elapsed > 2*time.Second || res.Ops < 50 {
		t.Fatalf("%d ops in %v", res.Ops, res.Elapsed)
	}
	if len(res.Intervals) < 4 {
		t.Fatalf("got %d intervals over 300ms at a 50ms tick", len(res.Intervals))
	}
	var count int64
	for _, iv := range res.Intervals {
		count += iv.Service.TotalCount()
	}
	if count != res.Ops || res.Service.TotalCount() != res.Ops {
		t.Fatalf("intervals hold %d values, total %d, ops %d", count, res.Service.TotalCount(), res.Ops)
	}
	// Four in flight, one completed per ~1 ms: each waited ~4 pauses.
	if p50 := time.Duration(res.Service.ValueAtQuantile(50)); p50 < 3*time.Millisecond {
		t.Fatalf("p50 service %v, want about 4 pauses of 1ms", p50)
	}
}

// A driver's error fails the run; a cancel reaches the driver; a driver
// with an operation, goroutines or a rate is rejected.
func TestDriveErrorsCancelAndRejects(t *testing.T) {
	boom := errors.New("boom")
	_, err := Run(context.Background(), Config{Loops: 2, Duration: time.Hour, Drive: func(ctx context.Context, l *Loop) error {
		if l.ID == 1 {
			return boom
		}
		for !l.Stopping() {
			time.Sleep(time.Millisecond)
		}
		return nil
	}}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res, err := Run(ctx, Config{Drive: inflight(3, time.Millisecond, nil, nil), Duration: time.Hour}, nil)
	if !errors.Is(err, context.Canceled) || !res.Cancelled {
		t.Fatalf("cancelled drive: %v, %+v", err, res.Cancelled)
	}
	d := inflight(1, 0, nil, nil)
	op := func(context.Context, int, int64) error { return nil }
	for name, cfg := range map[string]Config{
		"rate":              {Drive: d, Rate: 10, Duration: time.Second},
		"stream goroutines": {Duration: time.Second, Streams: []Stream{{Name: "a", Drive: d, Goroutines: 2}}},
		"stream op":         {Duration: time.Second, Streams: []Stream{{Name: "a", Drive: d, Op: op}}},
		"loops beside":      {Duration: time.Second, Loops: 2, Streams: []Stream{{Name: "a", Drive: d}}},
		"unbounded drive":   {Drive: d},
	} {
		if _, err := Run(context.Background(), cfg, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Run(context.Background(), Config{Drive: d, Ops: 1}, op); err == nil {
		t.Errorf("op and drive: accepted")
	}
}

// The stop flag every load goroutine reads before each operation fills a
// cache line (a size class the allocator aligns to 64 bytes), so no write
// to a neighbouring object invalidates it in every core's cache.
func TestStopFlagFillsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(stopFlag{}); n != 64 {
		t.Fatalf("stopFlag is %d bytes, want one cache line (64)", n)
	}
}
