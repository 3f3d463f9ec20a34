package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interruptSignals stop a command the way Ctrl-C does: SIGINT (Ctrl-C),
// SIGTERM (kill, systemd, a container's stop) and SIGHUP (the terminal
// or ssh session it ran in was closed). Each stops a run, which keeps what
// it measured, writes its results and report as "interrupted", stops its
// servers, removes its data and exits 130; none kills it outright.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// errHangup is why a run stopped on SIGHUP.
var errHangup = errors.New("interrupted: its terminal or session was closed (SIGHUP)")

// notifyInterrupt returns a context cancelled by the first of
// interruptSignals, and the function that stops listening (restoring
// the default behaviour) and releases the context. SIGINT and SIGTERM
// cancel it plainly ("interrupted by the user"); SIGHUP with errHangup as
// its cause.
func notifyInterrupt(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	c := make(chan os.Signal, 1)
	signal.Notify(c, interruptSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-c:
			if s == syscall.SIGHUP {
				cancel(errHangup)
			} else {
				cancel(nil)
			}
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(c)
			close(done)
			cancel(nil)
		})
	}
}

// ignoreHangup makes SIGHUP harmless to a process whose shutdown another
// drives: a worker (its coordinator stops it over the protocol, and the
// kernel kills it should the coordinator die), so that a closed terminal
// cannot kill it before the coordinator has taken what it measured and
// cleaned up.
func ignoreHangup() { signal.Ignore(syscall.SIGHUP) }
