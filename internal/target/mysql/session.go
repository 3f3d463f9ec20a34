package mysql

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"golang.org/x/sys/unix"

	"storebench/internal/evloop"
	"storebench/internal/target"
	"storebench/internal/target/detach"
)

// The SQL sessions (target.SQLSessioner): a connection of the workload's
// own, outside the pool, with its statements server-side prepared on it
// and BEGIN, COMMIT and ROLLBACK sent as statements (as sysbench sends
// them). On plain TCP the connection is the lean client's (lean.go), which
// an event loop can drive (target.EventedSQLSession); else go-sql-driver's
// (TLS, session variables, an authentication method the lean client does
// not speak), through database/sql/driver directly: the pool, its locks
// and the conversions of each Scan would cost more CPU per statement than
// the server's work.

// OpenSQLSession implements target.SQLSessioner.
func (s *Store) OpenSQLSession(ctx context.Context) (target.SQLSession, error) {
	c := &session{cfg: s.cfg.Clone(), noLean: &s.noLean, fd: -1}
	c.onRow = c.deliver
	// The driver dials through here: the socket is the session's own, to
	// interrupt when the run's context ends, and reads go through a
	// buffer that takes a whole range result in one read (the driver's own
	// buffer is 4 KiB: four reads for each of sysbench's 100-row ranges).
	c.cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		bc := &bufConn{Conn: detach.Conn{Conn: nc}}
		bc.r = bufio.NewReaderSize(&bc.Conn, readBuffer)
		c.net.Store(bc)
		return bc, nil
	}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// readBuffer holds a read_only transaction's largest result (100 rows of
// a CHAR(120)) several times over.
const readBuffer = 64 << 10

// bufConn is a socket read through a buffer of readBuffer bytes.
type bufConn struct {
	detach.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// session is one SQL session: the lean client's, or go-sql-driver's
// (drv).
type session struct {
	cfg  *mysql.Config
	net  atomic.Pointer[bufConn] // the driver's latest socket
	lean *leanConn
	drv  *driverConn
	// noLean is set once the server asked for an authentication method
	// the lean client does not speak (the Store's: its later sessions go
	// to the driver at once).
	noLean *atomic.Bool
	// fd is the socket handed to an event loop (Detach; lean is then
	// nil), or -1.
	fd int
	// row is the caller's row callback of the statement in flight;
	// onRow (deliver, bound once) hands it each row in text.
	row   func([][]byte) error
	onRow func([]colType, [][]byte) error
	texts []byte // the text of a row's binary values
}

func (c *session) interrupt() {
	if bc := c.net.Load(); bc != nil {
		bc.Interrupt()
	}
}

func (c *session) connect(ctx context.Context) error {
	if !c.noLean.Load() && leanEligible(c.cfg) {
		l, err := dialLean(ctx, c.cfg)
		if err == nil {
			c.lean = l
			return nil
		}
		var ua *unsupportedAuth
		if !errors.As(err, &ua) {
			return classify(err)
		}
		c.noLean.Store(true)
	}
	conn, err := mysql.NewConnector(c.cfg)
	if err != nil {
		return err
	}
	d, err := openDriver(ctx, conn, c.interrupt)
	if err != nil {
		return err
	}
	c.drv = d
	return nil
}

// Prepare implements target.SQLSession.
func (c *session) Prepare(ctx context.Context, q string) (int, error) {
	switch {
	case c.lean != nil:
		h, err := c.lean.prepare(ctx, q)
		if err != nil {
			return 0, sessionErr(ctx, err)
		}
		return h, nil
	case c.drv != nil:
		return c.drv.prepare(ctx, q)
	}
	return 0, errDetached
}

var errDetached = errors.New("mysql: the session went to an event loop")

// Run implements target.SQLSession.
func (c *session) Run(ctx context.Context, h int, args []target.SQLArg, row func([][]byte) error) (int64, error) {
	switch {
	case c.lean != nil:
		c.row = row
		var onRow func([]colType, [][]byte) error
		if row != nil {
			onRow = c.onRow
		}
		n, err := c.lean.execute(ctx, h, args, onRow)
		c.row = nil
		if err != nil {
			return 0, sessionErr(ctx, err)
		}
		return n, nil
	case c.drv != nil:
		return c.drv.run(ctx, h, args, row)
	}
	return 0, errDetached
}

// deliver hands a binary row to c.row, its values in text.
func (c *session) deliver(cols []colType, vals [][]byte) error {
	var err error
	if c.texts, err = textValues(c.texts[:0], cols, vals); err != nil {
		return err
	}
	return c.row(vals)
}

// textValues replaces the binary values of integer and floating point
// columns in vals by their text, appended to buf (strings and decimals
// come as text already), and returns buf.
func textValues(buf []byte, cols []colType, vals [][]byte) ([]byte, error) {
	for i, v := range vals {
		t := cols[i]
		if v == nil || textType(t.typ) || t.typ == 0x00 || t.typ == 0xf6 { // NULL, strings, DECIMAL, NEWDECIMAL
			continue
		}
		at := len(buf)
		switch {
		case t.typ == 0x01 && len(v) == 1: // TINY
			if t.unsigned {
				buf = strconv.AppendUint(buf, uint64(v[0]), 10)
			} else {
				buf = strconv.AppendInt(buf, int64(int8(v[0])), 10)
			}
		case (t.typ == 0x02 || t.typ == 0x0d) && len(v) == 2: // SHORT, YEAR
			n := binary.LittleEndian.Uint16(v)
			if t.unsigned || t.typ == 0x0d {
				buf = strconv.AppendUint(buf, uint64(n), 10)
			} else {
				buf = strconv.AppendInt(buf, int64(int16(n)), 10)
			}
		case (t.typ == 0x03 || t.typ == 0x09) && len(v) == 4: // LONG, INT24
			n := binary.LittleEndian.Uint32(v)
			if t.unsigned {
				buf = strconv.AppendUint(buf, uint64(n), 10)
			} else {
				buf = strconv.AppendInt(buf, int64(int32(n)), 10)
			}
		case t.typ == 0x08 && len(v) == 8: // LONGLONG
			n := binary.LittleEndian.Uint64(v)
			if t.unsigned {
				buf = strconv.AppendUint(buf, n, 10)
			} else {
				buf = strconv.AppendInt(buf, int64(n), 10)
			}
		case t.typ == 0x04 && len(v) == 4: // FLOAT
			buf = strconv.AppendFloat(buf, float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), 'g', -1, 32)
		case t.typ == 0x05 && len(v) == 8: // DOUBLE
			buf = strconv.AppendFloat(buf, math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64)
		default:
			return buf, fmt.Errorf("mysql: a column of type %#x in %d bytes has no text form here", t.typ, len(v))
		}
		vals[i] = buf[at:len(buf):len(buf)]
	}
	return buf, nil
}

