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
	"strconv"
	"time"
)

// Conn is one connection; not safe for concurrent use.
type Conn struct {
	nc   net.Conn
	w    *bufio.Writer
	r    *bufio.Reader
	num  []byte
	val  []byte
	stop func() bool // unregisters the context watch
}

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
	c := &Conn{nc: nc, w: bufio.NewWriterSize(nc, 64<<10), r: bufio.NewReaderSize(nc, 64<<10)}
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

func (c *Conn) simple(args ...[]byte) error {
	c.command(args...)
	if err := c.w.Flush(); err != nil {
		return err
	}
	_, err := c.status()
	return err
}

// command appends one request in RESP array form.
func (c *Conn) command(args ...[]byte) {
	c.header('*', len(args))
	for _, a := range args {
		c.header('$', len(a))
		c.w.Write(a)
		c.w.WriteString("\r\n")
	}
}

func (c *Conn) header(kind byte, n int) {
	c.num = append(c.num[:0], kind)
	c.num = strconv.AppendInt(c.num, int64(n), 10)
	c.num = append(c.num, '\r', '\n')
	c.w.Write(c.num)
}

var (
	cmdSet = []byte("SET")
	cmdGet = []byte("GET")
)

// Set pipelines SET keys[i] vals[i] and checks every reply is +OK.
func (c *Conn) Set(keys, vals [][]byte) error {
	for i := range keys {
		c.header('*', 3)
		c.header('$', 3)
		c.w.Write(cmdSet)
		c.w.WriteString("\r\n")
		c.header('$', len(keys[i]))
		c.w.Write(keys[i])
		c.w.WriteString("\r\n")
		c.header('$', len(vals[i]))
		c.w.Write(vals[i])
		c.w.WriteString("\r\n")
	}
	if err := c.w.Flush(); err != nil {
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
		c.header('*', 2)
		c.header('$', 3)
		c.w.Write(cmdGet)
		c.w.WriteString("\r\n")
		c.header('$', len(k))
		c.w.Write(k)
		c.w.WriteString("\r\n")
	}
	if err := c.w.Flush(); err != nil {
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
