package redis

import (
	"context"
	"fmt"

	"storebench/internal/evloop"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/target/redis/resp"
)

// The setget workload (redis-benchmark shaped): a connection of its own
// per load goroutine, or per event loop slot (target.EventedSession).

// NewSession implements target.Pipeliner: a connection of its own,
// through the allocation-free RESP2 client, for redis-benchmark-shaped
// SET/GET pipelines.
func (s *Store) NewSession(ctx context.Context) (target.Session, error) {
	if s.opt.Username != "" && s.opt.Username != "default" {
		return nil, fmt.Errorf("redis: setget sessions authenticate the default user only, not %q", s.opt.Username)
	}
	c, err := resp.Dial(ctx, s.opt.Addr, s.opt.DB, s.opt.Password, openTimeout)
	if err != nil {
		return nil, fmt.Errorf("redis: setget session to %s: %w", s.opt.Addr, err)
	}
	return &session{Conn: c, fd: -1}, nil
}

// session is a setget connection: the RESP client's, until Events hands
// its socket to an event loop (fd).
type session struct {
	*resp.Conn
	fd int
}

// Events implements target.EventedSession: the socket (already authenticated
// and on its database) goes to an event loop; each pipeline's SETs or
// GETs are written by Request and every reply parsed by Reply.
func (s *session) Events(name string, p target.PipelinePlan) (evloop.Conn, error) {
	fd, err := targetkit.TakeDetached("redis: "+name, s.Conn.Take)
	if err != nil {
		return evloop.Conn{}, err
	}
	s.fd = fd
	return evloop.Conn{Fd: fd, Name: "redis " + name, Session: &events{p: p}}, nil
}

// Close implements target.Session.
func (s *session) Close() error {
	if s.fd >= 0 {
		return evloop.Close(s.fd)
	}
	return s.Conn.Close()
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
		if e.p.Set {
			w = resp.AppendSet(w, k, e.p.Value)
		} else {
			w = resp.AppendGet(w, k)
		}
	}
	return w, nil
}

func (e *events) Reply(in, _ []byte) (int, []byte, bool, error) {
	n := 0
	for e.i < len(e.keys) {
		kind, v, k, err := resp.Next(in[n:])
		if err != nil {
			return n, nil, false, fmt.Errorf("redis: %s %q: %w", e.cmd(), e.keys[e.i], err)
		}
		if k == 0 {
			return n, nil, false, nil // the rest is yet to come
		}
		n += k
		switch {
		case kind == '-':
			return n, nil, false, fmt.Errorf("redis: %s %q: %w: %s", e.cmd(), e.keys[e.i], resp.ErrServer, v)
		case e.p.Set:
			if kind != '+' || string(v) != "OK" {
				return n, nil, false, fmt.Errorf("redis: SET %q answered %c%q", e.keys[e.i], kind, v)
			}
		case kind != '$':
			return n, nil, false, fmt.Errorf("redis: GET %q answered %c%q", e.keys[e.i], kind, v)
		default:
			if err := e.p.Got(e.i, v); err != nil {
				return n, nil, false, err
			}
		}
		e.i++
	}
	return n, nil, true, nil
}

func (e *events) cmd() string {
	if e.p.Set {
		return "SET"
	}
	return "GET"
}
