package ledger

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"storebench/internal/kv"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/workload"
)

// Background is a job run beside the stress load, as a node does
// housekeeping while it serves: stress.background: {task: compact, every: 5s}.
type Background struct {
	// Task is compact (the engine's full compaction, kv.Compacter), scan
	// (read the main chain through whole, in order, checked) or sync
	// (make every write durable).
	Task string `yaml:"task" json:"task"`
	// Every is the interval between runs (0: back to back).
	Every study.Duration `yaml:"every" json:"every" range:"0s..24h"`
}

var tasks = []string{"compact", "scan", "sync"}

var taskNames = strings.Join(tasks, ", ")

func validTask(name string) bool {
	for _, t := range tasks {
		if t == name {
			return true
		}
	}
	return false
}

// backgroundTask makes the runner task for b on this run's target, or
// says why the target cannot run it (before any load starts).
func (r *run) backgroundTask(b *Background) (runner.Task, error) {
	t := runner.Task{Name: b.Task, Every: time.Duration(b.Every)}
	switch b.Task {
	case "compact":
		c, ok := r.env.Target.(kv.Compacter)
		if !ok {
			return t, fmt.Errorf("stress.background: task compact: the target has no compaction of its own")
		}
		t.Run = func(context.Context, int64) error { return c.Compact() }
	case "sync":
		s, ok := r.env.Target.(interface{ Sync() error })
		if !ok {
			return t, fmt.Errorf("stress.background: task sync: the target has no sync of its own")
		}
		t.Run = func(context.Context, int64) error { return s.Sync() }
	case "scan":
		genesis := r.g.address(nil, mainChain, 0)
		var want, got []byte
		n := uint64(r.st.N)
		t.Run = func(ctx context.Context, _ int64) error {
			var next uint64
			var failure error
			err := r.store.Chain(ctx, genesis, func(tx Tx) bool {
				want = r.g.encode(want, mainChain, next, genesis)
				got = Encode(got, tx)
				if tx.Index != next || !bytes.Equal(got, want) {
					failure = &workload.VerifyError{Phase: "stress", Key: tx.Address, What: fmt.Sprintf("background scan: transaction %d of the chain differs from what was written", next)}
					return false
				}
				next++
				return true
			})
			if err == nil {
				err = failure
			}
			if err == nil && next != n {
				err = &workload.VerifyError{Phase: "stress", Key: genesis, What: fmt.Sprintf("background scan: chain has %d transactions, %d were written", next, n)}
			}
			return err
		}
	default:
		return t, fmt.Errorf("stress.background: unknown task %q (want one of %s)", b.Task, taskNames)
	}
	return t, nil
}
