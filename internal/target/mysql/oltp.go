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
	"strings"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"golang.org/x/sys/unix"

	"storebench/internal/evloop"
	"storebench/internal/target/detach"
	"storebench/internal/workload/oltp"
)

// The oltp workload (sysbench oltp_read_only / oltp_write_only): sysbench's
// own MySQL schema, sbtest<N>(id INTEGER NOT NULL AUTO_INCREMENT, k
// INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad
// CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB, index
// k_<N> on k after the load; every statement a server-side prepared one
// on the connection's own session, BEGIN and COMMIT as statements, as
// sysbench sends them.

// CreateTables implements oltp.Store.
func (s *Store) CreateTables(ctx context.Context, tables int) error {
	for t := 1; t <= tables; t++ {
		for _, q := range []string{
			fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t),
			fmt.Sprintf("CREATE TABLE sbtest%d(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) ENGINE = InnoDB", t),
		} {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("mysql: %s: %w", strings.SplitN(q, "(", 2)[0], err)
			}
		}
	}
	return nil
}

// InsertRows implements oltp.Store: one multi-row INSERT.
func (s *Store) InsertRows(ctx context.Context, table int, rows []oltp.Row) error {
	var q strings.Builder
	fmt.Fprintf(&q, "INSERT INTO sbtest%d (id, k, c, pad) VALUES ", table)
	args := make([]any, 0, 4*len(rows))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?)")
		args = append(args, r.ID, r.K, r.C, r.Pad)
	}
	if _, err := s.db.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("mysql: inserting into sbtest%d: %w", table, err)
	}
	return nil
}

