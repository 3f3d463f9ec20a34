package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"golang.org/x/sys/unix"

	"storebench/internal/evloop"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/detach"
)

// The SQL sessions (target.SQLSessioner): a connection of the workload's
// own, outside the pool, opened by pgx, on which every statement, BEGIN
// and COMMIT included, is prepared and run with the extended protocol
// (integer parameters binary, strings as text, results as text). On a
// plain TCP socket the connection is then taken over by the lean client
// (lean.go), which an event loop can drive (target.EventedSQLSession);
// over TLS or a Unix socket it stays pgconn's.

// OpenSQLSession implements target.SQLSessioner.
func (s *Store) OpenSQLSession(ctx context.Context) (target.SQLSession, error) {
	c := &session{fd: -1}
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, classify(fmt.Errorf("postgres: session: %s", redact.Scrub(s.connCfg.ConnString(), err.Error())), err)
	}
	c.conn = conn
	pc := conn.PgConn()
	c.watch.Interrupt = func() { pc.Conn().SetDeadline(interrupted) }
	for _, q := range []string{"BEGIN", "COMMIT"} {
		if _, err := pc.Prepare(ctx, strings.ToLower(q), q, nil); err != nil {
			c.Close()
			return nil, classify(fmt.Errorf("postgres: preparing %s: %w", q, err), err)
		}
	}
	l, ok, err := takeOver(pc)
	if err != nil {
		c.Close()
		return nil, errors.Join(target.ErrSQLLost, err)
	}
	if ok {
		c.lean, c.conn = l, nil
	}
	c.onRow = c.deliver
	return c, nil
}

// session is one SQL session: the lean client's, or pgconn's (conn).
type session struct {
	conn *pgx.Conn
	// lean is conn's socket taken over (conn is then nil), on a plain TCP
	// connection.
	lean *leanConn
	// fd is the socket handed to an event loop (Detach; lean is then
	// nil), or -1.
	fd int
	// watch follows the run's context once on pgconn (see package
	// detach): pgconn would register and remove a context.AfterFunc and
	// make a channel on every statement.
	watch  detach.Watch
	stmts  []stmt
	params [][]byte
	enc    []byte // the encoded parameters of the statement in flight
	// row is the caller's row callback of the statement in flight, rerr
	// its first error; onRow (deliver, bound once) calls it.
	row   func([][]byte) error
	rerr  error
	onRow func([][]byte)
}

// stmt is a prepared statement: its name, text, and each parameter's
// type and format (binary for integers and bytea, text for the rest).
type stmt struct {
	name, q string
	oids    []uint32
	formats []int16
	// results are the result columns' formats when one is bytea (binary:
	// its bytes, as SQLDB's Query gives them); nil: every result in text.
	results []int16
}

// textResults asks for every result as text.
const textResults = 0

// interrupted is the deadline that stops a detached connection's
// statement when the run's context ends.
var interrupted = time.Unix(1, 0)

// Prepare implements target.SQLSession.
func (c *session) Prepare(ctx context.Context, q string) (int, error) {
	st := stmt{name: "s" + strconv.Itoa(len(c.stmts)), q: q}
	switch {
	case c.lean != nil:
		oids, err := c.lean.prepare(ctx, st.name, q)
		if err != nil {
			return 0, interruptedOr(ctx, err)
		}
		st.oids = oids
		st.results = byteaResults(c.lean.resultOIDs)
	case c.conn != nil:
		sd, err := c.conn.PgConn().Prepare(ctx, st.name, q, nil)
		if err != nil {
			return 0, classify(fmt.Errorf("postgres: preparing %s: %w", q, err), err)
		}
		st.oids = sd.ParamOIDs
		oids := make([]uint32, len(sd.Fields))
		for i, f := range sd.Fields {
			oids[i] = f.DataTypeOID
		}
		st.results = byteaResults(oids)
	default:
		return 0, errDetached
	}
	st.formats = make([]int16, len(st.oids))
	for i, oid := range st.oids {
		switch oid {
		case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.ByteaOID:
			st.formats[i] = 1
		}
	}
	c.stmts = append(c.stmts, st)
	return len(c.stmts) - 1, nil
}

