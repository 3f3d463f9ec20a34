// Package hotpath holds operations with the faults
// TestNoSharedStateOnTheOperationPath exists to catch, and the patterns
// it must let through. Each line the checker must report ends with
// "// want".
package hotpath

import (
	"context"
	"sync"
	"sync/atomic"
)

type load struct {
	verified atomic.Int64
	mu       sync.Mutex
	queue    chan int
	per      []struct{ n atomic.Int64 }
}

func (l *load) ops() []func(context.Context, int, int64) error {
	return []func(context.Context, int, int64) error{
		func(ctx context.Context, w int, seq int64) error {
			l.verified.Add(1) // want
			l.per[w].n.Add(1)
			return nil
		},
		func(ctx context.Context, w int, seq int64) error {
			l.queue <- w // want
			return nil
		},
		func(ctx context.Context, w int, seq int64) error {
			select {
			case v := <-l.queue: // want
				_ = v
			case <-ctx.Done():
			}
			return nil
		},
		func(ctx context.Context, w int, seq int64) error {
			return l.locked()
		},
		func(ctx context.Context, w int, seq int64) error {
			return l.steps().check(w)
		},
		func(ctx context.Context, w int, seq int64) error {
			// A semaphore of the operation's own.
			sem := make(chan struct{}, 4)
			sem <- struct{}{}
			<-sem
			return nil
		},
	}
}

func (l *load) locked() error {
	l.mu.Lock() // want
	defer l.mu.Unlock()
	return nil
}

// steps are functions given as a struct's fields, called by the
// operation through them.
type steps struct{ check func(w int) error }

func (l *load) steps() steps {
	return steps{check: func(w int) error {
		l.verified.Add(1) // want
		return nil
	}}
}
