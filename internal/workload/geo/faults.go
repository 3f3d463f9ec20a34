package geo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/fault"
	"storebench/internal/results"
	"storebench/internal/workload"
)

// Length implements workload.Lengther: the ingest lasts its duration at
// most (ingest.points may end it sooner); the other phases' length is
// not known in advance.
func (Workload) Length(st workload.Step) (time.Duration, string) {
	var p Params
	if st.Phase != PhaseIngest || json.Unmarshal(st.Params, &p) != nil {
		return 0, ""
	}
	if st.Duration > 0 {
		return st.Duration, "at most: its duration"
	}
	return time.Duration(p.Ingest.Duration), "at most: ingest.duration"
}

// While nodes fail (the study's faults), an insert that errs is retried
// with a growing pause until ackTimeout has passed since its first
// attempt; a batch still unacknowledged then fails the step (the
// timelines and correlations after the ingest are checked against every
// point ingested, so a hole cannot be skipped). Once the last fault is
// over, every point is read back at the level that must see every
// acknowledged write (DurableReader): one missing fails the step.
const (
	ackTimeout    = 90 * time.Second
	verifyTimeout = 3 * time.Minute
)

// faultLog is one goroutine's errors (merged after the load).
type faultLog struct {
	errs, retries int64
	errTimes      []time.Time
	firstErr      string
	_             [64]byte
}

// insertRetrying inserts a batch, retrying errors while faults run.
func (r *run) insertRetrying(ctx context.Context, l *faultLog, pts []Point) error {
	t0 := time.Now()
	pause := 20 * time.Millisecond
	for {
		err := r.store.InsertPoints(ctx, pts)
		if err == nil || ctx.Err() != nil {
			return err
		}
		l.errs++
		l.errTimes = append(l.errTimes, time.Now())
		if l.firstErr == "" {
			l.firstErr = err.Error()
		}
		if time.Since(t0) > ackTimeout {
			return fmt.Errorf("geo: a batch of points at %d unacknowledged after %s of retries: %w", pts[0].TS, ackTimeout, err)
		}
		l.retries++
		if err := workload.Sleep(ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, time.Second)
	}
}

// crashFrontier is how far the ingest had got when a crash action
// struck: the batches committed then (-1: the ingest ended first).
type crashFrontier struct {
	a       fault.Action
	batches int64
}

// watchCrashes records, at each crash action's instant (its offset from
// the timed start, which Measure learns from the env's barrier: the
// returned env passes it on), the batches committed (done): what the
// crash may take lies before it. stop ends the watch and returns the
// frontiers.
func (r *run) watchCrashes(done *atomic.Int64) (env *workload.Env, stop func() []crashFrontier) {
	var fr []crashFrontier
	for _, a := range r.st.Faults {
		if a.Crash() {
			fr = append(fr, crashFrontier{a: a, batches: -1})
		}
	}
	if len(fr) == 0 || r.env.Sync == nil {
		return r.env, func() []crashFrontier { return nil }
	}
	sort.SliceStable(fr, func(i, j int) bool { return fr[i].a.Offset() < fr[j].a.Offset() })
	e := *r.env
	started := make(chan time.Time, 1)
	barrier := e.Sync
	e.Sync = func(ctx context.Context, timed bool) (time.Time, error) {
		at, err := barrier(ctx, timed)
		if err == nil && timed {
			select {
			case started <- at:
			default:
			}
		}
		return at, err
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var at time.Time
		select {
		case at = <-started:
		case <-quit:
			return
		}
		for i := range fr {
			t := time.NewTimer(time.Until(at.Add(fr[i].a.Offset())))
			select {
			case <-quit:
				t.Stop()
				return
			case <-t.C:
			}
			fr[i].batches = done.Load()
		}
	}()
	return &e, func() []crashFrontier {
		close(quit)
		wg.Wait()
		return fr
	}
}

// blindCrash says why the read-back cannot see what a crash may have
// lost ("": it can): every point acknowledged before it is older than
// the GC's final cutoff, collected before the read-back, which checks
// only the points held (a retention shorter than the ingest's simulated
// span: how much of it depends on the machine's speed).
func (r *run) blindCrash(frontiers []crashFrontier, h Held) string {
	for _, f := range frontiers {
		if f.batches <= 0 {
			continue // struck before any point was acknowledged, or after the ingest (the coordinator fails that step)
		}
		newest := (f.batches*int64(r.p.Batch) - 1) / r.sim.Users
		if first := FirstMinute(h); newest < first {
			return fmt.Sprintf("the %s struck when the ingest had reached simulated minute %d, and the GC (gc.retention %s) collected every minute before %d (of %d) before the read-back: nothing this crash could lose is read back; hold the ingest's whole span (a longer gc.retention)",
				f.a, newest, time.Duration(r.p.GC.Retention), first, r.sim.LastMinute(h))
		}
	}
	return ""
}

