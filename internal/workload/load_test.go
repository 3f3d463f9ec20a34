package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	"storebench/internal/runner"
)

// Each constructor and method says one thing about the shape, and the
// runner gets every field of it.
func TestLoadShapes(t *testing.T) {
	drive := func(context.Context, *runner.Loop) error { return nil }
	classOf := func(int64) int { return 0 }
	task := runner.Task{Name: "gc", Run: func(context.Context, int64) error { return nil }}
	for name, c := range map[string]struct {
		got, want Load
	}{
		"closed":     {Closed(4, 100), Load{Goroutines: 4, Ops: 100, Total: 100}},
		"closed for": {Closed(4, 0).For(time.Second), Load{Goroutines: 4, Duration: time.Second}},
		"at":         {Closed(2, 10).At(50), Load{Goroutines: 2, Ops: 10, Rate: 50, Total: 10}},
		"open":       {Open(200, 2*time.Second).On(3), Load{Goroutines: 3, Rate: 200, Duration: 2 * time.Second, Total: 400}},
		"expecting":  {Closed(1, 7).Expecting(0), Load{Goroutines: 1, Ops: 7}},
	} {
		g, w := c.got, c.want
		if g.Goroutines != w.Goroutines || g.Ops != w.Ops || g.Duration != w.Duration || g.Rate != w.Rate || g.Total != w.Total ||
			g.Loops != 0 || g.Drive != nil || g.Classes != nil || g.ClassOf != nil || g.Streams != nil || g.Background != nil {
			t.Errorf("%s: %+v, want %+v", name, c.got, c.want)
		}
	}
	l := Closed(8, 1000).Driven(3, drive).Classed([]string{"A"}, classOf).Beside(task)
	if l.Goroutines != 0 || l.Loops != 3 || l.Drive == nil || l.Ops != 1000 || l.Total != 1000 ||
		len(l.Classes) != 1 || l.ClassOf == nil || len(l.Background) != 1 {
		t.Errorf("driven: %+v", l)
	}
	s := Concurrent(time.Second, runner.Stream{Name: "a"}, runner.Stream{Name: "b"})
	if s.Duration != time.Second || len(s.Streams) != 2 || s.Goroutines != 0 {
		t.Errorf("concurrent: %+v", s)
	}
	full := Load{Goroutines: 2, Loops: 3, Drive: drive, Ops: 4, Duration: 5, Rate: 6, Classes: []string{"A"}, ClassOf: classOf,
		Streams: []runner.Stream{{Name: "s"}}, Background: []runner.Task{task}}
	cfg := full.config()
	if cfg.Goroutines != 2 || cfg.Loops != 3 || cfg.Drive == nil || cfg.Ops != 4 || cfg.Duration != 5 || cfg.Rate != 6 ||
		len(cfg.Classes) != 1 || cfg.ClassOf == nil || len(cfg.Streams) != 1 || len(cfg.Background) != 1 {
		t.Errorf("config: %+v", cfg)
	}
	if cfg.Tick != 0 || cfg.LateAfter != 0 || cfg.OnTick != nil || cfg.Part != 0 || cfg.Parts != 0 || !cfg.Start.IsZero() {
		t.Errorf("config sets what Measure or the runner decides: %+v", cfg)
	}
}

// Measure runs the load's operations on its goroutines and reports
// progress out of the load's total.
func TestMeasureRunsTheLoad(t *testing.T) {
	var (
		mu     sync.Mutex
		totals []int64
		seen   = map[int]bool{}
	)
	env := &Env{Progress: func(_, total int64) { mu.Lock(); totals = append(totals, total); mu.Unlock() }}
	st, err := Measure(context.Background(), env, Closed(3, 300), func(_ context.Context, g int, _ int64) error {
		mu.Lock()
		seen[g] = true
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Ops != 300 || st.Latency.Count != 300 || st.Rate != 0 || len(seen) != 3 {
		t.Fatalf("step: %d ops, %d timed, rate %v, goroutines %v", st.Ops, st.Latency.Count, st.Rate, seen)
	}
	if len(totals) == 0 || totals[len(totals)-1] != 300 {
		t.Fatalf("progress totals %v, want 300", totals)
	}
}