// textType says whether a column of type t comes as text in the binary
// protocol (strings, blobs).
func textType(t byte) bool {
	return t == 0x0f || t >= 0xf9 && t <= 0xfe // VARCHAR, blobs, VAR_STRING, STRING
}

// Begin implements target.SQLSession.
func (c *session) Begin(ctx context.Context) error { return c.text(ctx, "BEGIN") }

// Commit implements target.SQLSession.
func (c *session) Commit(ctx context.Context) error { return c.text(ctx, "COMMIT") }

// Rollback implements target.SQLSession.
func (c *session) Rollback(ctx context.Context) error { return c.text(ctx, "ROLLBACK") }

func (c *session) text(ctx context.Context, q string) error {
	switch {
	case c.lean != nil:
		return sessionErr(ctx, c.lean.query(ctx, q))
	case c.drv != nil:
		return c.drv.execText(ctx, q)
	}
	return errDetached
}

// sessionErr is the error of a statement: ctx's once it ended (the
// interruption's timeout is no lost connection), else classified.
func sessionErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("mysql: %w (%v)", cerr, err)
	}
	return classify(err)
}

// Events implements target.EventedSQLSession: on the lean client (plain
// TCP) an event loop can drive the session.
func (c *session) Events() bool { return c.lean != nil }

// Detach implements target.EventedSQLSession: the socket goes to an
// event loop, each statement's COM_STMT_EXECUTE (COM_QUERY for BEGIN,
// COMMIT and ROLLBACK) written by the wire's Append and its reply parsed
// in full by its Reply, with the lean client's own encoding, parsing and
// statement state.
func (c *session) Detach() (int, target.SQLWire, error) {
	l := c.lean
	if l == nil {
		return -1, nil, fmt.Errorf("mysql: a session not on the lean client cannot go to an event loop")
	}
	nc, err := l.c.Take()
	if err != nil {
		return -1, nil, fmt.Errorf("mysql: %w", err)
	}
	l.watch.Stop()
	c.lean = nil
	fd, err := evloop.Detach(nc)
	if err != nil {
		return -1, nil, fmt.Errorf("mysql: %w", err)
	}
	c.fd = fd
	return fd, &leanWire{c: c, l: l}, nil
}

// leanWire is a lean session driven by an event loop (target.SQLWire).
type leanWire struct {
	c    *session
	l    *leanConn
	what string // the statement in flight, as errors name it
	qerr error  // the server's ERR packet to the statement in flight
}