var errDetached = errors.New("postgres: the session went to an event loop")

// byteaResults are the result formats of columns of types oids: binary
// for bytea, text for the rest; nil when no column is bytea.
func byteaResults(oids []uint32) []int16 {
	var out []int16
	for i, oid := range oids {
		if oid == pgtype.ByteaOID {
			if out == nil {
				out = make([]int16, len(oids))
			}
			out[i] = 1
		}
	}
	return out
}

// bind encodes args as statement h's parameters in c.params.
func (c *session) bind(h int, args []target.SQLArg) (*stmt, error) {
	if h < 0 || h >= len(c.stmts) {
		return nil, fmt.Errorf("postgres: no prepared statement %d (%d prepared)", h, len(c.stmts))
	}
	st := &c.stmts[h]
	if len(args) != len(st.oids) {
		return nil, fmt.Errorf("postgres: %s takes %d parameters, given %d", st.q, len(st.oids), len(args))
	}
	c.params, c.enc = c.params[:0], c.enc[:0]
	for i, a := range args {
		if a.IsBytes {
			if a.Bytes == nil {
				c.params = append(c.params, nil) // NULL
				continue
			}
			if st.formats[i] == 1 && st.oids[i] != pgtype.ByteaOID {
				return nil, fmt.Errorf("postgres: %s: parameter %d is an integer, given bytes", st.q, i+1)
			}
			c.params = append(c.params, a.Bytes)
			continue
		}
		at := len(c.enc)
		switch st.oids[i] {
		case pgtype.Int2OID:
			c.enc = binary.BigEndian.AppendUint16(c.enc, uint16(a.Int))
		case pgtype.Int4OID:
			c.enc = binary.BigEndian.AppendUint32(c.enc, uint32(a.Int))
		case pgtype.Int8OID:
			c.enc = binary.BigEndian.AppendUint64(c.enc, uint64(a.Int))
		case pgtype.ByteaOID:
			return nil, fmt.Errorf("postgres: %s: parameter %d is bytea, given an integer", st.q, i+1)
		default:
			c.enc = strconv.AppendInt(c.enc, a.Int, 10)
		}
		c.params = append(c.params, c.enc[at:len(c.enc):len(c.enc)])
	}
	return st, nil
}

// Run implements target.SQLSession.
func (c *session) Run(ctx context.Context, h int, args []target.SQLArg, row func([][]byte) error) (int64, error) {
	st, err := c.bind(h, args)
	if err != nil {
		return 0, err
	}
	c.row, c.rerr = row, nil
	var onRow func([][]byte)
	if row != nil {
		onRow = c.onRow
	}
	n, err := c.run(ctx, st.name, st.formats, st.results, onRow)
	c.row = nil
	if err != nil {
		return 0, err
	}
	return n, c.rerr
}

// deliver hands a row to c.row until it fails.
func (c *session) deliver(vals [][]byte) {
	if c.rerr == nil {
		c.rerr = c.row(vals)
	}
}

