package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestClosedLoopRunsEveryOperationOnce(t *testing.T) {
	const n = 100000
	seen := make([]atomic.Int32, n)
	res, err := Run(context.Background(), Config{Workers: 4, Ops: n}, func(_ context.Context, w int, seq int64) error {
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
	res, err := Run(context.Background(), Config{Workers: 3, Duration: 300 * time.Millisecond, Tick: 50 * time.Millisecond},
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
	res, err := Run(context.Background(), Config{Workers: 1, Duration: time.Second, Rate: 1000}, func(_ context.Context, w int, seq int64) error {
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
	res, err := Run(context.Background(), Config{Workers: 2, Ops: 1 << 30}, func(_ context.Context, w int, seq int64) error {
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
	res, err := Run(ctx, Config{Workers: 2, Duration: time.Hour, Rate: 10}, func(context.Context, int, int64) error { return nil })
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
		res, err := Run(context.Background(), Config{Workers: 8, Duration: time.Second, Rate: 2000}, func(context.Context, int, int64) error { return nil })
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
	_, _ = Run(context.Background(), Config{Workers: 1, Ops: int64(b.N)}, func(context.Context, int, int64) error { return nil })
}