var txText = [...]string{target.SQLBegin: "BEGIN", target.SQLCommit: "COMMIT", target.SQLRollback: "ROLLBACK"}

func (w *leanWire) AppendTx(b []byte, op target.SQLTxOp) []byte {
	w.qerr, w.what = nil, txText[op]
	w.l.begin(nil, false, nil)
	return appendQuery(b, w.what)
}

func (w *leanWire) AppendRun(b []byte, h int, args []target.SQLArg) []byte {
	w.qerr = nil
	st := &w.l.stmts[h]
	w.what = st.q
	b, typed := appendExecute(b, st, args)
	w.l.begin(st, typed, w.c.onRow)
	return b
}

func (w *leanWire) Reply(in []byte, row func([][]byte) error) (int, bool, error, error) {
	w.c.row = row
	if row == nil {
		w.c.row = discard
	}
	n := 0
	for len(in)-n >= 4 {
		size := int(in[n]) | int(in[n+1])<<8 | int(in[n+2])<<16
		if size == 0xffffff {
			return n, false, nil, malformed("a packet of 16 MiB or more")
		}
		if len(in)-n < 4+size {
			break // the rest of this packet is yet to come
		}
		p := in[n+4 : n+4+size]
		n += 4 + size
		done, serr, err := w.l.take(p)
		if err != nil {
			return n, false, nil, fmt.Errorf("%w (the reply to %s)", err, w.what)
		}
		if done {
			var me *mysql.MySQLError
			if errors.As(serr, &me) {
				w.qerr = serr
			}
			return n, true, classify(serr), nil
		}
	}
	return n, false, nil, nil
}

func discard([][]byte) error { return nil }

// Affected implements target.SQLWire: the OK packet's affected rows (the
// matched rows: the lean client asks for CLIENT_FOUND_ROWS).
func (w *leanWire) Affected() int64 { return w.l.r.affected }

// Closed implements target.SQLWire: the ERR packet the server sent to the
// statement in flight (a killed connection's), if any.
func (w *leanWire) Closed() error { return w.qerr }

// Close implements target.SQLSession.
func (c *session) Close() error {
	switch {
	case c.fd >= 0:
		// COM_QUIT, best effort, then close.
		_, _ = unix.Write(c.fd, []byte{1, 0, 0, 0, comQuit})
		err := evloop.Close(c.fd)
		c.fd = -1
		return err
	case c.lean != nil:
		err := c.lean.close()
		c.lean = nil
		return err
	case c.drv != nil:
		err := c.drv.close()
		c.drv = nil
		return err
	}
	return nil
}

// classify marks what sysbench ignores and retries (its default
// --mysql-ignore-errors: 1213 deadlock, 1020 record changed, 1205 lock
// wait timeout) and a lost connection (its CR_SERVER_LOST family).
func classify(err error) error {
	if err == nil {
		return nil
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1020, 1205:
			return errors.Join(target.ErrSQLRetry, err)
		case 1053, 1927, 2006, 2013: // shutdown, connection killed, gone, lost
			return errors.Join(target.ErrSQLLost, err)
		}
		return err
	}
	var ne net.Error
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, sql.ErrConnDone) || errors.As(err, &ne) {
		return errors.Join(target.ErrSQLLost, err)
	}
	return err
}

// driverConn is a session on go-sql-driver's connection, spoken to through
// database/sql/driver. Statements run without the caller's context, which
// is watched once per context instead of by the driver on every statement
// (package detach); its end interrupts the socket.
type driverConn struct {
	conn  driver.Conn
	exec  driver.ExecerContext
	prep  driver.ConnPrepareContext
	stmts []driverStmt
	args  []driver.NamedValue
	dest  []driver.Value
	vals  [][]byte
	text  []byte
	watch detach.Watch
}

// driverStmt is a prepared statement with the driver's context-taking
// methods.
type driverStmt interface {
	driver.Stmt
	driver.StmtQueryContext
	driver.StmtExecContext
}

func openDriver(ctx context.Context, c driver.Connector, interrupt func()) (*driverConn, error) {
	dc, err := c.Connect(ctx)
	if err != nil {
		return nil, classify(err)
	}
	d := &driverConn{conn: dc}
	d.watch.Interrupt = interrupt
	var ok bool
	if d.exec, ok = dc.(driver.ExecerContext); !ok {
		d.close()
		return nil, fmt.Errorf("mysql: the driver's connection cannot execute a statement with a context")
	}
	if d.prep, ok = dc.(driver.ConnPrepareContext); !ok {
		d.close()
		return nil, fmt.Errorf("mysql: the driver's connection cannot prepare a statement with a context")
	}
	return d, nil
}

