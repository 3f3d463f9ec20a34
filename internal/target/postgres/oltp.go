package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"golang.org/x/sys/unix"

	"storebench/internal/evloop"
	"storebench/internal/redact"
	"storebench/internal/target/detach"
	"storebench/internal/workload/oltp"
)

// The oltp workload (sysbench oltp_read_only / oltp_write_only): sysbench's
// own PostgreSQL schema, sbtest<N>(id SERIAL, k INTEGER DEFAULT '0' NOT
// NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL,
// PRIMARY KEY (id)), index k_<N> on k after the load (COPY in batches);
// every statement, BEGIN and COMMIT included, prepared on the
// connection's own session and executed through pgconn (integers binary,
// CHARs as text, results binary).

// CreateTables implements oltp.Store.
func (s *Store) CreateTables(ctx context.Context, tables int) error {
	for t := 1; t <= tables; t++ {
		for _, q := range []string{
			fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t),
			fmt.Sprintf("CREATE TABLE sbtest%d(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n)", t),
		} {
			if _, err := s.pool.Exec(ctx, q); err != nil {
				return fmt.Errorf("postgres: %s: %w", strings.SplitN(q, "(", 2)[0], err)
			}
		}
	}
	return nil
}

// InsertRows implements oltp.Store: one COPY of the batch.
func (s *Store) InsertRows(ctx context.Context, table int, rows []oltp.Row) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{fmt.Sprintf("sbtest%d", table)}, []string{"id", "k", "c", "pad"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			return []any{int32(r.ID), int32(r.K), string(r.C), string(r.Pad)}, nil
		}))
	if err != nil {
		return fmt.Errorf("postgres: copying into sbtest%d: %w", table, err)
	}
	// The rows carry their ids: move the SERIAL past them, as sysbench's
	// own inserts through it would have.
	_, err = s.pool.Exec(ctx, fmt.Sprintf("SELECT setval(pg_get_serial_sequence('sbtest%d', 'id'), GREATEST(nextval(pg_get_serial_sequence('sbtest%d', 'id')), $1))", table, table), rows[len(rows)-1].ID)
	return err
}

// CreateIndex implements oltp.Store.
func (s *Store) CreateIndex(ctx context.Context, table int) error {
	_, err := s.pool.Exec(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", table, table))
	return err
}

// OpenConn implements oltp.Store.
func (s *Store) OpenConn(ctx context.Context, tables int, _ bool) (oltp.Conn, error) {
	c := &oltpConn{cfg: s.connCfg, tables: tables, fd: -1}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type oltpConn struct {
	cfg    *pgx.ConnConfig
	tables int
	conn   *pgx.Conn
	// lean is conn's socket taken over once the statements are prepared
	// (see leanConn; conn is then nil), on a plain TCP connection.
	lean *leanConn
	// fd is the socket handed to an event loop (Detach; lean is then
	// nil), or -1.
	fd int
	// watch follows the run's context once (see package detach): pgconn
	// would register and remove a context.AfterFunc and make a channel on
	// every statement.
	watch  detach.Watch
	names  [][oltp.NumKinds]string
	ints   [3][4]byte
	params [][]byte
}

var (
	fmtBinary        = []int16{1}
	fmtInt2          = []int16{1, 1}
	fmtTextInt       = []int16{0, 1}
	fmtInsert        = []int16{1, 1, 0, 0}
	oltpResultBinary = []int16{1}
)

func (c *oltpConn) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.cfg.Copy())
	if err != nil {
		return classify(fmt.Errorf("postgres: oltp connection: %s", redact.Scrub(c.cfg.ConnString(), err.Error())), err)
	}
	c.conn = conn
	pc := conn.PgConn()
	c.watch.Interrupt = func() { pc.Conn().SetDeadline(interrupted) }
	for _, q := range []string{"BEGIN", "COMMIT"} {
		if _, err := pc.Prepare(ctx, strings.ToLower(q), q, nil); err != nil {
			c.Close()
			return classify(fmt.Errorf("postgres: preparing %s: %w", q, err), err)
		}
	}
	c.names = make([][oltp.NumKinds]string, c.tables)
	for t := range c.names {
		for k := oltp.Kind(0); k < oltp.NumKinds; k++ {
			q := oltp.Statement(k, t+1)
			for i := 1; strings.Contains(q, "?"); i++ {
				q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
			}
			name := fmt.Sprintf("sb%d_%d", k, t+1)
			if _, err := pc.Prepare(ctx, name, q, nil); err != nil {
				c.Close()
				return classify(fmt.Errorf("postgres: preparing %s: %w", q, err), err)
			}
			c.names[t][k] = name
		}
	}
	l, ok, err := takeOver(pc)
	if err != nil {
		c.Close()
		return oltp.Lost(err)
	}
	if ok {
		c.lean, c.conn = l, nil
	}
	return nil
}

