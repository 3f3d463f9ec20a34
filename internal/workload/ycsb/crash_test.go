package ycsb

import (
	"context"
	"errors"
	"strings"
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
			}
		})
	}
}
