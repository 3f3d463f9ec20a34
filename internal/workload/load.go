package workload

import (
	"context"
	"runtime"
	"time"

	"storebench/internal/evloop"
	"storebench/internal/runner"
)

// Load is the shape of a timed phase: how Measure has the runner drive
// it. It is made in one line from the step (its concurrency, rate and
// duration) and the workload's params, e.g.
//
//	workload.Closed(goroutines, ops)                 // ops operations, as fast as the target goes
//	workload.Closed(goroutines, 0).For(d)            // as many as fit in d
//	workload.Closed(goroutines, ops).At(rate)        // open loop at rate (0: closed)
//	workload.Open(rate, d).On(goroutines)            // open loop at rate for d
//	workload.Closed(0, ops).Driven(loops, drive)     // event loops instead of goroutines
//	workload.Concurrent(d, streams...)               // several streams at once
//
// The counts are this process's: a step split across worker processes
// (Env.Part, Env.Parts) has each of them drive the same Load, and the
// runner partitions the operations and the rate among them.
//
// Words: a worker is a process (package worker), and only that; the load
// of one worker is driven by goroutines or event loops.
type Load struct {
	// Goroutines drive the operations (default 1), in a closed loop or,
	// with a Rate, an open one.
	Goroutines int
	// Loops event loops (default 1) each call Drive once instead
	// (runner.Drive: closed loop only, Goroutines then unused).
	Loops int
	Drive runner.Drive
	// Ops bounds the phase to this many operations in all (0: no bound);
	// Duration bounds it in time (0: no bound).
	Ops      int64
	Duration time.Duration
	// Rate > 0 is an open loop at this many operations per second in all:
	// each operation has an intended start, and its latency counts from it.
	Rate float64
	// Classes name the operations' classes and ClassOf tells which one
	// operation seq is (cheap and deterministic): the step then has a
	// latency per class.
	Classes []string
	ClassOf func(seq int64) int
	// Streams, when set, are run concurrently, each with its own
	// operation, goroutines and rate (Goroutines, Ops, Rate and the
	// classes above are then left zero); Measure's op is nil.
	Streams []runner.Stream
	// Background tasks run beside the load until it ends.
	Background []runner.Task
	// Total is the operations expected, for progress (0: unknown).
	Total int64
}

// Closed is a closed loop of goroutines bounded by ops operations (0:
// by a duration, see For), each goroutine starting an operation when its
// last ended. Its progress counts out of ops.
func Closed(goroutines int, ops int64) Load {
	return Load{Goroutines: goroutines, Ops: ops, Total: ops}
}

// Open is an open loop at rate operations per second for d, on one
// goroutine (see On). Its progress counts out of the operations the rate
// offers in d.
func Open(rate float64, d time.Duration) Load {
	return Load{Goroutines: 1, Rate: rate, Duration: d, Total: int64(rate * d.Seconds())}
}

// Concurrent is the streams run at once for d (0: each stream bounded by
// its own operations).
func Concurrent(d time.Duration, streams ...runner.Stream) Load {
	return Load{Duration: d, Streams: streams}
}

// For bounds the load by d too (0: no time bound).
func (l Load) For(d time.Duration) Load {
	l.Duration = d
	return l
}

// At is the load at rate operations per second in all: an open loop
// when rate > 0, the closed loop it was when 0.
func (l Load) At(rate float64) Load {
	l.Rate = rate
	return l
}

// On drives the load with goroutines.
func (l Load) On(goroutines int) Load {
	l.Goroutines = goroutines
	return l
}

// Classed files the operations under classes: of(seq) is operation seq's.
func (l Load) Classed(classes []string, of func(seq int64) int) Load {
	l.Classes, l.ClassOf = classes, of
	return l
}

// Driven drives the load with loops event loops calling drive instead of
// goroutines calling an operation (closed loop: no rate).
func (l Load) Driven(loops int, drive runner.Drive) Load {
	l.Goroutines, l.Loops, l.Drive = 0, loops, drive
	return l
}

// Beside runs tasks beside the load until it ends.
func (l Load) Beside(tasks ...runner.Task) Load {
	l.Background = tasks
	return l
}

// Expecting sets the operations progress counts out of (0: unknown).
func (l Load) Expecting(total int64) Load {
	l.Total = total
	return l
}

// config is the runner's configuration of the load. It is the one
// runner.Config made outside package runner (archtest holds it so).
func (l Load) config() runner.Config {
	return runner.Config{
		Goroutines: l.Goroutines, Loops: l.Loops, Drive: l.Drive,
		Ops: l.Ops, Duration: l.Duration, Rate: l.Rate,
		Classes: l.Classes, ClassOf: l.ClassOf,
		Streams: l.Streams, Background: l.Background,
	}
}

// OnLoops makes the load drive event sessions from event loops instead
// of a goroutine a connection, each loop taking every loops-th session,
// and returns it with the number of loops: want, or with none asked for
// half the cores, at most one a session. Half the cores: the server
// shares the machine, and one loop waiting on a fuller epoll set costs
// less per request (the setget, pointselect and http workloads).
func (l Load) OnLoops(want int, sessions []evloop.Conn) (Load, int) {
	loops := max(min(want, len(sessions)), 1)
	if want == 0 {
		loops = max(min(runtime.GOMAXPROCS(0)/2, len(sessions)), 1)
	}
	return l.Driven(loops, func(ctx context.Context, lp *runner.Loop) error {
		var mine []evloop.Conn
		for i := lp.ID; i < len(sessions); i += loops {
			mine = append(mine, sessions[i])
		}
		return evloop.Drive(ctx, lp, mine, evloop.Options{})
	}), loops
}
