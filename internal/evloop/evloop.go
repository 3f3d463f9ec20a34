// Package evloop drives request/reply connections from an event loop, as
// the native load tools do (pgbench's select loop, redis-benchmark's
// epoll): one goroutine owns many non-blocking sockets in its own epoll
// set, reads only the readable ones, and writes a connection's next
// request as soon as its reply is complete.
//
// Why: a goroutine per connection on a net.Conn pays, per round trip, a
// read that finds nothing yet, a park, a netpoller wake-up and a
// scheduler hop onto another thread; on 2 cores shared with the server
// that cost (about 40% of the client's CPU on PostgreSQL point selects)
// is taken from the server and decides the figure. Here a round trip
// costs one write, one read and a share of one epoll_wait.
//
// The protocol stays with whoever speaks it: a Session builds requests
// and consumes replies (checking every byte it must); the loop moves
// bytes, times each operation from its request's first write to its
// reply's last byte, and records it through the runner's Loop (exact
// per-loop histograms, the run's static split of operations).
//
// Drive runs on a Poller (the epoll set and its wait loop), which a client
// with a state machine of its own drives directly: the HTTP workload's,
// which opens a connection per request in ab's close mode (Addr.Connect)
// and counts failures instead of failing the run. This package is the
// only user of epoll in storebench.
package evloop

import "time"

// Session is the protocol of one connection, driven by one loop (never
// concurrently).
type Session interface {
	// Request appends operation seq's first request to w.
	Request(w []byte, seq int64) ([]byte, error)
	// Reply consumes the reply bytes in (all that arrived and was not
	// yet consumed). It returns how many bytes it consumed (0: it needs
	// more), and either done (the operation is complete: every byte
	// received is then consumed), or a next request appended to w (an
	// operation of several round trips, such as a transaction: the
	// reply so far is then consumed), or neither (keep reading). An
	// error fails the run: the session reports what was wrong (a failed
	// check, a server error).
	Reply(in, w []byte) (n int, next []byte, done bool, err error)
}

// Closer is the optional ability of a Session to say why the server
// closed its connection, from what it parsed so far (PostgreSQL's FATAL
// ErrorResponse before it hangs up); nil when it does not know.
type Closer interface {
	Closed() error
}

// Conn is one connection of a loop: a socket from Detach and its
// protocol.
type Conn struct {
	Fd   int
	Name string // for errors ("postgres connection 3")
	Session
}

// Options tunes a loop.
type Options struct {
	// Timeout fails the run when an operation has no complete reply this
	// long after its request (default DefaultTimeout).
	Timeout time.Duration
	// ReadBuffer is each connection's first read buffer (default 64 KiB;
	// it grows for a larger reply).
	ReadBuffer int
}

// DefaultTimeout is an operation's default deadline.
const DefaultTimeout = 30 * time.Second