func (c *session) run(ctx context.Context, name string, formats, results []int16, row func([][]byte)) (int64, error) {
	switch {
	case c.lean != nil:
		n, err := c.lean.execResults(ctx, bindMsg{name: name, params: c.params, formats: formats, results: results, result: textResults}, row)
		if err != nil {
			return 0, interruptedOr(ctx, err)
		}
		return n, nil
	case c.conn == nil:
		return 0, errDetached
	}
	if err := c.watch.Check(ctx); err != nil {
		return 0, err
	}
	rr := c.conn.PgConn().ExecPrepared(context.Background(), name, c.params, formats, results)
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

// Begin implements target.SQLSession: the prepared BEGIN.
func (c *session) Begin(ctx context.Context) error {
	c.params = c.params[:0]
	_, err := c.run(ctx, "begin", nil, nil, nil)
	return err
}

// Commit implements target.SQLSession: the prepared COMMIT.
func (c *session) Commit(ctx context.Context) error {
	c.params = c.params[:0]
	_, err := c.run(ctx, "commit", nil, nil, nil)
	return err
}

// Rollback implements target.SQLSession.
func (c *session) Rollback(ctx context.Context) error {
	switch {
	case c.lean != nil:
		if err := c.lean.simple(ctx, "ROLLBACK"); err != nil {
			return interruptedOr(ctx, err)
		}
		return nil
	case c.conn == nil:
		return errDetached
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

// interruptedOr is the error of a detached statement: ctx's once it ended
// (the interruption's timeout is no lost connection), else classified.
func interruptedOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("postgres: %w (%v)", cerr, err)
	}
	return classify(err, err)
}

// Events implements target.EventedSQLSession: on the lean client (a plain
// TCP socket) an event loop can drive the session.
func (c *session) Events() bool { return c.lean != nil }

// Detach implements target.EventedSQLSession: the socket goes to an event
// loop, each statement's Bind/Execute/Sync (Query for ROLLBACK) written by
// the wire's Append and its replies parsed in full by its Reply.
func (c *session) Detach() (int, target.SQLWire, error) {
	if c.lean == nil {
		return -1, nil, fmt.Errorf("postgres: a session not on a plain socket cannot go to an event loop")
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
	return fd, &wire{c: c}, nil
}

// wire is a session driven by an event loop (target.SQLWire).
type wire struct {
	c    *session
	what string // the statement in flight, as errors name it
	qerr error  // the server's ErrorResponse to the statement in flight
	bad  error  // a row that could not be taken, or the row callback's error
	vals [][]byte
	rows int64 // the CommandComplete's row count of the statement in flight
}

func (w *wire) AppendTx(b []byte, op target.SQLTxOp) []byte {
	w.qerr, w.bad, w.rows = nil, nil, 0
	switch op {
	case target.SQLBegin:
		w.what = "BEGIN"
		return appendExec(b, "begin", nil, nil, textResults)
	case target.SQLCommit:
		w.what = "COMMIT"
		return appendExec(b, "commit", nil, nil, textResults)
	}
	w.what = "ROLLBACK"
	return appendQuery(b, "ROLLBACK")
}

func (w *wire) AppendRun(b []byte, h int, args []target.SQLArg) []byte {
	w.qerr, w.bad, w.rows = nil, nil, 0
	st, err := w.c.bind(h, args)
	if err != nil {
		// Nothing goes out: Reply reports it with the reply to a Sync.
		w.bad, w.what = err, "a statement not sent"
		return append(b, 'S', 0, 0, 0, 4)
	}
	w.what = st.q
	return appendBind(b, st.name, w.c.params, st.formats, st.results, textResults)
}

func (w *wire) Reply(in []byte, row func([][]byte) error) (int, bool, error, error) {
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
			if w.qerr == nil && w.bad == nil && row != nil {
				var err error
				if w.vals, err = splitRow(w.vals[:0], body); err != nil {
					w.bad = err
				} else {
					w.bad = row(w.vals)
				}
			}
		case 'E':
			w.qerr = pgError(body)
		case 'C':
			w.rows = commandRows(body)
		case 'Z':
			if w.qerr != nil {
				return n, true, classify(w.qerr, w.qerr), nil
			}
			return n, true, w.bad, nil
		case '2', '1', 'N', 'S', 'A', 'n', 'I':
			// BindComplete, ParseComplete, a notice, a
			// parameter's new value, a notification, NoData, an empty
			// query.
		default:
			return n, false, nil, fmt.Errorf("postgres: unexpected message %q in the reply to %s", typ, w.what)
		}
	}
	return n, false, nil, nil
}

// Affected implements target.SQLWire: the rows the last statement's
// CommandComplete counted.
func (w *wire) Affected() int64 { return w.rows }

// Closed implements target.SQLWire: the error the server sent before it
// closed the connection (FATAL: terminating connection…), if any.
func (w *wire) Closed() error { return w.qerr }

// Close implements target.SQLSession.
func (c *session) Close() error {
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
			return errors.Join(target.ErrSQLRetry, out)
		case "57P01", "57P02", "57P03": // admin shutdown, crash shutdown, cannot connect now
			return errors.Join(target.ErrSQLLost, out)
		}
		return out
	}
	var ne net.Error
	if errors.As(cause, &ne) || pgconn.SafeToRetry(cause) || strings.Contains(cause.Error(), "conn closed") {
		return errors.Join(target.ErrSQLLost, out)
	}
	return out
}
