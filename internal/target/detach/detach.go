// Package detach lets a client connection run its statements without a
// cancellable context and still stop when the caller's context ends.
//
// The SQL drivers watch the context of every call: go-sql-driver/mysql
// hands it to a watcher goroutine and back (two goroutine switches per
// statement), pgx registers and removes a context.AfterFunc and a channel.
// A load goroutine calls thousands of statements a second with one and the
// same context, so a connection registers once per context instead (Check)
// and, when that context ends, interrupts the connection (typically by
// setting a past deadline on its socket), which fails the statement in
// flight and every later one.
package detach

import (
	"context"
	"net"
	"sync"
	"time"
)

// Watch is one connection's watch. Not safe for concurrent use (a
// connection serves one goroutine at a time); Interrupt runs on a goroutine
// of its own.
type Watch struct {
	// Interrupt is called once when the watched context ends.
	Interrupt func()

	ctx  context.Context
	stop func() bool
}

// Check watches ctx from now on (once per context: a call with the context
// already watched costs a comparison) and returns ctx.Err(), so no
// statement starts under an ended context.
func (w *Watch) Check(ctx context.Context) error {
	if ctx != w.ctx {
		w.Stop()
		w.ctx = ctx
		w.stop = context.AfterFunc(ctx, w.Interrupt)
	}
	return ctx.Err()
}

// Stop ends the watch (at Close: the connection has no context to follow).
func (w *Watch) Stop() {
	if w.stop != nil {
		w.stop()
	}
	w.ctx, w.stop = nil, nil
}

// Conn is a net.Conn whose deadlines Interrupt can set to the past for
// good: a driver that sets its own deadlines before each read and write
// cannot lift the interruption.
type Conn struct {
	net.Conn
	mu          sync.Mutex
	interrupted bool
}

// past is a deadline that has passed.
var past = time.Unix(1, 0)

// Interrupt fails the read or write in flight and every later one.
func (c *Conn) Interrupt() {
	c.mu.Lock()
	c.interrupted = true
	c.mu.Unlock()
	c.Conn.SetDeadline(past)
}

func (c *Conn) set(t time.Time, f func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.interrupted {
		return f(past)
	}
	return f(t)
}

func (c *Conn) SetDeadline(t time.Time) error      { return c.set(t, c.Conn.SetDeadline) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.set(t, c.Conn.SetReadDeadline) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.set(t, c.Conn.SetWriteDeadline) }
