// Package resp is a minimal RESP2 client for storebench's hot paths: SET
// and GET pipelines with no allocation per request. On 2 cores shared by
// client and server, every nanosecond of client CPU is taken from Redis;
// a general client (go-redis) allocates a command object per request.
// Requests go out with the read of their replies (rtconn): one write and
// one read system call per round trip.
package resp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"storebench/internal/target/internal/rtconn"
)

// Conn is one connection; not safe for concurrent use.
type Conn struct {
	c   *rtconn.Conn
	val []byte
}

// Dial connects to addr (host:port), selects db, and checks the server
// answers, within timeout. When ctx ends, the connection's pending and
// later reads and writes fail at once.
func Dial(ctx context.Context, addr string, db int, password string, timeout time.Duration) (*Conn, error) {
	rc, err := rtconn.Dial(ctx, addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &Conn{c: rc}
	fail := func(err error) (*Conn, error) {
		rc.Close()
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
	rc.Ready(ctx)
	return c, nil
}

func (c *Conn) simple(args ...[]byte) error {
	c.header('*', len(args))
	for _, a := range args {
		c.bulkArg(a)
	}
	if err := c.c.Sent(); err != nil {
		return err
	}
	_, err := c.status()
	return err
}

func (c *Conn) header(kind byte, n int) {
	c.c.Room(24)
	c.c.W = append(c.c.W, kind)
	c.c.W = strconv.AppendInt(c.c.W, int64(n), 10)
	c.c.W = append(c.c.W, '\r', '\n')
}

// bulkArg appends one $bulk argument.
func (c *Conn) bulkArg(a []byte) {
	c.header('$', len(a))
	c.c.Big(a)
	c.c.Room(2)
	c.c.W = append(c.c.W, '\r', '\n')
}

var (
	cmdSet = []byte("*3\r\n$3\r\nSET\r\n")
	cmdGet = []byte("*2\r\n$3\r\nGET\r\n")
)

// Set pipelines SET keys[i] vals[i] and checks every reply is +OK.
func (c *Conn) Set(keys, vals [][]byte) error {
	for i := range keys {
		c.c.Room(len(cmdSet))
		c.c.W = append(c.c.W, cmdSet...)
		c.bulkArg(keys[i])
		c.bulkArg(vals[i])
	}
	if err := c.c.Sent(); err != nil {
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
		c.c.Room(len(cmdGet))
		c.c.W = append(c.c.W, cmdGet...)
		c.bulkArg(k)
	}
	if err := c.c.Sent(); err != nil {
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
	return c.c.Payload(n, &c.val)
}

// line reads one non-empty reply line without the CRLF.
func (c *Conn) line() ([]byte, error) {
	line, err := c.c.Line()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, fmt.Errorf("empty reply line")
	}
	return line, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Take hands the connection's socket over (to an event loop, package
// evloop); the Conn is then no longer to be used. Nothing may be pending.
func (c *Conn) Take() (net.Conn, error) { return c.c.Take() }

// AppendSet appends "SET key val" as a RESP request to w.
func AppendSet(w, key, val []byte) []byte {
	w = append(w, cmdSet...)
	return appendBulk(appendBulk(w, key), val)
}

// AppendGet appends "GET key" as a RESP request to w.
func AppendGet(w, key []byte) []byte {
	return appendBulk(append(w, cmdGet...), key)
}

func appendBulk(w, a []byte) []byte {
	w = append(w, '$')
	w = strconv.AppendInt(w, int64(len(a)), 10)
	w = append(w, '\r', '\n')
	w = append(w, a...)
	return append(w, '\r', '\n')
}

// MaxLine bounds a reply's header line: a peer that sends more without a
// line end is not speaking RESP (and would grow the buffer for ever).
const MaxLine = 64 << 10

// Next parses the reply at the start of in without copying: its kind
// ('+' status, '-' error, ':' integer, '$' bulk), its text (the status,
// the error, the integer's digits, the bulk's bytes; nil for the nil bulk
// $-1) and its length in bytes, n = 0 when in does not hold all of it
// yet. An array ('*') is its header line alone, v its element count's
// digits (see Int): its elements are the replies that follow.
func Next(in []byte) (kind byte, v []byte, n int, err error) {
	eol := bytes.IndexByte(in, '\n')
	if eol < 0 {
		if len(in) > MaxLine {
			return 0, nil, 0, fmt.Errorf("a reply line of more than %d bytes", MaxLine)
		}
		return 0, nil, 0, nil
	}
	if eol < 2 || in[eol-1] != '\r' {
		return 0, nil, 0, fmt.Errorf("malformed reply %q", in[:eol+1])
	}
	line := in[1 : eol-1]
	switch in[0] {
	case '+', '-', ':', '*':
		return in[0], line, eol + 1, nil
	case '$':
	default:
		return 0, nil, 0, fmt.Errorf("unexpected reply %q", in[:eol-1])
	}
	size, ok := atoi(line)
	if !ok || size < -1 {
		return 0, nil, 0, fmt.Errorf("bad bulk length %q", in[:eol-1])
	}
	if size == -1 {
		return '$', nil, eol + 1, nil
	}
	end := eol + 1 + size
	if len(in) < end+2 {
		return 0, nil, 0, nil
	}
	if in[end] != '\r' || in[end+1] != '\n' {
		return 0, nil, 0, fmt.Errorf("value of %d bytes not followed by CRLF", size)
	}
	return '$', in[eol+1 : end : end], end + 2, nil
}

// Int is the integer of an integer reply's or an array header's digits.
func Int(v []byte) (int, bool) { return atoi(v) }

// AppendArray appends the header of a request of n arguments to w.
func AppendArray(w []byte, n int) []byte {
	w = append(w, '*')
	w = strconv.AppendInt(w, int64(n), 10)
	return append(w, '\r', '\n')
}

// AppendBulk appends one argument of a request to w.
func AppendBulk(w, a []byte) []byte { return appendBulk(w, a) }

// atoi parses a decimal integer (a leading minus allowed) with no
// allocation.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