// afterFaults merges the goroutines' errors into the series and metrics,
// waits for the last fault to be over and reads every user's points back
// at the durable level: none acknowledged may be missing.
func (r *run) afterFaults(ctx context.Context, res *results.Step, logs []faultLog, h Held, frontiers []crashFrontier) error {
	var errs, retries int64
	firstErr := ""
	for _, l := range logs {
		errs += l.errs
		retries += l.retries
		if firstErr == "" {
			firstErr = l.firstErr
		}
		for _, t := range l.errTimes {
			i := int(t.Sub(res.Started) / time.Second)
			if i >= 0 && i < len(res.Series) {
				if res.Series[i].Counts == nil {
					res.Series[i].Counts = map[string]int64{}
				}
				res.Series[i].Counts["errors"]++
			}
		}
	}
	if wait := time.Until(res.Started.Add(fault.Settled(r.st.Faults))); wait > 0 {
		if err := workload.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	timeline, level := r.store.Timeline, "the target's own read"
	if d, ok := r.store.(DurableReader); ok {
		timeline, level = d.TimelineDurable, d.DurableRead()
	}
	// After a crash of a server that acknowledges before it fsyncs,
	// losses are the measured figure (workload.CrashLosses); the lost
	// points are then written again once counted, so that the GC's check
	// and the timelines and correlations after the ingest, which compare
	// with every point ingested, run on the whole data.
	measured, why := workload.CrashLosses(r.env, r.st)
	t0 := time.Now()
	checked, lost, rewritten, first, err := r.readBack(ctx, timeline, h, measured)
	res.Metrics["errors"] = float64(errs)
	res.Metrics["retries"] = float64(retries)
	res.Metrics["acknowledged"] = float64(r.sim.Count(h))
	res.Metrics["lost_acknowledged"] = float64(lost)
	res.Metrics["read_back"] = float64(checked)
	res.Metrics["verify_seconds"] = time.Since(t0).Seconds()
	var fs []string
	for _, a := range r.st.Faults {
		fs = append(fs, a.String())
	}
	res.Facts["faults"] = strings.Join(fs, "; ")
	res.Facts["verify_read"] = "every acknowledged point read back after the last fault, user by user, at " + level
	res.Facts["retry"] = fmt.Sprintf("a batch that fails is retried (20 ms pause, doubling to 1 s) until acknowledged; unacknowledged after %s fails the step", ackTimeout)
	if firstErr != "" {
		res.Facts["first_error"] = firstErr
	}
	if err != nil {
		return fmt.Errorf("geo: reading back the acknowledged points after the faults: %w", err)
	}
	if why != "" {
		res.Facts["lost_writes"] = why
	}
	if rewritten > 0 {
		res.Metrics["rewritten"] = float64(rewritten)
		res.Facts["rewritten"] = fmt.Sprintf("the %d lost points were written again once counted, so that the phases after the ingest run on every point ingested", rewritten)
	}
	if why := r.blindCrash(frontiers, h); why != "" {
		return errors.New("geo: " + why)
	}
	if lost > 0 && !measured {
		return &workload.VerifyError{Phase: PhaseIngest, Key: []byte(first),
			What: fmt.Sprintf("%d of %d acknowledged points LOST after the faults (read back at %s)", lost, checked+lost, level)}
	}
	return nil
}

// readBack reads every user's timeline over the held window, retrying
// errors (a node still rejoining) until verifyTimeout; a point missing or
// not as written is lost. With rewrite, each user's lost points are
// written again (retried as the ingest's) once counted.
func (r *run) readBack(ctx context.Context, timeline func(context.Context, int64, int64, int64, func(Point) error) error, h Held, rewrite bool) (checked, lost, rewritten int64, first string, err error) {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	from, to := h.Cutoff, TS(r.sim.LastMinute(h)+1)
	var next, nChecked, nLost, nRewritten atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < r.threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				u := next.Add(1) - 1
				if u >= r.sim.Users || ctx.Err() != nil {
					return
				}
				var got map[int64]Point
				pause := 50 * time.Millisecond
				for {
					got = map[int64]Point{}
					err := timeline(ctx, u, from, to, func(p Point) error { got[p.TS] = p; return nil })
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("user %d: %w", u, err)
						}
						mu.Unlock()
						return
					}
					_ = workload.Sleep(ctx, pause)
					pause = min(2*pause, time.Second)
				}
				var again []Point
				for m := FirstMinute(h); m <= r.sim.LastMinute(h); m++ {
					if !r.sim.Has(h, u, m) {
						continue
					}
					want := r.sim.At(u, m)
					if p, ok := got[TS(m)]; ok && p == want {
						nChecked.Add(1)
						continue
					}
					nLost.Add(1)
					if rewrite {
						again = append(again, want)
					}
					mu.Lock()
					if first == "" {
						first = "user/" + strconv.FormatInt(u, 10) + "/" + strconv.FormatInt(TS(m), 10)
					}
					mu.Unlock()
				}
				var l faultLog
				for len(again) > 0 {
					n := min(len(again), max(r.p.Batch, 1))
					if err := r.insertRetrying(ctx, &l, again[:n]); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("writing user %d's lost points again: %w", u, err)
						}
						mu.Unlock()
						return
					}
					nRewritten.Add(int64(n))
					again = again[n:]
				}
			}
		}()
	}
	wg.Wait()
	return nChecked.Load(), nLost.Load(), nRewritten.Load(), first, firstErr
}