func (d *driverConn) prepare(ctx context.Context, q string) (int, error) {
	ds, err := d.prep.PrepareContext(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("mysql: preparing %s: %w", q, d.err(ctx, err))
	}
	st, ok := ds.(driverStmt)
	if !ok {
		ds.Close()
		return 0, fmt.Errorf("mysql: the driver's statements take no context")
	}
	d.stmts = append(d.stmts, st)
	return len(d.stmts) - 1, nil
}

// context is what a statement runs under: no cancellable context (see
// driverConn), or the error of an ended ctx.
func (d *driverConn) context(ctx context.Context) (context.Context, error) {
	if err := d.watch.Check(ctx); err != nil {
		return nil, err
	}
	return context.Background(), nil
}

// err is a statement's error: ctx's once it ended (the interruption's
// timeout is no lost connection), else classified.
func (d *driverConn) err(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("mysql: %w (%v)", cerr, err)
	}
	return classify(err)
}

func (d *driverConn) execText(ctx context.Context, q string) error {
	sctx, err := d.context(ctx)
	if err != nil {
		return err
	}
	_, err = d.exec.ExecContext(sctx, q, nil)
	return d.err(ctx, err)
}

func (d *driverConn) run(ctx context.Context, h int, args []target.SQLArg, row func([][]byte) error) (int64, error) {
	sctx, err := d.context(ctx)
	if err != nil {
		return 0, err
	}
	if h < 0 || h >= len(d.stmts) {
		return 0, fmt.Errorf("mysql: no prepared statement %d (%d prepared)", h, len(d.stmts))
	}
	d.bindArgs(args)
	st := d.stmts[h]
	if row == nil {
		res, err := st.ExecContext(sctx, d.args)
		if err != nil {
			return 0, d.err(ctx, err)
		}
		return res.RowsAffected()
	}
	rows, err := st.QueryContext(sctx, d.args)
	if err != nil {
		return 0, d.err(ctx, err)
	}
	n := len(rows.Columns())
	if cap(d.dest) < n {
		d.dest, d.vals = make([]driver.Value, n), make([][]byte, n)
	}
	d.dest, d.vals = d.dest[:n], d.vals[:n]
	var rerr error
	for {
		clear(d.dest)
		if err = rows.Next(d.dest); err != nil {
			break
		}
		if rerr != nil {
			continue
		}
		if rerr = d.textRow(); rerr == nil {
			rerr = row(d.vals)
		}
	}
	if !errors.Is(err, io.EOF) {
		rows.Close()
		return 0, d.err(ctx, err)
	}
	if err := rows.Close(); err != nil {
		return 0, d.err(ctx, err)
	}
	return 0, rerr
}

// bindArgs puts a statement's arguments into d.args, reused from one
// statement to the next so that a query allocates no slice of its own; a
// nil byte slice binds as NULL.
func (d *driverConn) bindArgs(args []target.SQLArg) {
	d.args = d.args[:0]
	for i, a := range args {
		nv := driver.NamedValue{Ordinal: i + 1, Value: a.Int}
		if a.IsBytes {
			nv.Value = a.Bytes
			if a.Bytes == nil {
				nv.Value = nil
			}
		}
		d.args = append(d.args, nv)
	}
}

// textRow puts the row in d.dest into d.vals in its text form, numbers
// formatted into d.text (reused, so a row allocates nothing for them), as
// the row callback takes every column; the error is the last column
// without a text form, if any.
func (d *driverConn) textRow() error {
	var err error
	d.text = d.text[:0]
	for i, v := range d.dest {
		switch v := v.(type) {
		case nil:
			d.vals[i] = nil
		case []byte:
			d.vals[i] = v
		case string:
			d.vals[i] = []byte(v)
		case int64:
			at := len(d.text)
			d.text = strconv.AppendInt(d.text, v, 10)
			d.vals[i] = d.text[at:len(d.text):len(d.text)]
		case uint64:
			at := len(d.text)
			d.text = strconv.AppendUint(d.text, v, 10)
			d.vals[i] = d.text[at:len(d.text):len(d.text)]
		case float64:
			at := len(d.text)
			d.text = strconv.AppendFloat(d.text, v, 'g', -1, 64)
			d.vals[i] = d.text[at:len(d.text):len(d.text)]
		default:
			err = fmt.Errorf("mysql: a column as %T has no text form here", v)
		}
	}
	return err
}

func (d *driverConn) close() error {
	d.watch.Stop()
	for _, st := range d.stmts {
		st.Close()
	}
	d.stmts = nil
	return d.conn.Close()
}
