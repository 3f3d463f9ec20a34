package evloop

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/runner"
)

// Supported says whether this platform has the event loop.
const Supported = true

// Detach takes c's socket out of the Go runtime for an event loop: the
// returned descriptor is a duplicate of c's, non-blocking, no longer in
// the runtime's netpoller (c itself is closed; the connection lives on in
// the duplicate). The caller owns fd and closes it with Close.
func Detach(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("evloop: a %T has no socket of its own", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("evloop: dup: %w", derr)
	}
	// Closing c removes its descriptor from the netpoller; the socket
	// stays open through fd (a close is not a shutdown).
	c.Close()
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("evloop: non-blocking: %w", err)
	}
	return fd, nil
}

// Close closes a descriptor Detach returned.
func Close(fd int) error { return unix.Close(fd) }

// conn is one connection slot of a loop.
type conn struct {
	Conn
	idx      int32 // in the loop's slots, the epoll user data
	seq      int64
	start    time.Duration // mono at the request's first write
	busy     bool          // an operation in flight
	out      []byte        // request bytes not yet written
	wbuf     []byte        // the write buffer (out is a tail of it)
	in       []byte        // read buffer; in[:filled] read, in[:used] consumed
	filled   int
	writable bool // EPOLLOUT registered
}

// Drive runs the operations loop rl hands out over conns, one operation
// in flight per connection, until rl has no more work and every
// operation in flight ended, or ctx ends. It fails on the first session
// error, a connection the server closed, a system call error, or an
// operation with no reply within opt.Timeout. The connections stay open
// (their owner closes them).
func Drive(ctx context.Context, rl *runner.Loop, conns []Conn, opt Options) error {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.ReadBuffer <= 0 {
		opt.ReadBuffer = 64 << 10
	}
	p, err := NewPoller(len(conns))
	if err != nil {
		return err
	}
	defer p.Close()
	cs := make([]*conn, len(conns))
	for i, c := range conns {
		cs[i] = &conn{Conn: c, idx: int32(i), in: make([]byte, opt.ReadBuffer), wbuf: make([]byte, 0, 4096)}
		// Level-triggered read interest for the connection's life: a
		// reply that does not fit one read is read on the next wait.
		if err := p.Set(c.Fd, int32(i), In|RDHup, false); err != nil {
			return err
		}
	}
	l := &loop{rl: rl, p: p, conns: cs, timeout: opt.Timeout}
	for _, c := range cs {
		if err := l.begin(c); err != nil {
			return err
		}
		if c.busy {
			l.live++
		}
	}
	if err := p.Run(ctx, rl, l); err != nil {
		return err
	}
	return ctx.Err()
}

// loop is one driving goroutine's state.
type loop struct {
	rl      *runner.Loop
	p       *Poller
	conns   []*conn
	live    int // connections with an operation in flight
	timeout time.Duration
}

// Live says whether an operation is in flight.
func (l *loop) Live() (bool, error) { return l.live > 0, nil }

// Ready writes the rest of a request to a writable connection and reads
// a readable one.
func (l *loop) Ready(slot int32, ev uint32) error {
	c := l.conns[slot]
	if ev&Out != 0 && len(c.out) > 0 {
		if err := l.write(c); err != nil {
			return err
		}
	}
	if ev&(In|RDHup|Gone) != 0 {
		was := c.busy
		if err := l.read(c); err != nil {
			return err
		}
		if was && !c.busy {
			l.live--
		}
	}
	return nil
}

// Scan fails the run on an operation past its deadline.
func (l *loop) Scan(now time.Duration) error {
	for _, c := range l.conns {
		if c.busy && now-c.start > l.timeout {
			return fmt.Errorf("evloop: %s: no reply within %v", c.Name, l.timeout)
		}
	}
	return nil
}

// begin starts c's next operation, if the loop has one.
func (l *loop) begin(c *conn) error {
	seq, ok := l.rl.Next()
	if !ok {
		c.busy = false
		return nil
	}
	w, err := c.Request(c.wbuf[:0], seq)
	if err != nil {
		return err
	}
	c.wbuf, c.out, c.seq, c.busy = w, w, seq, true
	c.start = Mono()
	return l.write(c)
}

