package workload

import (
	"context"
	"time"
)

// Tally counts per load goroutine, each count on a cache line of its own,
// summed once the goroutines are done: a count that every operation adds
// to (verified reads) must not make the goroutines wait for one shared
// cache line.
type Tally []tallySlot

type tallySlot struct {
	n int64
	_ [56]byte
}

// NewTally has a count for each of goroutines goroutines.
func NewTally(goroutines int) Tally { return make(Tally, goroutines) }

// Add adds n to goroutine w's count; only goroutine w may call it.
func (t Tally) Add(w int, n int64) { t[w].n += n }

// Sum is the total; call it after the goroutines have ended.
func (t Tally) Sum() int64 {
	var s int64
	for i := range t {
		s += t[i].n
	}
	return s
}

// Of is goroutine w's count; call it after the goroutines have ended.
func (t Tally) Of(w int) int64 { return t[w].n }

// Sleep pauses the calling goroutine for d, or until ctx ends (then its
// error): a retry's back-off on an operation's error path, private to the
// goroutine (its own timer), never a wait on the other goroutines.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
