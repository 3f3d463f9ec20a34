package oltp

import (
	"errors"
	"fmt"
	"time"

	"storebench/internal/evloop"
	"storebench/internal/workload"
)

// Evented is the optional ability of a Conn whose socket and protocol an
// event loop can drive (package evloop): one goroutine then owns many
// connections and reads only the readable ones, as sysbench's client
// library waits on its socket, instead of a goroutine per connection
// paying a park and a wake-up on every statement's round trip. The
// transaction stays the workload's (plan, checks, counters, retries: the
// same code as over Conn); the target only writes statements and parses
// their replies (Wire).
type Evented interface {
	// Events says whether this connection can be handed to an event loop
	// now (a plain socket whose protocol the target speaks itself).
	Events() bool
	// Detach hands the connection's socket to an event loop: its
	// descriptor (non-blocking, out of the Go runtime's netpoller) and
	// its protocol. After Detach only the Wire is used; Close still
	// closes the connection.
	Detach() (fd int, w Wire, err error)
}

// Wire is a connection's protocol as an event loop drives it, one
// statement at a time.
type Wire interface {
	// Append appends statement s's request to w (TxBegin, TxCommit and
	// TxRollback included).
	Append(w []byte, s *Stmt) []byte
	// Reply consumes the reply bytes of s in, calling row for each row as
	// Conn.Select does (a c, or a SUM); n is how many bytes it consumed
	// (whole messages: 0 when it needs more). done says s's reply is
	// complete (all of it consumed), and stmtErr is then what the server
	// answered, classified as Conn's errors are (ErrIgnorable); err is a
	// reply the protocol does not allow (the run fails).
	Reply(in []byte, s *Stmt, row func(c []byte, sum int64, null bool)) (n int, done bool, stmtErr, err error)
	// Closed says why the server closed the connection, from what Reply
	// parsed so far (an error it sent before hanging up), or nil.
	Closed() error
}

// session drives one connection's transactions from an event loop: an
// operation is a transaction, BEGIN's request its first, COMMIT's reply
// its last; each reply is checked by tx as on the synchronous path, and
// an ignorable error sends ROLLBACK and then the transaction again
// (attempt+1), inside the same operation.
type session struct {
	t       *tx
	w       Wire
	name    string
	seq     int64
	attempt int
	i       int // the statement in flight; -1: the ROLLBACK
	start   time.Time
}

var rollback = Stmt{Kind: TxRollback}

func (s *session) Request(w []byte, seq int64) ([]byte, error) {
	s.seq, s.attempt, s.i = seq, 0, 0
	s.start = time.Now()
	s.t.plan(seq, 0)
	st := &s.t.stmts[0]
	s.t.start(st)
	return s.w.Append(w, st), nil
}

func (s *session) Reply(in, w []byte) (int, []byte, bool, error) {
	st := &rollback
	if s.i >= 0 {
		st = &s.t.stmts[s.i]
	}
	n, done, serr, err := s.w.Reply(in, st, s.t.row)
	if err != nil {
		return n, nil, false, fmt.Errorf("oltp: %s: %w", s.name, err)
	}
	if !done {
		return n, nil, false, nil
	}
	if serr == nil {
		serr = s.t.end(st)
	}
	if serr != nil {
		switch {
		case s.i < 0:
			return n, nil, false, fmt.Errorf("oltp: %s: rollback after an ignored error: %w", s.name, serr)
		case errors.Is(serr, ErrIgnorable) && s.attempt < maxRetries:
			s.t.n.errors.Add(1)
			s.i = -1
			s.t.start(&rollback)
			return n, s.w.Append(w, &rollback), false, nil
		case errors.Is(serr, ErrLost):
			// The event loop does not reconnect (client: goroutines
			// does, as sysbench): a lost connection fails the run.
			return n, nil, false, fmt.Errorf("oltp: %s: %w (the event client does not reconnect; client: goroutines does)", s.name, serr)
		}
		var ve *workload.VerifyError
		if errors.As(serr, &ve) {
			return n, nil, false, serr
		}
		return n, nil, false, fmt.Errorf("oltp: %s: %w", s.name, serr)
	}
	if s.i < 0 {
		s.attempt++
		s.t.plan(s.seq, s.attempt)
		s.i = 0
	} else {
		s.i++
	}
	if s.i == len(s.t.stmts) {
		s.t.n.events.Add(1)
		s.t.n.busy.Add(int64(time.Since(s.start)))
		return n, nil, true, nil
	}
	st = &s.t.stmts[s.i]
	s.t.start(st)
	return n, s.w.Append(w, st), false, nil
}

// Closed implements evloop.Closer.
func (s *session) Closed() error { return s.w.Closed() }

// eventConns hands every connection to an event loop when the client is
// "events" and every connection can be (none otherwise: nil).
func (r *run) eventConns(conns []Conn, phase string, cs []counters) ([]evloop.Conn, error) {
	if r.p.Client != "events" || !evloop.Supported {
		return nil, nil
	}
	for _, c := range conns {
		if e, ok := c.(Evented); !ok || !e.Events() {
			return nil, nil
		}
	}
	out := make([]evloop.Conn, len(conns))
	for i, c := range conns {
		fd, w, err := c.(Evented).Detach()
		if err != nil {
			return nil, fmt.Errorf("oltp: connection %d: %w", i+1, err)
		}
		name := fmt.Sprintf("connection %d", i+1)
		out[i] = evloop.Conn{Fd: fd, Name: name, Session: &session{t: newTx(r, phase, &cs[i]), w: w, name: name}}
	}
	return out, nil
}
