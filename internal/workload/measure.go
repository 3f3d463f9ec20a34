package workload

import (
	"context"
	"sync"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/runner"
)

// Measure drives op with the runner and turns the run into a result step:
// latency summaries, whole-phase and per-tick histograms, and a time series
// with the worker's RSS and CPU sampled on every tick. Workloads use it for
// every timed phase so that all phases are measured the same way.
func Measure(ctx context.Context, env *Env, cfg runner.Config, total int64, op runner.Op) (*results.Step, error) {
	type sample struct {
		rss int64
		cpu float64
	}
	var (
		mu      sync.Mutex
		samples []sample
	)
	cfg.OnTick = func(elapsed time.Duration, ops int64) {
		if env.Progress != nil {
			env.Progress(ops, total)
		}
		if env.Sample != nil {
			rss, cpu := env.Sample()
			mu.Lock()
			samples = append(samples, sample{rss, cpu})
			mu.Unlock()
		}
	}
	if env.Window != nil {
		env.Window(true)
	}
	start := time.Now()
	res, err := runner.Run(ctx, cfg, op)
	if env.Window != nil {
		env.Window(false)
	}
	if env.Progress != nil {
		env.Progress(res.Ops, total)
	}
	st := &results.Step{
		Started: start,
		Seconds: res.Elapsed.Seconds(),
		Ops:     res.Ops,
		Latency: latency.Summarize(res.Service),
		Rate:    cfg.Rate,
		Partial: res.Cancelled,
	}
	st.Hist, _ = latency.Encode(res.Service)
	for name, h := range res.ByClass {
		if h.TotalCount() == 0 {
			continue
		}
		if st.ByOp == nil {
			st.ByOp = map[string]latency.Summary{}
		}
		st.ByOp[name] = latency.Summarize(h)
	}
	if res.Intended != nil {
		s := latency.Summarize(res.Intended)
		st.Intended = &s
		st.Late = res.Late
		st.HistIntended, _ = latency.Encode(res.Intended)
	}
	tick := cfg.Tick
	if tick <= 0 {
		tick = time.Second
	}
	mu.Lock()
	defer mu.Unlock()
	for i, iv := range res.Intervals {
		t := results.Tick{T: float64(i+1) * tick.Seconds(), Ops: iv.Ops, Late: iv.Late}
		dur := tick
		if i == len(res.Intervals)-1 {
			// The last interval is cut short by the end of the run.
			dur = res.Elapsed - time.Duration(i)*tick
			t.T = res.Elapsed.Seconds()
		}
		if dur > 0 {
			t.OpsPerS = float64(iv.Ops) / dur.Seconds()
		}
		if iv.Service.TotalCount() > 0 {
			t.P50 = iv.Service.ValueAtQuantile(50)
			t.P99 = iv.Service.ValueAtQuantile(99)
			t.Max = iv.Service.Max()
		}
		if iv.Intended != nil && iv.Intended.TotalCount() > 0 {
			t.IntendedP99 = iv.Intended.ValueAtQuantile(99)
			t.IntendedMax = iv.Intended.Max()
		}
		if i < len(samples) {
			t.RSSBytes, t.CPU = samples[i].rss, samples[i].cpu
		}
		st.Series = append(st.Series, t)
		enc, _ := latency.Encode(iv.Service)
		ri := results.Interval{
			StartMs: start.Add(time.Duration(i) * tick).UnixMilli(),
			LenMs:   dur.Milliseconds(),
			MaxNs:   iv.Service.Max(),
			Hist:    enc,
		}
		if iv.Intended != nil {
			ri.HistIntended, _ = latency.Encode(iv.Intended)
			ri.MaxIntendedNs = iv.Intended.Max()
		}
		st.Intervals = append(st.Intervals, ri)
	}
	return st, err
}
