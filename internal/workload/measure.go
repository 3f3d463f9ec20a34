package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/runner"
)

// Measure drives op (or load.Streams, op nil) with the runner as load
// says, with load.Background beside it, and turns the run into a result
// step: latency summaries, whole-phase and per-tick histograms, and a
// time series with the worker's RSS and CPU sampled on every tick; for
// several streams the same per stream, and each background task's runs
// and histogram. Workloads use it for every timed phase so that all
// phases are measured the same way.
func Measure(ctx context.Context, env *Env, load Load, op runner.Op) (*results.Step, error) {
	cfg := load.config()
	var (
		mu      sync.Mutex
		samples []sample
	)
	cfg.OnTick = func(elapsed time.Duration, ops int64) {
		if env.Progress != nil {
			env.Progress(ops, load.Total)
		}
		if env.Sample != nil {
			rss, cpu := env.Sample()
			mu.Lock()
			samples = append(samples, sample{rss, cpu})
			mu.Unlock()
		}
	}
	if st, err := begin(ctx, env, &cfg); err != nil {
		return st, err
	}
	if env.Window != nil {
		env.Window(true)
	}
	start := time.Now()
	if !cfg.Start.IsZero() {
		start = cfg.Start
	}
	res, err := runner.Run(ctx, cfg, op)
	if env.Window != nil {
		env.Window(false)
	}
	if env.Progress != nil {
		env.Progress(res.Ops, load.Total)
	}
	st := stepOf(res, &cfg, start)
	tick := cfg.Tick
	if tick <= 0 {
		tick = time.Second
	}
	mu.Lock()
	defer mu.Unlock()
	st.Series, st.Intervals = series(res.Intervals, res.Elapsed, tick, start, samples)
	for _, sr := range res.Streams {
		st.Streams = append(st.Streams, streamOf(sr, res.Elapsed, tick, start))
	}
	for _, tr := range res.Background {
		b := results.Background{Name: tr.Name, EverySeconds: tr.Every.Seconds(), Runs: tr.Runs,
			BusySeconds: tr.Busy.Seconds(), Latency: latency.Summarize(tr.Durations)}
		b.Hist, _ = latency.Encode(tr.Durations)
		st.Background = append(st.Background, b)
	}
	return st, err
}

// begin sets cfg's part of a step split across processes, and its start
// behind the barrier when there is one (several processes, or fault
// actions timed from the start), waiting for it; on an error it returns
// the step to return with it.
func begin(ctx context.Context, env *Env, cfg *runner.Config) (*results.Step, error) {
	if env.Parts > 1 {
		// A step shared by several processes: each takes its share of
		// the operations, and all begin at one instant, so their
		// intervals line up and the intended start times of an open loop
		// are one schedule.
		cfg.Part, cfg.Parts = env.Part, env.Parts
		if env.Sync == nil {
			return &results.Step{}, fmt.Errorf("a step split in %d parts has no barrier", env.Parts)
		}
	}
	if env.Sync == nil {
		return nil, nil
	}
	// Behind a barrier the timed part begins at the released instant.
	at, err := env.Sync(ctx, true)
	if err != nil {
		return &results.Step{Partial: ctx.Err() != nil}, err
	}
	// Wait here rather than in the runner, so that the timed window
	// does not count the wait.
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return &results.Step{Partial: true}, ctx.Err()
		case <-t.C:
		}
	}
	cfg.Start = at
	return nil, nil
}

// stepOf is the step of run res (of cfg, started at start): its whole
// figures, without the time series, streams and background tasks.
func stepOf(res runner.Result, cfg *runner.Config, start time.Time) *results.Step {
	st := &results.Step{
		Started: start,
		Seconds: res.Elapsed.Seconds(),
		Ops:     res.Ops,
		Latency: latency.Summarize(res.Service),
		Rate:    cfg.Rate,
		Partial: res.Cancelled,
	}
	if len(cfg.Streams) > 0 {
		// The offered rate of the whole is the streams' sum when every
		// stream is open loop; a closed-loop stream offers no rate.
		for _, s := range cfg.Streams {
			if s.Rate <= 0 {
				st.Rate = 0
				break
			}
			st.Rate += s.Rate
		}
	}
	st.Hist, _ = latency.Encode(res.Service)
	st.ByOp = byOp(res.ByClass)
	st.ByOpHist = byOpHist(res.ByClass)
	if res.Intended != nil {
		s := latency.Summarize(res.Intended)
		st.Intended = &s
		st.Late = res.Late
		st.HistIntended, _ = latency.Encode(res.Intended)
	}
	return st
}

// streamOf is the result of one stream of a run.
func streamOf(sr runner.StreamResult, elapsed, tick time.Duration, start time.Time) results.Stream {
	rs := results.Stream{
		Name: sr.Name, Goroutines: sr.Goroutines, Rate: sr.Rate, Ops: sr.Ops,
		Seconds: sr.Elapsed.Seconds(), Latency: latency.Summarize(sr.Service), Late: sr.Late,
	}
	rs.Hist, _ = latency.Encode(sr.Service)
	rs.ByOp = byOp(sr.ByClass)
	if sr.Intended != nil {
		s := latency.Summarize(sr.Intended)
		rs.Intended = &s
		rs.HistIntended, _ = latency.Encode(sr.Intended)
	}
	rs.Series, _ = series(sr.Intervals, elapsed, tick, start, nil)
	return rs
}

func byOpHist(classes map[string]*hdr.Histogram) map[string]string {
	var out map[string]string
	for name, h := range classes {
		if h.TotalCount() == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name], _ = latency.Encode(h)
	}
	return out
}

type sample struct {
	rss int64
	cpu float64
}

func byOp(classes map[string]*hdr.Histogram) map[string]latency.Summary {
	var out map[string]latency.Summary
	for name, h := range classes {
		if h.TotalCount() == 0 {
			continue
		}
		if out == nil {
			out = map[string]latency.Summary{}
		}
		out[name] = latency.Summarize(h)
	}
	return out
}

// series turns a run's per-tick intervals into the time series and the
// encoded per-tick histograms (for the .hlog files), with the worker's
// samples where there are some.
func series(ivs []*latency.Interval, elapsed, tick time.Duration, start time.Time, samples []sample) ([]results.Tick, []results.Interval) {
	var ticks []results.Tick
	var out []results.Interval
	for i, iv := range ivs {
		t := results.Tick{T: float64(i+1) * tick.Seconds(), Ops: iv.Ops, Late: iv.Late}
		dur := tick
		if i == len(ivs)-1 {
			// The last interval is cut short by the end of the run.
			dur = elapsed - time.Duration(i)*tick
			t.T = elapsed.Seconds()
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
		ticks = append(ticks, t)
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
		out = append(out, ri)
	}
	return ticks, out
}
