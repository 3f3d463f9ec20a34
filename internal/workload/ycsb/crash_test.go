package ycsb

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/workload"
)

// losing acknowledges every Put and drops one in every 100: a server
// whose crash took writes it had acknowledged.
type losing struct {
	kv.Store
	n atomic.Int64
}

func (l *losing) Put(key, value []byte) error {
	if l.n.Add(1)%100 == 0 {
		return nil
	}
	return l.Store.Put(key, value)
}

// After a crash of a single server, lost acknowledged writes fail the
// step under sync durability (the server fsyncs each write before it
// acknowledges it) and are the measured figure under async; the report's
// fact says which.
func TestCrashLossesFailSyncAndAreMeasuredAsync(t *testing.T) {
	for _, class := range []kv.Durability{kv.Sync, kv.Async} {
		t.Run(string(class), func(t *testing.T) {
			steps, st := setup(t)
			load := steps[0]
			load.Faults = []fault.Action{{Action: fault.Kill9, Node: 1, Phase: "load"}}
			env := &workload.Env{Target: &losing{Store: st}, Opened: &workload.OpenSpec{Target: "redis", Options: target.Options{Durability: class}}}
			res, err := YCSB{}.Execute(context.Background(), env, load)
			if res == nil || res.Metrics["lost_acknowledged"] != 20 || res.Verify.Failed != 20 {
				t.Fatalf("result %+v, err %v: want the 20 dropped writes of 2000 counted lost", res, err)
			}
			var ve *workload.VerifyError
			switch class {
			case kv.Sync:
				if !errors.As(err, &ve) || !strings.Contains(err.Error(), "20 of 2000 acknowledged writes LOST") {
					t.Errorf("sync: %v, want the step failed on its lost writes", err)
				}
				if f := res.Facts["lost_writes"]; !strings.HasPrefix(f, "a failure: the server ran under sync durability") || !strings.Contains(f, "kill-9") {
					t.Errorf("sync: lost_writes %q", f)
				}
			case kv.Async:
				if err != nil {
					t.Errorf("async: %v, want the losses measured", err)
				}
				if f := res.Facts["lost_writes"]; !strings.HasPrefix(f, "measured, not a failure: the server ran under async durability") {
					t.Errorf("async: lost_writes %q", f)
				}
				// The lost records were written again, so the workload
				// after the load reads every record (one missing fails it).
				if res.Metrics["rewritten"] != 20 {
					t.Errorf("async: rewritten %v, want the 20 lost", res.Metrics["rewritten"])
				}
				if _, err := (YCSB{}).Execute(context.Background(), &workload.Env{Target: st}, steps[1]); err != nil {
					t.Errorf("async: %s after the load: %v", steps[1].Phase, err)
				}
			}
		})
	}
}

// landing writes every Put but answers the first attempt at every 100th
// key with an error (the crash cut its answer), and then, as an SQL
// INSERT would, refuses the key as already there.
type landing struct {
	kv.Store
	n    atomic.Int64
	seen map[string]bool
	mu   sync.Mutex
}

func (l *landing) Put(key, value []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[string(key)] {
		return errors.New("duplicate key")
	}
	if err := l.Store.Put(key, value); err != nil {
		return err
	}
	if l.n.Add(1)%100 == 0 {
		l.seen[string(key)] = true
		return errors.New("connection reset by peer")
	}
	return nil
}

// An insert whose answer a crash cut after it landed fails on every
// retry; read back as written, it is acknowledged, not left unanswered
// for the 90 s of retries.
func TestRetriedInsertThatLandedIsAcknowledged(t *testing.T) {
	steps, st := setup(t)
	load := steps[0]
	load.Faults = []fault.Action{{Action: fault.Kill9, Node: 1, Phase: "load"}}
	env := &workload.Env{Target: &landing{Store: st, seen: map[string]bool{}}, Opened: &workload.OpenSpec{Target: "redis", Options: target.Options{Durability: kv.Sync}}}
	res, err := YCSB{}.Execute(context.Background(), env, load)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	if m["landed_unanswered"] != 20 || m["unacknowledged"] != 0 || m["lost_acknowledged"] != 0 || m["acknowledged"] != 2000 {
		t.Errorf("landed %v, unacknowledged %v, lost %v, acknowledged %v: want the 20 landed inserts acknowledged", m["landed_unanswered"], m["unacknowledged"], m["lost_acknowledged"], m["acknowledged"])
	}
}
