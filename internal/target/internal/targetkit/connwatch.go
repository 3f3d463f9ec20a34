package targetkit

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ConnWatch lets a cancelled context interrupt the network I/O of a
// client library that does not watch contexts itself (go-redis bounds a
// command by its timeouts only, gomemcache takes no context at all): a
// step cancelled while the server stops answering would otherwise wait
// out the library's timeout, longer than the coordinator's grace.
//
// The client dials through Track, and each operation calls Watch with its
// context. When a watched context ends, every tracked connection gets a
// deadline in the past, which fails its pending and next I/O at once.
// Both libraries set fresh deadlines before each use, so a connection that
// survives serves the next step normally.
//
// Watch registers each distinct context once (a step's context is the
// same for all its operations): an operation pays one atomic load.
type ConnWatch struct {
	mu      sync.Mutex
	conns   map[*watchedConn]struct{}
	stop    func() bool // unregisters the current watch
	watched atomic.Pointer[doneChan]
}

type doneChan struct{ ch <-chan struct{} }

// NewConnWatch returns an empty watch.
func NewConnWatch() *ConnWatch {
	return &ConnWatch{conns: map[*watchedConn]struct{}{}}
}

// Watch arranges for ctx's end to interrupt the tracked connections.
func (w *ConnWatch) Watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil {
		return // nothing can cancel it
	}
	if d := w.watched.Load(); d != nil && d.ch == done {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.watched.Load(); d != nil && d.ch == done {
		return
	}
	if w.stop != nil {
		w.stop()
	}
	w.stop = context.AfterFunc(ctx, w.interrupt)
	w.watched.Store(&doneChan{done})
}

func (w *ConnWatch) interrupt() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.conns {
		_ = c.Conn.SetDeadline(time.Unix(1, 0))
	}
}

// Release stops watching (the client is closing).
func (w *ConnWatch) Release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

// Track returns c as a connection the watch can interrupt; it leaves the
// watch when closed.
func (w *ConnWatch) Track(c net.Conn) net.Conn {
	wc := &watchedConn{Conn: c, w: w}
	w.mu.Lock()
	w.conns[wc] = struct{}{}
	w.mu.Unlock()
	return wc
}

type watchedConn struct {
	net.Conn
	w *ConnWatch
}

func (c *watchedConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.conns, c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}

// NetConn gives the socket to libraries that inspect it (go-redis checks
// a pooled connection's liveness on it).
func (c *watchedConn) NetConn() net.Conn { return c.Conn }
