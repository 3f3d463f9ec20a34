package memcached

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"storebench/internal/evloop"
	"storebench/internal/target"
	"storebench/internal/target/internal/rtconn"
	"storebench/internal/target/internal/targetkit"
)

// The setget workload (memcslap/redis-benchmark shaped): a connection of
// its own per load goroutine, speaking the text protocol with no
// allocation per request, requests sent with the read of their replies
// (rtconn); or, by default, the same requests on the connection's socket
// driven by an event loop (Events). gomemcache allocates an Item per
// request and reads at once after each write.

// NewSession implements target.Pipeliner.
func (s *Store) NewSession(ctx context.Context) (target.Session, error) {
	c, err := s.dial(ctx, "setget session")
	if err != nil {
		return nil, err
	}
	c.Ready(ctx)
	return &session{c: c, fd: -1}, nil
}

// dial opens a connection of its own to the server (what: whose, for
// the errors) and checks that memcached answers "version" on it.
func (s *Store) dial(ctx context.Context, what string) (*rtconn.Conn, error) {
	c, err := rtconn.Dial(ctx, s.addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("memcached: %s to %s: %w", what, s.addr, err)
	}
	c.W = append(c.W, "version\r\n"...)
	line, err := c.Line()
	if err == nil && !bytes.HasPrefix(line, []byte("VERSION ")) {
		err = fmt.Errorf("version answered %q", line)
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("memcached: %s to %s: %w", what, s.addr, err)
	}
	return c, nil
}

type session struct {
	c        *rtconn.Conn
	val, big []byte
	fd       int // the socket once Events handed it to an event loop, or -1
}

// checkKey refuses what the text protocol cannot carry as a key.
func checkKey(k []byte) error {
	if len(k) == 0 || len(k) > 250 {
		return fmt.Errorf("memcached: key of %d bytes (want 1..250)", len(k))
	}
	for _, b := range k {
		if b <= ' ' || b == 0x7f {
			return fmt.Errorf("memcached: key %q has a space or control character", k)
		}
	}
	return nil
}

var (
	stored = []byte("STORED")
	end    = []byte("END")
)

// Set pipelines "set key 0 0 len" and checks every reply is STORED.
func (s *session) Set(keys, vals [][]byte) error {
	c := s.c
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
		c.Room(len(k) + 32)
		c.W = append(c.W, "set "...)
		c.W = append(c.W, k...)
		c.W = append(c.W, " 0 0 "...)
		c.W = strconv.AppendInt(c.W, int64(len(vals[i])), 10)
		c.W = append(c.W, '\r', '\n')
		c.Big(vals[i])
		c.Room(2)
		c.W = append(c.W, '\r', '\n')
	}
	if err := c.Sent(); err != nil {
		return err
	}
	for range keys {
		line, err := c.Line()
		if err != nil {
			return err
		}
		if !bytes.Equal(line, stored) {
			return fmt.Errorf("memcached: set answered %q", line)
		}
	}
	return nil
}

