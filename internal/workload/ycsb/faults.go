package ycsb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/workload"
	"storebench/internal/workload/gen"
)

// While nodes fail, an insert that errs is retried (with a growing pause)
// until ackTimeout has passed since its first attempt; one never
// acknowledged by then is counted and not checked afterwards.
const (
	ackTimeout = 90 * time.Second
	// verifyTimeout bounds the read-back after the faults: the node may
	// still be rejoining, and a read at ALL fails until it has.
	verifyTimeout = 3 * time.Minute
)

// Length implements workload.Lengther: a load at a fixed rate
// (load_rate) lasts N/rate; the others' length is not known in advance.
func (YCSB) Length(st workload.Step) (time.Duration, string) {
	var p Params
	if st.Phase != "load" || json.Unmarshal(st.Params, &p) != nil || p.LoadRate <= 0 {
		return 0, ""
	}
	return time.Duration(float64(st.N) / p.LoadRate * float64(time.Second)), fmt.Sprintf("%d records at load_rate %g/s", st.N, p.LoadRate)
}

// loadUnderFaults is the load while the coordinator stops, kills,
// pauses or restarts nodes: errors are retried and counted per second,
// not fatal; once the last fault is over, every acknowledged record is
// read back at the level that must see it (DurableReader), and a lost one
// fails the step unless the target's replication is asynchronous, where
// losses are the measured figure.
func (r *run) loadUnderFaults(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	if err := r.prepareTable(ctx, env, func(f func() error) error { return retry(ctx, ackTimeout, f) }); err != nil {
		return nil, err
	}
	logs := make([]insertLog, r.goroutines)
	ws := r.states()
	var watched func(context.Context) (map[string]string, map[string]float64)
	if fw, ok := r.db.(FaultWatcher); ok {
		watched = fw.WatchFaults(ctx)
	}
	res, err := workload.Measure(ctx, env, workload.Closed(r.goroutines, r.n).At(r.p.LoadRate), func(ctx context.Context, w int, seq int64) error {
		return r.insertAcked(ctx, &ws[w], &logs[w], seq)
	})
	tot := mergeInsertLogs(logs)
	res.Unit = fmt.Sprintf("insert a record of %d×%d bytes", r.p.Fields, r.p.FieldLength)
	if err != nil {
		if watched != nil {
			watched(ctx)
		}
		return res, err
	}
	addErrorTicks(res, tot.errTimes)
	// The check waits for the last fault to be over (the node back):
	// the coordinator times the faults from the timed start.
	if wait := time.Until(res.Started.Add(fault.Settled(st.Faults))); wait > 0 {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
	read, level := r.db.Read, "the target's own read"
	if d, ok := r.db.(DurableReader); ok {
		read, level = d.ReadDurable, d.DurableRead()
	}
	measured, lostWrites := r.lossesMeasured(env, st)
	t0 := time.Now()
	checked, lost, rewritten, firstLost, verr := r.readBack(ctx, read, tot.unacked, measured)
	verifySeconds := time.Since(t0).Seconds()
	acked := r.share() - int64(len(tot.unacked))
	res.Verify = results.Verify{Checked: checked, Failed: lost}
	if len(firstLost) > 0 {
		res.Verify.First = fmt.Sprintf("key %s lost", firstLost)
	}
	res.Metrics = map[string]float64{"records": float64(r.n), "acknowledged": float64(acked), "errors": float64(tot.errs),
		"retries": float64(tot.retries), "unacknowledged": float64(len(tot.unacked)), "lost_acknowledged": float64(lost), "verify_seconds": verifySeconds}
	res.Facts = faultFacts(st, level)
	if tot.firstErr != "" {
		res.Facts["first_error"] = tot.firstErr
	}
	if lostWrites != "" {
		res.Facts["lost_writes"] = lostWrites
	}
	res.Metrics["landed_unanswered"] = float64(tot.landed)
	if rewritten > 0 {
		res.Metrics["rewritten"] = float64(rewritten)
		res.Facts["rewritten"] = fmt.Sprintf("the %d lost records were written again once counted, so that the phases after the load read every record", rewritten)
	}
	if watched != nil {
		facts, metrics := watched(ctx)
		maps.Copy(res.Facts, facts)
		maps.Copy(res.Metrics, metrics)
	}
	if verr != nil {
		return res, fmt.Errorf("ycsb: reading back the acknowledged records after the faults: %w", verr)
	}
	if lost > 0 && !measured {
		return res, &workload.VerifyError{Phase: "load", Key: firstLost,
			What: fmt.Sprintf("%d of %d acknowledged writes LOST after the faults (read back at %s)", lost, acked, level)}
	}
	return res, nil
}

// insertLog is one goroutine's errors under the faults (only the error
// path writes them), its records never acknowledged and those that
// landed unanswered; the logs are merged once the load is over.
type insertLog struct {
	errs, retries int64
	errTimes      []time.Time
	unacked       []int64
	landed        int64
	firstErr      string
	_             [64]byte
}

// insertTotals is the goroutines' insert logs merged.
type insertTotals struct {
	errs, retries, landed int64
	errTimes              []time.Time
	unacked               map[int64]bool
	firstErr              string
}

// insertAcked inserts record seq (goroutine state s, log l), retrying
// an error with a growing pause until it is acknowledged or ackTimeout
// has passed since its first attempt (the record is then unacknowledged).
func (r *run) insertAcked(ctx context.Context, s *wstate, l *insertLog, seq int64) error {
	s.key = key(s.key, uint64(seq))
	rec := r.record(s, s.key, gen.Mix(r.seed, uint64(seq)))
	t0 := time.Now()
	pause := 20 * time.Millisecond
	for try := 0; ; try++ {
		err := r.db.Insert(ctx, s.key, rec)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// A retry that fails may follow an attempt that landed, its
		// answer cut by the fault (an SQL INSERT then fails on its
		// own key forever): the record read back as written is
		// acknowledged.
		if try > 0 {
			if f, rerr := r.db.Read(ctx, s.key); rerr == nil && f != nil && r.checkFields("load", s.key, f, s.scratch) == nil {
				l.landed++
				return nil
			}
		}
		l.errs++
		l.errTimes = append(l.errTimes, time.Now())
		if l.firstErr == "" {
			l.firstErr = err.Error()
		}
		if time.Since(t0) > ackTimeout {
			l.unacked = append(l.unacked, seq)
			return nil
		}
		l.retries++
		if err := workload.Sleep(ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, time.Second)
	}
}

// mergeInsertLogs merges the goroutines' logs.
func mergeInsertLogs(logs []insertLog) insertTotals {
	tot := insertTotals{unacked: map[int64]bool{}}
	for _, l := range logs {
		tot.errs += l.errs
		tot.landed += l.landed
		tot.retries += l.retries
		tot.errTimes = append(tot.errTimes, l.errTimes...)
		for _, seq := range l.unacked {
			tot.unacked[seq] = true
		}
		if tot.firstErr == "" {
			tot.firstErr = l.firstErr
		}
	}
	return tot
}

// addErrorTicks counts the errors (at errTimes) per tick, beside the
// throughput.
func addErrorTicks(res *results.Step, errTimes []time.Time) {
	for _, t := range errTimes {
		i := int(t.Sub(res.Started) / time.Second)
		if i >= 0 && i < len(res.Series) {
			if res.Series[i].Counts == nil {
				res.Series[i].Counts = map[string]int64{}
			}
			res.Series[i].Counts["errors"]++
		}
	}
}

// lossesMeasured says whether lost writes are the measured figure rather
// than a failure, and why. Losses are the measured figure under
// asynchronous replication, and after a crash of a server that
// acknowledges before it fsyncs; a crash of one that fsyncs every write
// must lose none. A measured loss is written again once counted, so that
// the phases after the load read every record.
func (r *run) lossesMeasured(env *workload.Env, st workload.Step) (measured bool, why string) {
	async, isAsync := r.db.(AsyncReplication)
	measured = isAsync
	if isAsync {
		why = "measured, not a failure: " + async.AsyncReplication()
	}
	if crashed, cwhy := workload.CrashLosses(env, st); cwhy != "" {
		measured, why = crashed, cwhy
	}
	return measured, why
}

// faultFacts say which faults ran, how the records were read back (at
// level) and how inserts were retried.
func faultFacts(st workload.Step, level string) map[string]string {
	var fs []string
	for _, a := range st.Faults {
		fs = append(fs, a.String())
	}
	return map[string]string{
		"faults":      strings.Join(fs, "; "),
		"verify_read": "every acknowledged record read back after the last fault at " + level,
		"retry":       fmt.Sprintf("an insert that fails is retried (20 ms pause, doubling to 1 s) until acknowledged or %s after its first attempt", ackTimeout),
	}
}

// readBack reads every acknowledged record with read, retrying errors
// (a node still rejoining) until verifyTimeout; a record that is missing
// or not as written is lost. With rewrite, a missing one is inserted
// again (retried as the load's).
func (r *run) readBack(ctx context.Context, read func(context.Context, []byte) ([][]byte, error), unacked map[int64]bool, rewrite bool) (checked, lost, rewritten int64, firstLost []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	var next, nChecked, nLost, nRewritten atomic.Int64
	var mu sync.Mutex
	var lostKeys []int64
	errc := make(chan error, r.goroutines)
	var wg sync.WaitGroup
	for w := 0; w < r.goroutines; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var k []byte
			scratch := make([]byte, r.p.FieldLength)
			ws := r.states()[:1]
			for {
				i := next.Add(1) - 1
				if i >= r.n {
					return
				}
				if unacked[i] || !r.owns(i) {
					continue
				}
				k = key(k, uint64(i))
				var fields [][]byte
				rerr := retry(ctx, verifyTimeout, func() error {
					var err error
					fields, err = read(ctx, k)
					if errors.Is(err, kv.ErrNotFound) {
						return nil
					}
					return err
				})
				if rerr != nil {
					errc <- fmt.Errorf("record %d: %w", i, rerr)
					return
				}
				nChecked.Add(1)
				if fields == nil || r.checkFields("load", k, fields, scratch) != nil {
					nLost.Add(1)
					mu.Lock()
					lostKeys = append(lostKeys, i)
					mu.Unlock()
					if rewrite && fields == nil {
						rec := r.record(&ws[0], k, gen.Mix(r.seed, uint64(i)))
						if err := retry(ctx, ackTimeout, func() error { return r.db.Insert(ctx, k, rec) }); err != nil {
							errc <- fmt.Errorf("writing lost record %d again: %w", i, err)
							return
						}
						nRewritten.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	err = <-errc
	if len(lostKeys) > 0 {
		sort.Slice(lostKeys, func(a, b int) bool { return lostKeys[a] < lostKeys[b] })
		firstLost = key(nil, uint64(lostKeys[0]))
	}
	return nChecked.Load(), nLost.Load(), nRewritten.Load(), firstLost, err
}

// owns says whether record i is this process's to insert and check
// (the runner's static partition: global goroutine i mod parts×goroutines).
func (r *run) owns(i int64) bool {
	G := int64(r.parts * r.goroutines)
	return (i%G)/int64(r.goroutines) == int64(r.part)
}

// share is how many of the N records this process inserts.
func (r *run) share() int64 {
	var n int64
	G := int64(r.parts * r.goroutines)
	for g := int64(r.part * r.goroutines); g < int64((r.part+1)*r.goroutines); g++ {
		if g < r.n {
			n += (r.n-1-g)/G + 1
		}
	}
	return n
}

// retry calls f until it succeeds, ctx ends or timeout passes, pausing
// between attempts.
func retry(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	pause := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