// CreateIndex implements oltp.Store.
func (s *Store) CreateIndex(ctx context.Context, table int) error {
	_, err := s.db.ExecContext(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", table, table))
	return err
}

// OpenConn implements oltp.Store: a connection of its own (outside the
// pool), every statement prepared on it.
func (s *Store) OpenConn(ctx context.Context, tables int, _ bool) (oltp.Conn, error) {
	c := &oltpConn{cfg: s.cfg.Clone(), tables: tables, noLean: &s.oltpDriver, fd: -1}
	c.SQLConn = oltp.SQLConn{Name: "mysql", Classify: classify, Interrupt: c.interrupt}
	// On plain TCP the connection is the lean client's (connect). Else
	// the driver dials through here: the socket is the connection's own,
	// to interrupt when the run's context ends, and reads go through a
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

// oltpConn is one oltp connection: the lean client's (lean.go) on plain
// TCP, else go-sql-driver's through oltp.SQLConn (TLS, session
// variables, an authentication method the lean client does not speak).
type oltpConn struct {
	oltp.SQLConn
	cfg    *mysql.Config
	tables int
	net    atomic.Pointer[bufConn] // the latest socket dialed
	lean   *leanConn
	// noLean is set once the server asked for an authentication method
	// the lean client does not speak (the Store's: its later connections
	// go to the driver at once).
	noLean *atomic.Bool
	// fd is the socket handed to an event loop (Detach; lean is then
	// nil), or -1.
	fd     int
	params [4]param
}

func (c *oltpConn) interrupt() {
	if bc := c.net.Load(); bc != nil {
		bc.Interrupt()
	}
}

func (c *oltpConn) connect(ctx context.Context) error {
	if !c.noLean.Load() && leanEligible(c.cfg) {
		l, err := dialLean(ctx, c.cfg, c.tables)
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
	return c.Open(ctx, conn, c.tables)
}

func (c *oltpConn) Begin(ctx context.Context) error    { return c.text(ctx, "BEGIN") }
func (c *oltpConn) Commit(ctx context.Context) error   { return c.text(ctx, "COMMIT") }
func (c *oltpConn) Rollback(ctx context.Context) error { return c.text(ctx, "ROLLBACK") }

func (c *oltpConn) text(ctx context.Context, q string) error {
	if c.lean != nil {
		return leanErr(ctx, c.lean.query(ctx, q))
	}
	return c.ExecText(ctx, q)
}

// leanErr is the error of a lean statement: ctx's once it ended (the
// interruption's timeout is no lost connection), else classified.
func leanErr(ctx context.Context, err error) error {
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

// Select implements oltp.Conn: c as the server sends it (a CHAR's text),
// SUM(k) a DECIMAL in text.
func (c *oltpConn) Select(ctx context.Context, k oltp.Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	if c.lean == nil {
		return c.SQLConn.Select(ctx, k, table, lo, hi, row)
	}
	_, err := c.lean.execute(ctx, k, table, c.bind(k, lo, hi, nil), func(cols []colType, vals [][]byte) error {
		return deliver(k, cols, vals, row)
	})
	return leanErr(ctx, err)
}

// bind sets c.params for statement k (a select's ids lo and hi, or a
// write's a) and returns them.
func (c *oltpConn) bind(k oltp.Kind, lo, hi int64, a *oltp.Args) []param {
	switch k {
	case oltp.PointSelect:
		c.params[0] = param{i: lo}
		return c.params[:1]
	case oltp.SimpleRange, oltp.SumRange, oltp.OrderRange, oltp.DistinctRange:
		c.params[0], c.params[1] = param{i: lo}, param{i: hi}
		return c.params[:2]
	case oltp.NonIndexUpdate:
		c.params[0], c.params[1] = param{b: a.C, isBytes: true}, param{i: a.ID}
		return c.params[:2]
	case oltp.Insert:
		c.params[0], c.params[1], c.params[2], c.params[3] = param{i: a.ID}, param{i: a.K}, param{b: a.C, isBytes: true}, param{b: a.Pad, isBytes: true}
		return c.params[:4]
	}
	c.params[0] = param{i: a.ID}
	return c.params[:1]
}

// deliver hands a select's row to row: c, or SUM(k) (an integer, or
// NULL).
func deliver(k oltp.Kind, cols []colType, vals [][]byte, row func([]byte, int64, bool)) error {
	if len(cols) != 1 {
		return fmt.Errorf("mysql: %s returned %d columns, want 1", oltp.Statements[k], len(cols))
	}
	v, t := vals[0], cols[0]
	if k != oltp.SumRange {
		if !textType(t.typ) {
			return fmt.Errorf("mysql: %s returned c as type %#x, want text", oltp.Statements[k], t.typ)
		}
		row(v, 0, false)
		return nil
	}
	if v == nil {
		row(nil, 0, true)
		return nil
	}
	sum, err := integer(t, v)
	if err != nil {
		return fmt.Errorf("mysql: SUM(k): %w", err)
	}
	row(nil, sum, false)
	return nil
}

// textType says whether a column of type t comes as text in the binary
// protocol (strings, blobs).
func textType(t byte) bool {
	return t == 0x0f || t >= 0xf9 && t <= 0xfe // VARCHAR, blobs, VAR_STRING, STRING
}

// integer is an integer result: a DECIMAL's text (MariaDB's SUM of an
// INTEGER) or a binary integer.
func integer(t colType, v []byte) (int64, error) {
	switch {
	case t.typ == 0x00 || t.typ == 0xf6: // DECIMAL, NEWDECIMAL
		return strconv.ParseInt(string(v), 10, 64)
	case len(v) == 8 && t.typ == 0x08:
		n := binary.LittleEndian.Uint64(v)
		if t.unsigned && n > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows an int64", n)
		}
		return int64(n), nil
	case len(v) == 4 && (t.typ == 0x03 || t.typ == 0x09):
		if t.unsigned {
			return int64(binary.LittleEndian.Uint32(v)), nil
		}
		return int64(int32(binary.LittleEndian.Uint32(v))), nil
	}
	return 0, fmt.Errorf("a value of type %#x in %d bytes, want an integer", t.typ, len(v))
}

// Exec implements oltp.Conn.
func (c *oltpConn) Exec(ctx context.Context, k oltp.Kind, table int, a *oltp.Args) (int64, error) {
	if c.lean == nil {
		return c.SQLConn.Exec(ctx, k, table, a)
	}
	n, err := c.lean.execute(ctx, k, table, c.bind(k, 0, 0, a), nil)
	if err != nil {
		return 0, leanErr(ctx, err)
	}
	return n, nil
}

// Events implements oltp.Evented: on the lean client (plain TCP) an event
// loop can drive the connection.
func (c *oltpConn) Events() bool { return c.lean != nil }

// Detach implements oltp.Evented: the socket goes to an event loop, each
// statement's COM_STMT_EXECUTE (COM_QUERY for BEGIN, COMMIT and ROLLBACK)
// written by the Wire's Append and its reply parsed in full by its Reply,
// with the lean client's own encoding, parsing and statement state.
func (c *oltpConn) Detach() (int, oltp.Wire, error) {
	l := c.lean
	if l == nil {
		return -1, nil, fmt.Errorf("mysql: an oltp connection not on the lean client cannot go to an event loop")
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
	w := &leanWire{c: c, l: l}
	w.onRow = w.deliver
	return fd, w, nil
}

// leanWire is a lean connection driven by an event loop (oltp.Wire).
type leanWire struct {
	c     *oltpConn
	l     *leanConn
	kind  oltp.Kind
	row   func([]byte, int64, bool)
	onRow func([]colType, [][]byte) error // deliver, bound once
	qerr  error                           // the server's ERR packet to the statement in flight
}

func (w *leanWire) deliver(cols []colType, vals [][]byte) error {
	return deliver(w.kind, cols, vals, w.row)
}

func (w *leanWire) Append(b []byte, s *oltp.Stmt) []byte {
	w.qerr, w.kind = nil, s.Kind
	switch s.Kind {
	case oltp.TxBegin:
		w.l.begin(nil, false, nil)
		return appendQuery(b, "BEGIN")
	case oltp.TxCommit:
		w.l.begin(nil, false, nil)
		return appendQuery(b, "COMMIT")
	case oltp.TxRollback:
		w.l.begin(nil, false, nil)
		return appendQuery(b, "ROLLBACK")
	}
	st := &w.l.stmts[s.Table-1][s.Kind]
	b, typed := appendExecute(b, st, w.c.bind(s.Kind, s.Lo, s.Hi, &s.Args))
	var row func([]colType, [][]byte) error
	if s.Kind < oltp.IndexUpdate { // a select
		row = w.onRow
	}
	w.l.begin(st, typed, row)
	return b
}

func (w *leanWire) Reply(in []byte, s *oltp.Stmt, row func([]byte, int64, bool)) (int, bool, error, error) {
	w.row = row
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
			return n, false, nil, fmt.Errorf("%w (the reply to %s)", err, s.Text())
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

// Closed implements oltp.Wire: the ERR packet the server sent to the
// statement in flight (a killed connection's), if any.
func (w *leanWire) Closed() error { return w.qerr }

func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *oltpConn) Close() error {
	if c.fd >= 0 {
		// COM_QUIT, best effort, then close.
		_, _ = unix.Write(c.fd, []byte{1, 0, 0, 0, comQuit})
		err := evloop.Close(c.fd)
		c.fd = -1
		return err
	}
	if c.lean != nil {
		err := c.lean.close()
		c.lean = nil
		return err
	}
	return c.SQLConn.Close()
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
			return oltp.Ignorable(err)
		case 1053, 1927, 2006, 2013: // shutdown, connection killed, gone, lost
			return oltp.Lost(err)
		}
		return err
	}
	var ne net.Error
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, sql.ErrConnDone) || errors.As(err, &ne) {
		return oltp.Lost(err)
	}
	return err
}
