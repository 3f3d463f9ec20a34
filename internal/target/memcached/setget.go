package memcached

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"storebench/internal/target/internal/rtconn"
	"storebench/internal/workload/setget"
)

// The setget workload (memcslap/redis-benchmark shaped): a connection of
// its own per load goroutine, speaking the text protocol with no
// allocation per request, requests sent with the read of their replies
// (rtconn). gomemcache allocates an Item per request and reads at once
// after each write.

// NewSession implements setget.Pipeliner.
func (s *Store) NewSession(ctx context.Context) (setget.Session, error) {
	c, err := rtconn.Dial(ctx, s.addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("memcached: setget session to %s: %w", s.addr, err)
	}
	ss := &session{c: c}
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
		return nil, fmt.Errorf("memcached: setget session to %s: %w", s.addr, err)
	}
	c.Ready(ctx)
	return ss, nil
}

type session struct {
	c        *rtconn.Conn
	val, big []byte
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

func (s *session) Close() error { return s.c.Close() }