// Get pipelines one "get key" per key and calls fn with each value (nil
// when absent).
func (s *session) Get(keys [][]byte, fn func(i int, v []byte) error) error {
	c := s.c
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
		c.Room(len(k) + 6)
		c.W = append(c.W, "get "...)
		c.W = append(c.W, k...)
		c.W = append(c.W, '\r', '\n')
	}
	if err := c.Sent(); err != nil {
		return err
	}
	var firstErr error
	for i, k := range keys {
		v, err := s.value(k)
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

// value reads one get's reply: "VALUE key flags bytes", the data, "END";
// or "END" alone for a miss (nil).
func (s *session) value(key []byte) ([]byte, error) {
	line, err := s.c.Line()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(line, end) {
		return nil, nil
	}
	rest, ok := bytes.CutPrefix(line, []byte("VALUE "))
	if !ok {
		return nil, fmt.Errorf("memcached: get answered %q", line)
	}
	k, rest, _ := bytes.Cut(rest, []byte{' '})
	_, size, _ := bytes.Cut(rest, []byte{' '})
	if sp := bytes.IndexByte(size, ' '); sp >= 0 {
		size = size[:sp] // a cas unique follows with gets
	}
	n, err := strconv.Atoi(string(size))
	if err != nil || n < 0 || !bytes.Equal(k, key) {
		return nil, fmt.Errorf("memcached: get %q answered %q", key, line)
	}
	v, err := s.c.Payload(n, &s.big)
	if err != nil {
		return nil, err
	}
	// Reading END after the value may move the reader's buffer: the
	// value is copied to the session's own.
	s.val = append(s.val[:0], v...)
	v = s.val
	if line, err = s.c.Line(); err != nil {
		return nil, err
	}
	if !bytes.Equal(line, end) {
		return nil, fmt.Errorf("memcached: get %q: %q after the value, want END", key, line)
	}
	return v, nil
}

func (s *session) Close() error {
	if s.fd >= 0 {
		return evloop.Close(s.fd)
	}
	return s.c.Close()
}

// Events implements target.EventedSession: the socket goes to an event loop;
// each pipeline's sets or gets are written by Request (the same requests
// as Set and Get) and every reply parsed in full by Reply.
func (s *session) Events(name string, p target.PipelinePlan) (evloop.Conn, error) {
	fd, err := targetkit.TakeDetached("memcached: "+name, s.c.Take)
	if err != nil {
		return evloop.Conn{}, err
	}
	s.fd = fd
	return evloop.Conn{Fd: fd, Name: "memcached " + name, Session: &events{p: p}}, nil
}

// events is a session's protocol on an event loop: one operation is one
// pipeline, done when its last reply has been parsed.
type events struct {
	p    target.PipelinePlan
	keys [][]byte
	i    int // the next reply's request
}

func (e *events) Request(w []byte, seq int64) ([]byte, error) {
	e.keys, e.i = e.p.Keys(seq), 0
	for _, k := range e.keys {
		if err := checkKey(k); err != nil {
			return w, err
		}
		if e.p.Set {
			w = append(w, "set "...)
			w = append(w, k...)
			w = append(w, " 0 0 "...)
			w = strconv.AppendInt(w, int64(len(e.p.Value)), 10)
			w = append(w, '\r', '\n')
			w = append(w, e.p.Value...)
			w = append(w, '\r', '\n')
		} else {
			w = append(w, "get "...)
			w = append(w, k...)
			w = append(w, '\r', '\n')
		}
	}
	return w, nil
}

// maxLine bounds a reply line: a peer that sends more without a line end
// is not speaking the text protocol (and would grow the buffer for ever).
const maxLine = 64 << 10

// line returns the CRLF-terminated line at the start of in without its
// CRLF, and its length with it (0: not all here yet).
func line(in []byte) ([]byte, int, error) {
	eol := bytes.IndexByte(in, '\n')
	if eol < 0 {
		if len(in) > maxLine {
			return nil, 0, fmt.Errorf("a reply line of more than %d bytes", maxLine)
		}
		return nil, 0, nil
	}
	if eol < 1 || in[eol-1] != '\r' {
		return nil, 0, fmt.Errorf("malformed reply %q", in[:eol+1])
	}
	return in[:eol-1], eol + 1, nil
}

func (e *events) Reply(in, _ []byte) (int, []byte, bool, error) {
	n := 0
	for e.i < len(e.keys) {
		key := e.keys[e.i]
		l, k, err := line(in[n:])
		if err != nil {
			return n, nil, false, fmt.Errorf("memcached: %q: %w", key, err)
		}
		if k == 0 {
			return n, nil, false, nil // the rest is yet to come
		}
		if e.p.Set {
			if !bytes.Equal(l, stored) {
				return n, nil, false, fmt.Errorf("memcached: set %q answered %q", key, l)
			}
			n += k
			e.i++
			continue
		}
		if bytes.Equal(l, end) {
			n += k
			if err := e.p.Got(e.i, nil); err != nil {
				return n, nil, false, err
			}
			e.i++
			continue
		}
		// "VALUE key flags bytes", the data and its CRLF, "END": taken
		// only once all of it is here.
		rest, ok := bytes.CutPrefix(l, []byte("VALUE "))
		if !ok {
			return n, nil, false, fmt.Errorf("memcached: get %q answered %q", key, l)
		}
		rk, rest, _ := bytes.Cut(rest, []byte{' '})
		_, size, _ := bytes.Cut(rest, []byte{' '})
		if sp := bytes.IndexByte(size, ' '); sp >= 0 {
			size = size[:sp]
		}
		sz, err := strconv.Atoi(string(size))
		if err != nil || sz < 0 || !bytes.Equal(rk, key) {
			return n, nil, false, fmt.Errorf("memcached: get %q answered %q", key, l)
		}
		data := n + k
		tail := data + sz + 2
		if len(in) < tail+len(end)+2 {
			return n, nil, false, nil
		}
		if in[tail-2] != '\r' || in[tail-1] != '\n' {
			return n, nil, false, fmt.Errorf("memcached: get %q: value of %d bytes not followed by CRLF", key, sz)
		}
		if l, k2, _ := line(in[tail:]); k2 == 0 || !bytes.Equal(l, end) {
			return n, nil, false, fmt.Errorf("memcached: get %q: %q after the value, want END", key, in[tail:min(len(in), tail+32)])
		}
		n = tail + len(end) + 2
		if err := e.p.Got(e.i, in[data:tail-2:tail-2]); err != nil {
			return n, nil, false, err
		}
		e.i++
	}
	return n, nil, true, nil
}