// write sends what is left of c's request; a socket that takes only part
// of it gets write interest until it took all.
func (l *loop) write(c *conn) error {
	for len(c.out) > 0 {
		n, errno := Write(c.Fd, c.out)
		if errno == unix.EINTR {
			continue
		}
		if errno == unix.EAGAIN {
			return l.want(c, true)
		}
		if errno == unix.EPIPE || errno == unix.ECONNRESET {
			return l.closed(c, errno)
		}
		if errno != 0 {
			return fmt.Errorf("evloop: %s: write: %w", c.Name, errno)
		}
		c.out = c.out[n:]
	}
	if c.writable {
		return l.want(c, false)
	}
	return nil
}

func (l *loop) want(c *conn, out bool) error {
	ev := uint32(In | RDHup)
	if out {
		ev |= Out
	}
	c.writable = out
	return l.p.Set(c.Fd, c.idx, ev, true)
}

// read takes what the socket has and hands it to the session; a complete
// reply ends the operation (recorded) and starts the next one.
func (l *loop) read(c *conn) error {
	if c.filled == len(c.in) {
		// A reply larger than the buffer so far: grow it.
		c.in = append(c.in, make([]byte, len(c.in))...)
	}
	n, errno := Read(c.Fd, c.in[c.filled:])
	switch {
	case errno == unix.EAGAIN || errno == unix.EINTR:
		return nil
	case errno == unix.ECONNRESET:
		// The server closed with our request unread (a reset): what it
		// said before, if anything reached us, is lost with it.
		return l.closed(c, errno)
	case errno != 0:
		return fmt.Errorf("evloop: %s: read: %w", c.Name, errno)
	case n == 0:
		return l.closed(c, nil)
	}
	c.filled += n
	used := 0
	for c.busy {
		// The session appends a next request to the write buffer, free
		// unless the last request is still going out (then to a new
		// one, and asking for it is an error below).
		var w []byte
		if len(c.out) == 0 {
			w = c.wbuf[:0]
		}
		k, more, done, err := c.Reply(c.in[used:c.filled], w)
		if err != nil {
			return err
		}
		used += k
		if done {
			l.rl.Done(c.seq, Mono()-c.start)
			if len(more) > 0 {
				return fmt.Errorf("evloop: %s: a finished operation asked to send more", c.Name)
			}
			if err := l.begin(c); err != nil {
				return err
			}
			if used == c.filled {
				break
			}
			// More bytes came with the reply: the start of the next
			// one, or something the server sent on its own (an error
			// before it closes), which the session reads as the next
			// reply.
			continue
		}
		if len(more) > 0 {
			// The operation's next request (a transaction's next
			// statement).
			if len(c.out) > 0 {
				return fmt.Errorf("evloop: %s: a reply asked for the next request before the last one was sent", c.Name)
			}
			c.wbuf, c.out = more, more
			if err := l.write(c); err != nil {
				return err
			}
			if used == c.filled {
				break
			}
			// More bytes came with the reply: as after a complete
			// reply, the session reads them as the next one's (a
			// server's error before it closes the connection).
			continue
		}
		if k == 0 {
			break // the reply needs more bytes
		}
	}
	if !c.busy && used < c.filled {
		return fmt.Errorf("evloop: %s: %d bytes from the server with no request in flight", c.Name, c.filled-used)
	}
	// Keep the unconsumed tail at the buffer's start.
	c.filled = copy(c.in, c.in[used:c.filled])
	return nil
}

// closed is the error of a connection the server closed (how: nil for an
// orderly close, or the reset's errno), with the reason the session read
// before it, if any.
func (l *loop) closed(c *conn, how error) error {
	msg := "the server closed the connection"
	if how != nil {
		msg += " (" + how.Error() + ")"
	}
	if cl, ok := c.Session.(Closer); ok {
		if why := cl.Closed(); why != nil {
			return fmt.Errorf("evloop: %s: %s: %w", c.Name, msg, why)
		}
	}
	return fmt.Errorf("evloop: %s: %s", c.Name, msg)
}