func (c *oltpConn) int4(i int, v int64) []byte {
	binary.BigEndian.PutUint32(c.ints[i][:], uint32(int32(v)))
	return c.ints[i][:]
}

func (c *oltpConn) run(ctx context.Context, name string, formats []int16, row func([][]byte)) (int64, error) {
	if c.lean != nil {
		n, err := c.lean.exec(ctx, name, c.params, formats, row)
		if err != nil {
			return 0, interruptedOr(ctx, err)
		}
		return n, nil
	}
	if err := c.watch.Check(ctx); err != nil {
		return 0, err
	}
	rr := c.conn.PgConn().ExecPrepared(context.Background(), name, c.params, formats, oltpResultBinary)
	for rr.NextRow() {
		if row != nil {
			row(rr.Values())
		}
	}
	tag, err := rr.Close()
	if err != nil {
		return 0, interruptedOr(ctx, err)
	}
	return tag.RowsAffected(), nil
}

// interrupted is the deadline that stops a detached connection's
// statement when the run's context ends.
var interrupted = time.Unix(1, 0)

// interruptedOr is the error of a detached statement: ctx's once it ended
// (the interruption's timeout is no lost connection), else classified.
func interruptedOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("postgres: %w (%v)", cerr, err)
	}
	return classify(err, err)
}

func (c *oltpConn) Begin(ctx context.Context) error {
	c.params = c.params[:0]
	_, err := c.run(ctx, "begin", nil, nil)
	return err
}

func (c *oltpConn) Commit(ctx context.Context) error {
	c.params = c.params[:0]
	_, err := c.run(ctx, "commit", nil, nil)
	return err
}

func (c *oltpConn) Rollback(ctx context.Context) error {
	if c.lean != nil {
		if err := c.lean.simple(ctx, "ROLLBACK"); err != nil {
			return interruptedOr(ctx, err)
		}
		return nil
	}
	if err := c.watch.Check(ctx); err != nil {
		return err
	}
	_, err := c.conn.PgConn().Exec(context.Background(), "ROLLBACK").ReadAll()
	if err != nil {
		return interruptedOr(ctx, err)
	}
	return nil
}

func (c *oltpConn) Select(ctx context.Context, k oltp.Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	name, formats := c.bind(k, table, lo, hi, nil)
	var bad error
	_, err := c.run(ctx, name, formats, func(vals [][]byte) {
		if bad == nil {
			bad = deliver(k, vals, row)
		}
	})
	if err == nil {
		err = bad
	}
	return err
}

// bind sets c.params for statement k on table (a select's ids lo and hi,
// or a write's a) and returns its prepared name and parameter formats.
func (c *oltpConn) bind(k oltp.Kind, table int, lo, hi int64, a *oltp.Args) (string, []int16) {
	var formats []int16
	switch k {
	case oltp.PointSelect:
		c.params = append(c.params[:0], c.int4(0, lo))
		formats = fmtBinary
	case oltp.SimpleRange, oltp.SumRange, oltp.OrderRange, oltp.DistinctRange:
		c.params = append(c.params[:0], c.int4(0, lo), c.int4(1, hi))
		formats = fmtInt2
	case oltp.NonIndexUpdate:
		c.params = append(c.params[:0], a.C, c.int4(0, a.ID))
		formats = fmtTextInt
	case oltp.Insert:
		c.params = append(c.params[:0], c.int4(0, a.ID), c.int4(1, a.K), a.C, a.Pad)
		formats = fmtInsert
	default:
		c.params = append(c.params[:0], c.int4(0, a.ID))
		formats = fmtBinary
	}
	return c.names[table-1][k], formats
}

// deliver hands a select's row to row: c, or SUM(k) (a bigint, or NULL).
func deliver(k oltp.Kind, vals [][]byte, row func([]byte, int64, bool)) error {
	if len(vals) != 1 {
		return fmt.Errorf("postgres: %s returned %d columns, want 1", oltp.Statements[k], len(vals))
	}
	v := vals[0]
	if k != oltp.SumRange {
		row(v, 0, false)
		return nil
	}
	switch {
	case v == nil:
		row(nil, 0, true)
	case len(v) == 8: // SUM(integer) is a bigint
		row(nil, int64(binary.BigEndian.Uint64(v)), false)
	default:
		return fmt.Errorf("postgres: SUM(k) came back in %d bytes, want a bigint", len(v))
	}
	return nil
}

