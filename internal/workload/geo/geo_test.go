package geo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unsafe"

	"storebench/internal/kv"
	"storebench/internal/results"
	_ "storebench/internal/target/all"
	"storebench/internal/target/targettest"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
)

// smallStudy: 40 users, 3 s of ingest with a GC pass every 300 ms and a
// retention of 6 simulated hours, so that the GC deletes during the
// ingest; 10 correlations over the retained window.
func smallStudy(seed int64) string {
	return fmt.Sprintf(`
name: t
seed: %d
ladder: [40]
concurrency: 2
targets: [pebble]
workloads:
  - name: geo
    params:
      batch: 500
      ingest: {duration: 3s}
      gc: {retention: 6h, every: 300ms}
      timeline: {queries: 40}
      correlate: {users: 10}
`, seed)
}

func execute(t *testing.T, h io.Closer, steps []workload.Step) []*results.Step {
	t.Helper()
	var out []*results.Step
	for _, st := range steps {
		res, err := Workload{}.Execute(context.Background(), &workload.Env{Target: h}, st)
		if err != nil {
			t.Fatalf("%s: %v", st.Phase, err)
		}
		out = append(out, res)
	}
	return out
}

// checkRun checks what a run of the small study measured and found.
func checkRun(t *testing.T, res []*results.Step) {
	t.Helper()
	ing, tl, co := res[0].Metrics, res[1], res[2]
	if ing["points"] <= 0 || ing["qps"] <= 0 || ing["moving_users"] <= 0 {
		t.Errorf("ingest metrics %v", ing)
	}
	// The GC must have had old points to delete during the ingest.
	// (A store that cannot count its deletes cheaply reports none; the
	// exact count held below still proves them.)
	if d, ok := ing["gc_deleted"]; ing["simulated_days"] < 0.2 || ing["gc_passes"] < 1 || (ok && d <= 0) {
		t.Errorf("the GC deleted nothing during the ingest: %v", ing)
	}
	if ing["points_held"] >= ing["points"] || ing["points_held"] <= 0 {
		t.Errorf("held %v of %v points", ing["points_held"], ing["points"])
	}
	if res[0].Verify.Checked != int64(ing["points_held"]) {
		t.Errorf("ingest verified %d points, holds %v", res[0].Verify.Checked, ing["points_held"])
	}
	if tl.Verify.Checked != 40 || tl.ByOp["existing"].Count != 20 || tl.ByOp["missing"].Count != 20 || tl.Metrics["points_per_timeline"] < 60 {
		t.Errorf("timeline: checked %d, by op %v, metrics %v", tl.Verify.Checked, tl.ByOp, tl.Metrics)
	}
	if co.Verify.Checked != 10 || co.Metrics["contacts"] < 1 {
		t.Errorf("correlate: checked %d, metrics %v", co.Verify.Checked, co.Metrics)
	}
}

// The whole workload on the embedded engines of the study: every
// timeline and correlation equals the reference and the GC left exactly
// the points younger than its cutoff.
func TestWorkloadOnEngines(t *testing.T) {
	steps := worktest.Plan(t, Workload{}, smallStudy(2))
	var phases []string
	for _, st := range steps {
		phases = append(phases, st.Phase)
	}
	if got := strings.Join(phases, ","); got != "ingest,timeline,correlate" || !steps[0].Fresh || steps[1].Fresh {
		t.Fatalf("plan = %s", got)
	}
	for _, name := range []string{"pebble", "rocksdb"} {
		t.Run(name, func(t *testing.T) {
			h := targettest.Open(t, name, kv.Async)
			res := execute(t, h, steps)
			checkRun(t, res)
		})
	}
}

// faulty wraps a layout with one fault, to show the checks catch it.
type faulty struct {
	Store
	fault string
}

func (f faulty) Close() error { return nil }

func (f faulty) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	if f.fault == "gc-too-much" {
		before += BlockSeconds
	}
	if f.fault == "gc-nothing" {
		return 0, nil
	}
	return f.Store.DeleteBefore(ctx, before)
}

