package ycsb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"storebench/internal/evloop"
	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/workload"
)

// The event-loop client (client: events, the default): where the target
// can hand connections of its own to an event loop (package evloop) —
// Redis through target.EventedRecords (one HMGET or HSET per operation),
// memcached through the same (a get, a set, or a gets then a cas for an
// update: target.RecordSteps), PostgreSQL and MariaDB through their lean
// SQL sessions
// (target.EventedSQLSession: the statements prepared on each) — the
// step's operations are driven from one goroutine per loop, one
// operation in flight per connection and no pipelining across
// operations (YCSB's semantics). Each operation is planned, written and
// checked by the same mix as on the goroutine client: every read's field
// count, names and values regenerated from the key. Scans, open loops,
// TLS, clusters and targets without the ability keep a goroutine per
// connection; the step's event_loops metric says which ran (0:
// goroutines).

// recConn is one connection's protocol on a loop: a record read, an
// insert, an update of the fields that are not nil; reply consumes the
// reply of the request in flight, calling got with the record's fields
// for a read that found it (not at all when it is missing), and returns
// the server's answer as opErr (a missing record on update included).
// An operation of several round trips (memcached's update) returns its
// next request, appended to w, until it is done.
type recConn interface {
	appendRead(w, key []byte) []byte
	appendInsert(w, key []byte, fields [][]byte) []byte
	appendUpdate(w, key []byte, fields [][]byte) []byte
	reply(in, w []byte, got func([][]byte) error) (n int, next []byte, done bool, opErr, err error)
	closed() error
	close() error
}

// driven makes load drive the step from event loops when the client is
// "events", ok allows it (no scan, closed loop) and the target can; it
// returns the number of loops (0: the goroutine client runs) and what
// closes the connections.
func (r *run) driven(ctx context.Context, env *workload.Env, load *workload.Load, ws []wstate, m *mix, ok bool) (int, func(), error) {
	none := func() {}
	if !ok || r.p.Client != "events" || !evloop.Supported {
		return 0, none, nil
	}
	conns, err := r.openConns(ctx, env.Target)
	if err != nil || conns == nil {
		return 0, none, err
	}
	closeAll := func() {
		for _, c := range conns {
			c.close()
		}
	}
	out := make([]evloop.Conn, len(conns))
	for i, c := range conns {
		e := &session{c: c, m: m, w: i, s: &ws[i], phase: r.phase, name: fmt.Sprintf("connection %d", i+1)}
		e.gotFn = e.got
		out[i] = evloop.Conn{Fd: -1, Name: e.name, Session: e}
		if fc, ok := c.(interface{ fd() int }); ok {
			out[i].Fd = fc.fd()
		}
	}
	var loops int
	*load, loops = load.OnLoops(r.p.Loops, out)
	return loops, closeAll, nil
}

