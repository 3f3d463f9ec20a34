package oltp

import (
	"bytes"
	"context"
	"fmt"

	"storebench/internal/workload"
	"storebench/internal/workload/gen"
)

// Transaction control beside the Kinds: statements of a planned
// transaction that are no table's (a target prepares only the Kinds
// below NumKinds per table).
const (
	TxBegin Kind = NumKinds + iota
	TxCommit
	// TxRollback ends a transaction an ignorable error broke; never
	// planned, sent by the retry.
	TxRollback
)

// Stmt is one statement of a planned transaction: its kind, its table
// (1-based; 0 for transaction control), a select's ids (Lo, and Hi for a
// range) or a write's parameters (Args).
type Stmt struct {
	Kind   Kind
	Table  int
	Lo, Hi int64
	Args   Args
}

// Text is the statement's SQL as errors name it (BEGIN, COMMIT,
// ROLLBACK, or sysbench's statement on its table).
func (s *Stmt) Text() string {
	switch s.Kind {
	case TxBegin:
		return "BEGIN"
	case TxCommit:
		return "COMMIT"
	case TxRollback:
		return "ROLLBACK"
	}
	return Statement(s.Kind, s.Table)
}

// tx is one connection's transactions: each planned in full before its
// first statement runs (every random draw of a transaction is
// independent of the replies), then run statement by statement, each
// reply checked (onRow, then end). Both clients run this one plan and
// these checks: the synchronous one over a Conn (exec) and the event
// loop's over a Wire (session).
type tx struct {
	r     *run
	phase string
	salt  uint64
	write bool
	n     *counters
	stmts []Stmt
	// buf holds the values a write_only transaction writes: the
	// non-index update's c, then the insert's c and pad.
	buf []byte
	// row is onRow, bound once (no closure per statement).
	row func(c []byte, sum int64, null bool)
	// cur is the statement in flight.
	cur *Stmt

	// The reply of the statement in flight (reset by start).
	rows, sum int64
	null      bool
	why       string
	prev      []byte
}

func newTx(r *run, phase string, n *counters) *tx {
	t := &tx{r: r, phase: phase, n: n, write: phase == PhaseWriteOnly, salt: 1,
		stmts: make([]Stmt, 0, 2+pointSelects+4), buf: make([]byte, 2*CLen+PadLen)}
	if t.write {
		t.salt = 2
	}
	t.row = t.onRow
	return t
}

// plan lays out attempt attempt of transaction seq: a pure function of
// the seed, the phase, seq and attempt.
func (t *tx) plan(seq int64, attempt int) {
	r := t.r
	g := rand{s: gen.Mix(r.seed, t.salt, uint64(seq), uint64(attempt))}
	t.stmts = append(t.stmts[:0], Stmt{Kind: TxBegin})
	if t.write {
		// oltp_write_only: an index update, a non-index update (a fresh
		// c), a delete and an insert of the same id (fresh k, c and
		// pad), each on a table of its own choosing. The c values
		// written carry the check of their row like the prepared ones.
		nonce := uint64(seq) + 1
		for _, k := range []Kind{IndexUpdate, NonIndexUpdate, Delete} {
			table := int(g.intn(int64(r.p.Tables)))
			s := Stmt{Kind: k, Table: table, Args: Args{ID: r.dist.id(&g, r.rows)}}
			switch k {
			case NonIndexUpdate:
				s.Args.C = FillC(t.buf[:CLen], r.seed, table, s.Args.ID, nonce)
			case Delete:
				// The insert of the same id, k drawn as sysbench's
				// get_id().
				s.Args.K = r.dist.id(&g, r.rows)
				s.Args.C = FillC(t.buf[CLen:2*CLen], r.seed, table, s.Args.ID, nonce)
				s.Args.Pad = FillPad(t.buf[2*CLen:], r.seed, table, s.Args.ID, nonce)
			}
			t.stmts = append(t.stmts, s)
			if k == Delete {
				s.Kind = Insert
				t.stmts = append(t.stmts, s)
			}
		}
	} else {
		// oltp_read_only: 10 point selects on one table, a simple, a
		// sum, an order and a distinct range (each on a table of its
		// own choosing).
		table := int(g.intn(int64(r.p.Tables)))
		for i := 0; i < pointSelects; i++ {
			t.stmts = append(t.stmts, Stmt{Kind: PointSelect, Table: table, Lo: r.dist.id(&g, r.rows)})
		}
		size := int64(r.p.RangeSize)
		for _, k := range []Kind{SimpleRange, SumRange, OrderRange, DistinctRange} {
			table := int(g.intn(int64(r.p.Tables)))
			lo := r.dist.id(&g, r.rows)
			t.stmts = append(t.stmts, Stmt{Kind: k, Table: table, Lo: lo, Hi: lo + size - 1})
		}
	}
	t.stmts = append(t.stmts, Stmt{Kind: TxCommit})
}