func (f faulty) Timeline(ctx context.Context, user, from, to int64, fn func(Point) error) error {
	n := 0
	return f.Store.Timeline(ctx, user, from, to, func(p Point) error {
		n++
		if f.fault == "timeline-drop" && n == 7 {
			return nil
		}
		if f.fault == "timeline-move" && n == 7 {
			p.Lat += 1e-7
		}
		return fn(p)
	})
}

func (f faulty) Near(ctx context.Context, track []Point, meters float64, fn func(Point) error) error {
	return f.Store.Near(ctx, track, meters, func(p Point) error {
		if f.fault == "near-miss" && p.User%2 == 0 {
			return nil
		}
		return fn(p)
	})
}

// A store that deletes too much or too little, loses or moves a timeline
// point, or misses nearby points fails the phase with a verification
// error naming it.
func TestChecksCatchFaults(t *testing.T) {
	// 20,000 points (the GC deletes from 14,400 on: 40 users, a point a
	// minute each, 6 hours' retention) however slow the machine is.
	steps := worktest.Plan(t, Workload{}, strings.Replace(smallStudy(4), "duration: 3s", "duration: 60s, points: 20000", 1))
	for _, c := range []struct{ fault, phase, what string }{
		{"gc-too-much", "ingest", "points"},
		{"gc-nothing", "ingest", "before its cutoff"},
		{"timeline-drop", "timeline", "timeline"},
		{"timeline-move", "timeline", "timeline point"},
		{"near-miss", "correlate", "correlations"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			h := targettest.Open(t, "pebble", kv.Async)
			f := faulty{Store: KVLayout{S: h.(kv.Store)}, fault: c.fault}
			var err error
			var phase string
			for _, st := range steps {
				phase = st.Phase
				if _, err = (Workload{}).Execute(context.Background(), &workload.Env{Target: f}, st); err != nil {
					break
				}
			}
			var ve *workload.VerifyError
			if !errors.As(err, &ve) || phase != c.phase || !strings.Contains(err.Error(), c.what) {
				t.Fatalf("phase %s: error %v; want a verification error in %s about %q", phase, err, c.phase, c.what)
			}
		})
	}
}

// The seed's method (--scale seed): geo-backtracer's key layout, its
// point-by-point GC once per simulated hour, and both correlation rules, each a correlate
// step of its own, checked against its brute-force reference.
func TestWorkloadSeedMethod(t *testing.T) {
	steps := worktest.Plan(t, Workload{}, `
name: t
seed: 3
ladder: [40]
concurrency: 2
targets: [pebble]
workloads:
  - name: geo
    params:
      layout: backtracer
      batch: 500
      ingest: {duration: 3s, write: point}
      gc: {retention: 6h, every_simulated: 1h, delete: point}
      timeline: {queries: 20}
      correlate: {users: 6, rule: both}
`)
	var phases []string
	for _, st := range steps {
		phases = append(phases, st.Phase+st.Labels[LRule])
	}
	if got := strings.Join(phases, ","); got != "ingest,timeline,correlatebacktracer,correlatestorebench" {
		t.Fatalf("plan = %s", got)
	}
	h := targettest.Open(t, "pebble", kv.Async)
	res := execute(t, h, steps)
	ing := res[0]
	if !strings.Contains(ing.Facts["layout"], "geo-backtracer's layout") || !strings.Contains(ing.Facts["layout"], "point by point") || ing.Facts["gc"] != "point by point" || !strings.Contains(ing.Facts["gc_every"], "simulated") || !strings.HasPrefix(ing.Facts["writes"], "point by point") {
		t.Errorf("ingest facts %v", ing.Facts)
	}
	// An hour of simulated time is 40 × 60 points: a pass must have run
	// and counted their deletes (point by point counts them).
	if ing.Metrics["gc_passes"] < 1 || ing.Metrics["gc_deleted"] <= 0 {
		t.Errorf("GC: %v", ing.Metrics)
	}
	// The seed's "timeline of a user who does not exist", recomputed
	// from the step's own latencies.
	if tl := res[1]; tl.Metrics["nonexisting_p50_s"] != float64(tl.ByOp["missing"].P50)/1e9 || tl.ByOp["missing"].Count == 0 {
		t.Errorf("nonexisting_p50_s = %v, the missing timelines' p50 %v ns", tl.Metrics["nonexisting_p50_s"], tl.ByOp["missing"].P50)
	}
	bt, sb := res[2], res[3]
	t.Logf("GC passes %v, deleted %v; geo-backtracer's rule: %v contacts, %v users with a nearby pair; storebench's: %v contacts",
		ing.Metrics["gc_passes"], ing.Metrics["gc_deleted"], bt.Metrics["contacts"], bt.Metrics["users_nearby"], sb.Metrics["contacts"])
	if bt.Facts["rule"] != RuleBacktracer || sb.Facts["rule"] != RuleStorebench || bt.Verify.Checked != 6 || sb.Verify.Checked != 6 {
		t.Errorf("correlate steps: %v %v, checked %d %d", bt.Facts["rule"], sb.Facts["rule"], bt.Verify.Checked, sb.Verify.Checked)
	}
	if bt.Metrics["nearby_seconds"] != 30 || bt.Metrics["min_score"] != 30 || sb.Metrics["contacts"] < 1 {
		t.Errorf("metrics: %v / %v", bt.Metrics, sb.Metrics)
	}
}