func (c *oltpConn) Exec(ctx context.Context, k oltp.Kind, table int, a *oltp.Args) (int64, error) {
	name, formats := c.bind(k, table, 0, 0, a)
	return c.run(ctx, name, formats, nil)
}

// Events implements oltp.Evented: on our own lean path (a plain TCP
// socket) an event loop can drive the connection.
func (c *oltpConn) Events() bool { return c.lean != nil }

// Detach implements oltp.Evented: the socket goes to an event loop, each
// statement's Bind/Execute/Sync (Query for ROLLBACK) written by the
// Wire's Append and its replies parsed in full by its Reply.
func (c *oltpConn) Detach() (int, oltp.Wire, error) {
	if c.lean == nil {
		return -1, nil, fmt.Errorf("postgres: an oltp connection not on a plain socket cannot go to an event loop")
	}
	nc, err := c.lean.c.Take()
	if err != nil {
		return -1, nil, err
	}
	c.lean.watch.Stop()
	c.lean = nil
	fd, err := evloop.Detach(nc)
	if err != nil {
		return -1, nil, fmt.Errorf("postgres: %w", err)
	}
	c.fd = fd
	return fd, &oltpWire{c: c}, nil
}

// oltpWire is an oltpConn driven by an event loop (oltp.Wire).
type oltpWire struct {
	c    *oltpConn
	qerr error // the server's ErrorResponse to the statement in flight
	bad  error // a row that could not be taken
	vals [][]byte
}

func (w *oltpWire) Append(b []byte, s *oltp.Stmt) []byte {
	w.qerr, w.bad = nil, nil
	switch s.Kind {
	case oltp.TxBegin:
		return appendExec(b, "begin", nil, nil)
	case oltp.TxCommit:
		return appendExec(b, "commit", nil, nil)
	case oltp.TxRollback:
		return appendQuery(b, "ROLLBACK")
	}
	name, formats := w.c.bind(s.Kind, s.Table, s.Lo, s.Hi, &s.Args)
	return appendExec(b, name, w.c.params, formats)
}

func (w *oltpWire) Reply(in []byte, s *oltp.Stmt, row func([]byte, int64, bool)) (int, bool, error, error) {
	n := 0
	for {
		typ, body, k, err := nextMessage(in[n:])
		if err != nil {
			return n, false, nil, err
		}
		if k == 0 {
			break // the rest of this message is yet to come
		}
		n += k
		switch typ {
		case 'D':
			if w.qerr == nil && w.bad == nil {
				var err error
				if w.vals, err = splitRow(w.vals[:0], body); err != nil {
					w.bad = err
				} else {
					w.bad = deliver(s.Kind, w.vals, row)
				}
			}
		case 'E':
			w.qerr = pgError(body)
		case 'Z':
			if w.qerr != nil {
				return n, true, classify(w.qerr, w.qerr), nil
			}
			return n, true, w.bad, nil
		case '2', '1', 'C', 'N', 'S', 'A', 'n', 'I':
			// BindComplete, ParseComplete, CommandComplete, a notice, a
			// parameter's new value, a notification, NoData, an empty
			// query.
		default:
			return n, false, nil, fmt.Errorf("postgres: unexpected message %q in the reply to %s", typ, s.Text())
		}
	}
	return n, false, nil, nil
}

// Closed implements oltp.Wire: the error the server sent before it
// closed the connection (FATAL: terminating connection…), if any.
func (w *oltpWire) Closed() error { return w.qerr }

func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *oltpConn) Close() error {
	if c.fd >= 0 {
		// Terminate, best effort, then close.
		_, _ = unix.Write(c.fd, []byte{'X', 0, 0, 0, 4})
		err := evloop.Close(c.fd)
		c.fd = -1
		return err
	}
	if c.lean != nil {
		err := c.lean.close()
		c.lean = nil
		return err
	}
	c.watch.Stop()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close(context.Background())
	c.conn = nil
	return err
}

// classify marks what sysbench's PostgreSQL driver ignores and retries
// (deadlock 40P01, serialization failure 40001, and the unique violation
// 23505 two concurrent delete+inserts of one id meet under READ
// COMMITTED) and a lost connection; out is the error to return, cause
// the driver's.
func classify(out, cause error) error {
	if cause == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(cause, &pe) {
		switch pe.Code {
		case "40P01", "40001", "23505":
			return oltp.Ignorable(out)
		case "57P01", "57P02", "57P03": // admin shutdown, crash shutdown, cannot connect now
			return oltp.Lost(out)
		}
		return out
	}
	var ne net.Error
	if errors.As(cause, &ne) || pgconn.SafeToRetry(cause) || strings.Contains(cause.Error(), "conn closed") {
		return oltp.Lost(out)
	}
	return out
}