// start readies the checks for the reply of s.
func (t *tx) start(s *Stmt) {
	t.cur = s
	t.rows, t.sum, t.null, t.why, t.prev = 0, 0, false, "", t.prev[:0]
}

// onRow takes one row of the select in flight (cur): its c (valid
// during the call; CHAR padding may remain), or a SUM.
func (t *tx) onRow(v []byte, sum int64, null bool) {
	t.rows++
	switch k := t.cur.Kind; k {
	case PointSelect:
		if t.r.p.Verify == "rows" {
			t.why = CheckC(v, t.r.seed, t.cur.Table, t.cur.Lo)
		} else {
			t.why = WellFormed(v)
		}
	case SumRange:
		t.sum, t.null = sum, null
	default:
		if t.why == "" {
			t.why = WellFormed(v)
		}
		v = trim(v)
		if t.why == "" && t.rows > 1 && (k == OrderRange && bytes.Compare(t.prev, v) > 0 || k == DistinctRange && bytes.Compare(t.prev, v) >= 0) {
			t.why = "rows out of order"
		}
		t.prev = append(t.prev[:0], v...)
	}
}

func (t *tx) fail(table int, id int64, format string, args ...any) error {
	return &workload.VerifyError{Phase: t.phase, Key: fmt.Appendf(nil, "sbtest%d id %d", table, id), What: fmt.Sprintf(format, args...)}
}

// end counts statement s, whose reply came without error, as sysbench
// does (a read, a write, or another), and checks what a select
// returned.
func (t *tx) end(s *Stmt) error {
	n := t.n
	switch s.Kind {
	case TxBegin, TxCommit:
		n.other.Add(1)
		return nil
	case TxRollback:
		return nil
	case IndexUpdate, NonIndexUpdate, Delete, Insert:
		n.writes.Add(1)
		return nil
	}
	n.reads.Add(1)
	lo, hi := s.Lo, s.Hi
	want := min(hi, t.r.rows) - lo + 1
	switch k := s.Kind; {
	case k == PointSelect && t.rows != 1:
		return t.fail(s.Table, lo, "point select returned %d rows, want 1", t.rows)
	case t.why != "" && k == PointSelect:
		return t.fail(s.Table, lo, "%s", t.why)
	case t.why != "":
		return t.fail(s.Table, lo, "%s: %s", Statements[k], t.why)
	case k == SumRange && (t.rows != 1 || t.null || t.sum < want):
		// Every k is at least 1 (sb_rand(1, table_size), and index
		// updates only add to it).
		return t.fail(s.Table, lo, "SUM(k) over ids %d..%d is %d (null %v), want at least %d", lo, hi, t.sum, t.null, want)
	case k == DistinctRange && (t.rows < 1 || t.rows > want):
		return t.fail(s.Table, lo, "DISTINCT range %d..%d returned %d rows, want 1..%d", lo, hi, t.rows, want)
	case (k == SimpleRange || k == OrderRange) && t.rows != want:
		return t.fail(s.Table, lo, "range %d..%d returned %d rows, want %d", lo, hi, t.rows, want)
	}
	n.verified++
	return nil
}

// exec runs the planned transaction over c, statement by statement.
func (t *tx) exec(ctx context.Context, c Conn) error {
	for i := range t.stmts {
		s := &t.stmts[i]
		t.start(s)
		var err error
		switch s.Kind {
		case TxBegin:
			err = c.Begin(ctx)
		case TxCommit:
			err = c.Commit(ctx)
		case IndexUpdate, NonIndexUpdate, Delete, Insert:
			_, err = c.Exec(ctx, s.Kind, s.Table, &s.Args)
		default:
			err = c.Select(ctx, s.Kind, s.Table, s.Lo, s.Hi, t.row)
		}
		if err != nil {
			return err
		}
		if err := t.end(s); err != nil {
			return err
		}
	}
	return nil
}