// slowFinalPass is a store whose GC pass after the load (the final one,
// the only one called with the step's own context: the passes during
// the load get the runner's) waits until the step is interrupted, as a
// point-by-point pass over a store the GC fell behind on can take hours.
type slowFinalPass struct {
	Store
	step    context.Context
	entered chan struct{}
}

func (s slowFinalPass) Close() error { return nil }

func (s slowFinalPass) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	if ctx != s.step {
		return s.Store.DeleteBefore(ctx, before)
	}
	close(s.entered)
	<-ctx.Done()
	return 0, ctx.Err()
}

// An interrupt after the timed load, during the final GC pass, keeps
// what the load measured: the step comes back with its rates and GC
// figures, and the interrupt's error, rather than nothing.
func TestInterruptDuringTheFinalPassKeepsTheIngest(t *testing.T) {
	steps := worktest.Plan(t, Workload{}, strings.Replace(smallStudy(4), "duration: 3s", "duration: 60s, points: 20000", 1))
	h := targettest.Open(t, "pebble", kv.Async)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := slowFinalPass{Store: KVLayout{S: h.(kv.Store)}, step: ctx, entered: make(chan struct{})}
	type out struct {
		res *results.Step
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := (Workload{}).Execute(ctx, &workload.Env{Target: s}, steps[0])
		done <- out{res, err}
	}()
	select {
	case <-s.entered:
	case o := <-done:
		t.Fatalf("the step ended before its final pass: %v", o.err)
	}
	cancel()
	o := <-done
	if steps[0].Phase != "ingest" || !errors.Is(o.err, context.Canceled) {
		t.Fatalf("step %s: error %v, want the interrupt", steps[0].Phase, o.err)
	}
	if o.res == nil || o.res.Metrics["points"] != 20000 || o.res.Metrics["qps"] <= 0 || float64(o.res.Ops)*o.res.Metrics["batch"] != 20000 {
		t.Fatalf("the load's measurement was lost: %+v", o.res)
	}
	if _, ok := o.res.Metrics["final_gc_seconds"]; ok {
		t.Errorf("a final pass cut short reported its time: %v", o.res.Metrics)
	}
}

// Every step records item_bytes, one GPS point as the workload makes it:
// user and timestamp (int64), latitude and longitude (float64), the
// fields of a Point.
func TestItemBytesIsOnePoint(t *testing.T) {
	want := float64(unsafe.Sizeof(Point{}.User) + unsafe.Sizeof(Point{}.TS) + unsafe.Sizeof(Point{}.Lat) + unsafe.Sizeof(Point{}.Lon))
	if want != 8+8+8+8 {
		t.Fatalf("a point's fields are %v bytes, want 32", want)
	}
	steps := worktest.Plan(t, Workload{}, `
name: t
ladder: [20]
concurrency: 2
targets: [pebble]
workloads:
  - name: geo
    params:
      batch: 100
      ingest: {duration: 5s, points: 2000}
      gc: {retention: 6h, every: 0s}
      timeline: {queries: 4}
      correlate: {users: 2}
`)
	for i, res := range execute(t, targettest.Open(t, "pebble", kv.Async), steps) {
		if got, ok := res.Metrics[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", steps[i].Phase, got, ok, want)
		}
	}
}
