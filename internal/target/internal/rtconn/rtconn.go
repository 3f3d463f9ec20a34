// Package rtconn is the socket under storebench's lean request/response
// clients (Redis RESP, memcached text): requests are appended to a buffer
// and go out inside the read that waits for their replies, so that a
// round trip costs one write and one read system call, the read made once
// the socket is readable, as an epoll loop does (redis-benchmark's,
// memcslap's). A net.Conn Read made at once after the write almost always
// finds nothing yet: an EAGAIN, a park and a wake-up per round trip, which
// on 2 cores shared with the server is throughput taken from the server.
package rtconn

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// BufSize is the size of the read buffer and the most request bytes held
// before they are sent (a larger pipeline goes out as it is made).
const BufSize = 64 << 10

// Conn is one connection; not safe for concurrent use. Append requests
// to W (Room first), then read the replies from R.
type Conn struct {
	nc   net.Conn
	rc   syscall.RawConn
	W    []byte // requests not yet sent
	werr error  // a write that failed while the requests were made
	R    *bufio.Reader
	stop func() bool
}

// Dial connects to addr within timeout, with a deadline of timeout on the
// I/O until Ready is called (the handshake).
func Dial(ctx context.Context, addr string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c, err := Wrap(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	return c, nil
}

// Wrap makes a Conn of a connection already set up by another client (a
// PostgreSQL session whose handshake and prepares a driver made); nothing
// may be left unread on it. It fails for a connection without a file
// descriptor of its own (TLS), which the caller then keeps as it was.
func Wrap(nc net.Conn) (*Conn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T has no file descriptor", nc)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &Conn{nc: nc, rc: rc, W: make([]byte, 0, BufSize)}
	c.R = bufio.NewReaderSize((*sock)(c), BufSize)
	return c, nil
}

// Ready ends the handshake's deadline and ties the connection to ctx:
// when ctx ends, pending and later reads and writes fail at once (one
// watch per connection, so requests pay nothing for being cancellable).
func (c *Conn) Ready(ctx context.Context) {
	_ = c.nc.SetDeadline(time.Time{})
	// A deadline in the past fails every pending and later I/O on the
	// connection (a plain Close would race with a read in progress).
	c.stop = context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.stop != nil {
		c.stop()
	}
	return c.nc.Close()
}

// Room sends what is pending if n more bytes would take W past BufSize.
func (c *Conn) Room(n int) {
	if len(c.W)+n > BufSize {
		c.send()
	}
}

// Big appends b, writing it straight out when it is larger than BufSize.
func (c *Conn) Big(b []byte) {
	if len(b) <= BufSize {
		c.Room(len(b))
		c.W = append(c.W, b...)
		return
	}
	c.send()
	if c.werr == nil {
		_, c.werr = c.nc.Write(b)
	}
}

// send writes the pending requests now; an error is kept for Sent.
func (c *Conn) send() {
	if c.werr == nil && len(c.W) > 0 {
		_, c.werr = c.nc.Write(c.W)
	}
	c.W = c.W[:0]
}

// Flush writes the pending requests now and returns a write error.
func (c *Conn) Flush() error {
	c.send()
	return c.Sent()
}

// Sent returns (and forgets) a write error of the requests just made;
// call it before reading their replies.
func (c *Conn) Sent() error {
	err := c.werr
	c.werr = nil
	if err != nil {
		c.W = c.W[:0]
	}
	return err
}

// sock is the connection as the bufio.Reader's source.
type sock Conn

// Read sends the requests waiting in W, then waits for the socket to be
// readable and reads. The write is made inside RawConn.Read, after the
// runtime has reset the socket's read readiness: the readiness that the
// replies bring cannot be lost, and no read is tried before it.
func (s *sock) Read(p []byte) (int, error) {
	c := (*Conn)(s)
	for {
		var (
			n       int
			err     error
			blocked bool // the socket's send buffer is full
		)
		rerr := c.rc.Read(func(fd uintptr) bool {
			for len(c.W) > 0 {
				m, e := syscall.Write(int(fd), c.W)
				if e == syscall.EINTR {
					continue
				}
				if m > 0 {
					c.W = c.W[:copy(c.W, c.W[m:])]
				}
				if e == syscall.EAGAIN {
					blocked = true
					return true
				}
				if e != nil {
					err = os.NewSyscallError("write", e)
					return true
				}
				if len(c.W) == 0 {
					// Every request is out: wait for the replies.
					return false
				}
			}
			for {
				m, e := syscall.Read(int(fd), p)
				switch {
				case e == syscall.EINTR:
					continue
				case e == syscall.EAGAIN:
					return false
				case e != nil:
					err = os.NewSyscallError("read", e)
				case m == 0:
					err = io.EOF
				default:
					n = m
				}
				return true
			}
		})
		if rerr != nil {
			return 0, rerr
		}
		if blocked {
			// Rare (a pipeline larger than the socket's buffer): the
			// runtime waits for room.
			if _, err := c.nc.Write(c.W); err != nil {
				return 0, err
			}
			c.W = c.W[:0]
			continue
		}
		return n, err
	}
}

// Line reads one CRLF-terminated line without the CRLF; it is valid
// until the next read.
func (c *Conn) Line() ([]byte, error) {
	line, err := c.R.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply %q", line)
	}
	return line[:len(line)-2], nil
}

// Payload reads n bytes and the CRLF after them; the slice is valid until
// the next read (it is the reader's buffer when it fits, else *scratch).
func (c *Conn) Payload(n int, scratch *[]byte) ([]byte, error) {
	if n+2 <= c.R.Size() {
		b, err := c.R.Peek(n + 2)
		if err != nil {
			return nil, err
		}
		_, _ = c.R.Discard(n + 2)
		if b[n] != '\r' || b[n+1] != '\n' {
			return nil, fmt.Errorf("value of %d bytes not followed by CRLF", n)
		}
		return b[:n], nil
	}
	if cap(*scratch) < n+2 {
		*scratch = make([]byte, n+2)
	}
	b := (*scratch)[:n+2]
	if _, err := io.ReadFull(c.R, b); err != nil {
		return nil, err
	}
	return b[:n], nil
}

// Take hands the connection's socket over (to an event loop, package
// evloop): the context watch stops and the Conn is no longer to be used.
// Nothing may be pending either way: no request unsent, no reply unread.
func (c *Conn) Take() (net.Conn, error) {
	if len(c.W) > 0 || c.R.Buffered() > 0 || c.werr != nil {
		return nil, fmt.Errorf("rtconn: a connection with I/O pending cannot be handed over")
	}
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	return c.nc, nil
}