// openConns opens a connection per load goroutine on which an event loop
// can run the step, or none (nil) when the target cannot.
func (r *run) openConns(ctx context.Context, t any) ([]recConn, error) {
	var open func(ctx context.Context) (recConn, error)
	switch h := t.(type) {
	case target.EventedRecords:
		if !h.RecordEvents() {
			return nil, nil
		}
		open = func(ctx context.Context) (recConn, error) {
			fd, w, err := h.OpenRecordConn(ctx, r.p.Fields)
			if err != nil {
				return nil, err
			}
			return &recordConn{fdn: fd, w: w}, nil
		}
	case target.SQLSessioner:
		if r.p.Fields > 64 {
			return nil, nil // an UPDATE prepared per field: a few only
		}
		open = func(ctx context.Context) (recConn, error) { return openSQLConn(ctx, h, r.p.Fields) }
	default:
		return nil, nil
	}
	conns := make([]recConn, 0, r.goroutines)
	for range r.goroutines {
		c, err := open(ctx)
		if c == nil || err != nil {
			for _, c := range conns {
				c.close()
			}
			if err != nil {
				return nil, fmt.Errorf("ycsb: connection %d for the event loop: %w", len(conns)+1, err)
			}
			return nil, nil
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// session is one connection's operations on an event loop: each planned
// by the mix, an RMW's update sent once its read is checked.
type session struct {
	c       recConn
	m       *mix
	w       int
	s       *wstate
	phase   string
	name    string
	seq     int64
	op      int
	reading bool // the request in flight is the read
	seen    bool // the read found the record
	gotFn   func([][]byte) error
}

func (e *session) got(fields [][]byte) error {
	e.seen = true
	return e.m.check(e.w, e.s, fields)
}

func (e *session) Request(w []byte, seq int64) ([]byte, error) {
	e.seq, e.seen, e.reading = seq, false, false
	e.op = e.m.plan(e.w, e.s, seq)
	switch e.op {
	case opInsert:
		return e.c.appendInsert(w, e.s.key, e.m.insert(e.s)), nil
	case opUpdate:
		return e.c.appendUpdate(w, e.s.key, e.m.update(e.s, seq)), nil
	case opRead, opRMW:
		e.reading = true
		return e.c.appendRead(w, e.s.key), nil
	}
	return nil, fmt.Errorf("ycsb: %s: operation class %d has no event-loop request", e.name, e.op)
}

func (e *session) Reply(in, w []byte) (int, []byte, bool, error) {
	n, next, done, opErr, err := e.c.reply(in, w, e.gotFn)
	if err != nil {
		return n, nil, false, fmt.Errorf("ycsb: %s: %w", e.name, err)
	}
	if next != nil {
		return n, next, false, nil
	}
	if !done {
		return n, nil, false, nil
	}
	if opErr != nil {
		var ve *workload.VerifyError
		if errors.As(opErr, &ve) {
			return n, nil, false, opErr
		}
		return n, nil, false, fmt.Errorf("ycsb: %s: %w", e.name, opErr)
	}
	if e.reading {
		if !e.seen {
			return n, nil, false, &workload.VerifyError{Phase: e.phase, Key: e.s.key, What: "record is missing"}
		}
		if e.op == opRMW {
			e.reading = false
			return n, e.c.appendUpdate(w, e.s.key, e.m.update(e.s, e.seq)), false, nil
		}
		return n, nil, true, nil
	}
	if e.op == opInsert {
		e.s.inserted++
	}
	return n, nil, true, nil
}

// Closed implements evloop.Closer.
func (e *session) Closed() error { return e.c.closed() }

// recordConn is a target's record connection (target.RecordWire).
type recordConn struct {
	fdn int
	w   target.RecordWire
}

func (c *recordConn) fd() int                                     { return c.fdn }
func (c *recordConn) appendRead(w, key []byte) []byte             { return c.w.AppendRead(w, key) }
func (c *recordConn) appendInsert(w, k []byte, f [][]byte) []byte { return c.w.AppendWrite(w, k, f) }
func (c *recordConn) appendUpdate(w, k []byte, f [][]byte) []byte { return c.w.AppendWrite(w, k, f) }
func (c *recordConn) closed() error                               { return nil }
func (c *recordConn) close() error                                { return evloop.Close(c.fdn) }

func (c *recordConn) reply(in, w []byte, got func([][]byte) error) (int, []byte, bool, error, error) {
	n, done, fields, opErr, err := c.w.Reply(in)
	if done && opErr == nil && err == nil && fields != nil {
		opErr = got(fields)
	}
	if !done && err == nil && opErr == nil {
		if st, ok := c.w.(target.RecordSteps); ok {
			if next := st.Next(w); next != nil {
				return n, next, false, nil, nil
			}
		}
	}
	return n, nil, done, opErr, err
}

// sqlConn is a lean SQL session on a loop: the layout's read and insert,
// and an UPDATE of one field per field, prepared on it.
type sqlConn struct {
	sess         target.SQLSession
	fdn          int
	w            target.SQLWire
	read, insert int
	updates      []int
	args         []target.SQLArg
	update       bool // the request in flight is an UPDATE
	key          []byte
	got          func([][]byte) error
	rowFn        func([][]byte) error
}

func openSQLConn(ctx context.Context, t target.SQLSessioner, n int) (recConn, error) {
	sess, err := t.OpenSQLSession(ctx)
	if err != nil {
		return nil, err
	}
	ev, ok := sess.(target.EventedSQLSession)
	if !ok || !ev.Events() {
		sess.Close()
		return nil, nil
	}
	d := t.SQLDialect()
	q := newSQLStmts(d, n)
	c := &sqlConn{sess: sess, updates: make([]int, n), args: make([]target.SQLArg, 0, n+1)}
	fail := func(err error) (recConn, error) {
		sess.Close()
		return nil, err
	}
	if c.read, err = sess.Prepare(ctx, q.read); err != nil {
		return fail(err)
	}
	if c.insert, err = sess.Prepare(ctx, q.insert); err != nil {
		return fail(err)
	}
	var cache sync.Map
	one := make([][]byte, n)
	for i := range n {
		clear(one)
		one[i] = []byte{}
		stmt, _ := partialUpdate(&cache, "usertable", "ycsb_key", d.Param, nil, one)
		if c.updates[i], err = sess.Prepare(ctx, stmt); err != nil {
			return fail(err)
		}
	}
	if c.fdn, c.w, err = ev.Detach(); err != nil {
		return fail(err)
	}
	c.rowFn = func(cols [][]byte) error { return c.got(cols) }
	return c, nil
}

func (c *sqlConn) fd() int { return c.fdn }

func (c *sqlConn) appendRead(w, key []byte) []byte {
	c.update, c.key = false, key
	c.args = append(c.args[:0], target.SQLBytes(key))
	return c.w.AppendRun(w, c.read, c.args)
}

func (c *sqlConn) appendInsert(w, key []byte, fields [][]byte) []byte {
	c.update, c.key = false, key
	c.args = append(c.args[:0], target.SQLBytes(key))
	for _, f := range fields {
		if f == nil {
			f = []byte{} // a nil slice would be NULL
		}
		c.args = append(c.args, target.SQLBytes(f))
	}
	return c.w.AppendRun(w, c.insert, c.args)
}

// appendUpdate writes the first field that is not nil (the workload
// updates one).
func (c *sqlConn) appendUpdate(w, key []byte, fields [][]byte) []byte {
	c.update, c.key = true, key
	for i, f := range fields {
		if f != nil {
			c.args = append(c.args[:0], target.SQLBytes(f), target.SQLBytes(key))
			return c.w.AppendRun(w, c.updates[i], c.args)
		}
	}
	panic("ycsb: an update of no field")
}

func (c *sqlConn) reply(in, _ []byte, got func([][]byte) error) (int, []byte, bool, error, error) {
	c.got = got
	n, done, stmtErr, err := c.w.Reply(in, c.rowFn)
	if done && stmtErr == nil && err == nil && c.update && c.w.Affected() == 0 {
		stmtErr = fmt.Errorf("record %q: %w", c.key, kv.ErrNotFound)
	}
	return n, nil, done, stmtErr, err
}

func (c *sqlConn) closed() error { return c.w.Closed() }
func (c *sqlConn) close() error  { return c.sess.Close() }
