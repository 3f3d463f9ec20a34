// Package resp is a minimal RESP2 client for storebench's hot paths: SET
// and GET pipelines with no allocation per request. On 2 cores shared by
// client and server, every nanosecond of client CPU is taken from Redis;
// a general client (go-redis) allocates a command object per request.
package resp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Conn is one connection; not safe for concurrent use.
//
// Requests are not written when they are made: they wait in w and go out
// in the read that waits for their replies (see sock.Read), so that a
// round trip costs one write and one read system call, the read made once
// the socket is readable, as an epoll loop does (redis-benchmark's). A
// net.Conn Read made at once after the write almost always finds nothing
// yet: an EAGAIN, a park and a wake-up per round trip, which on 2 cores
// shared with the server is throughput taken from the server.
type Conn struct {
	nc   net.Conn
	rc   syscall.RawConn
	w    []byte // requests not yet sent
	werr error  // a write that failed while the requests were made
	r    *bufio.Reader
	val  []byte
	stop func() bool // unregisters the context watch
}

// bufSize is the size of the read buffer and the most requests held
// before they are sent (a larger pipeline goes out as it is made).
const bufSize = 64 << 10

// Dial connects to addr (host:port), selects db, and checks the server
// answers, within timeout. When ctx ends, the connection's pending and
// later reads and writes fail at once: one watch per connection, so the
// pipelines pay nothing per request for being cancellable.
func Dial(ctx context.Context, addr string, db int, password string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("%T has no file descriptor", nc)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &Conn{nc: nc, rc: rc, w: make([]byte, 0, bufSize)}
	c.r = bufio.NewReaderSize((*sock)(c), bufSize)
	_ = nc.SetDeadline(time.Now().Add(timeout))
	fail := func(err error) (*Conn, error) {
		nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if password != "" {
		if err := c.simple([]byte("AUTH"), []byte(password)); err != nil {
			return fail(fmt.Errorf("AUTH refused: %w", err))
		}
	}
	if db != 0 {
		if err := c.simple([]byte("SELECT"), []byte(strconv.Itoa(db))); err != nil {
			return fail(err)
		}
	}
	if err := c.simple([]byte("PING")); err != nil {
		return fail(err)
	}
	_ = nc.SetDeadline(time.Time{})
	// A deadline in the past fails every pending and later I/O on the
	// connection (a plain Close would race with a read in progress).
	c.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	return c, nil
}

// sock is the connection as the bufio.Reader's source.
type sock Conn

// Read sends the requests waiting in w, then waits for the socket to be
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
			for len(c.w) > 0 {
				m, e := syscall.Write(int(fd), c.w)
				if e == syscall.EINTR {
					continue
				}
				if m > 0 {
					c.w = c.w[:copy(c.w, c.w[m:])]
				}
				if e == syscall.EAGAIN {
					blocked = true
					return true
				}
				if e != nil {
					err = os.NewSyscallError("write", e)
					return true
				}
				if len(c.w) == 0 {
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
			if _, err := c.nc.Write(c.w); err != nil {
				return 0, err
			}
			c.w = c.w[:0]
			continue
		}
		return n, err
	}
}

func (c *Conn) simple(args ...[]byte) error {
	c.command(args...)
	_, err := c.status()
	return err
}

// command appends one request in RESP array form.
func (c *Conn) command(args ...[]byte) {
	c.header('*', len(args))
	for _, a := range args {
		c.bulkArg(a)
	}
}

func (c *Conn) header(kind byte, n int) {
	c.room(24)
	c.w = append(c.w, kind)
	c.w = strconv.AppendInt(c.w, int64(n), 10)
	c.w = append(c.w, '\r', '\n')
}

// bulkArg appends one $bulk argument.
func (c *Conn) bulkArg(a []byte) {
	c.header('$', len(a))
	if len(a) > bufSize {
		c.send()
		if c.werr == nil {
			_, c.werr = c.nc.Write(a)
		}
	} else {
		c.room(len(a) + 2)
		c.w = append(c.w, a...)
	}
	c.w = append(c.w, '\r', '\n')
}

// room sends what is pending if n more bytes would take w past bufSize.
func (c *Conn) room(n int) {
	if len(c.w)+n > bufSize {
		c.send()
	}
}

// send writes the pending requests now (a pipeline larger than bufSize);
// an error is kept for the caller of the pipeline.
func (c *Conn) send() {
	if c.werr == nil && len(c.w) > 0 {
		_, c.werr = c.nc.Write(c.w)
	}
	c.w = c.w[:0]
}

// sent returns (and forgets) a write error of the requests just made.
func (c *Conn) sent() error {
	err := c.werr
	c.werr = nil
	if err != nil {
		c.w = c.w[:0]
	}
	return err
}

var (
	cmdSet = []byte("*3\r\n$3\r\nSET\r\n")
	cmdGet = []byte("*2\r\n$3\r\nGET\r\n")
)

// Set pipelines SET keys[i] vals[i] and checks every reply is +OK.
func (c *Conn) Set(keys, vals [][]byte) error {
	for i := range keys {
		c.room(len(cmdSet))
		c.w = append(c.w, cmdSet...)
		c.bulkArg(keys[i])
		c.bulkArg(vals[i])
	}
	if err := c.sent(); err != nil {
		return err
	}
	for range keys {
		line, err := c.status()
		if err != nil {
			return err
		}
		if !bytes.Equal(line, []byte("OK")) {
			return fmt.Errorf("SET answered %q", line)
		}
	}
	return nil
}

// Get pipelines GET keys and calls fn with each value (nil if absent).
func (c *Conn) Get(keys [][]byte, fn func(i int, v []byte) error) error {
	for _, k := range keys {
		c.room(len(cmdGet))
		c.w = append(c.w, cmdGet...)
		c.bulkArg(k)
	}
	if err := c.sent(); err != nil {
		return err
	}
	var firstErr error
	for i := range keys {
		v, err := c.bulk()
		if err != nil {
			return err
		}
		if firstErr == nil {
			// Read every reply even after a failure, to leave the
			// connection in step.
			firstErr = fn(i, v)
		}
	}
	return firstErr
}

// ErrServer is a -ERR reply.
var ErrServer = errors.New("redis error")

// status reads a +simple reply (or -error).
func (c *Conn) status() ([]byte, error) {
	line, err := c.line()
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, fmt.Errorf("%w: %s", ErrServer, line[1:])
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// bulk reads a $bulk reply; nil for $-1. The slice is valid until the
// next read.
func (c *Conn) bulk() ([]byte, error) {
	line, err := c.line()
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '$':
	case '-':
		return nil, fmt.Errorf("%w: %s", ErrServer, line[1:])
	default:
		return nil, fmt.Errorf("unexpected reply %q", line)
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil {
		return nil, fmt.Errorf("bad bulk length %q", line)
	}
	if n < 0 {
		return nil, nil
	}
	if n+2 <= c.r.Size() {
		// Zero copy: the value stays in the reader's buffer.
		b, err := c.r.Peek(n + 2)
		if err != nil {
			return nil, err
		}
		_, _ = c.r.Discard(n + 2)
		return b[:n], nil
	}
	if cap(c.val) < n+2 {
		c.val = make([]byte, n+2)
	}
	if _, err := io.ReadFull(c.r, c.val[:n+2]); err != nil {
		return nil, err
	}
	return c.val[:n], nil
}

// line reads one CRLF-terminated line without the CRLF.
func (c *Conn) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply %q", line)
	}
	return line[:len(line)-2], nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.stop != nil {
		c.stop()
	}
	return c.nc.Close()
}
