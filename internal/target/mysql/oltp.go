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
	c := &oltpConn{cfg: s.cfg.Clone(), tables: tables, noLean: &s.oltpDriver}
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
	c.params[0], c.params[1] = param{i: lo}, param{i: hi}
	params := c.params[:2]
	if k == oltp.PointSelect {
		params = params[:1]
	}
	_, err := c.lean.execute(ctx, k, table, params, func(cols []colType, vals [][]byte) error {
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
	})
	return leanErr(ctx, err)
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
	var params []param
	switch k {
	case oltp.NonIndexUpdate:
		c.params[0], c.params[1] = param{b: a.C, isBytes: true}, param{i: a.ID}
		params = c.params[:2]
	case oltp.Insert:
		c.params[0], c.params[1], c.params[2], c.params[3] = param{i: a.ID}, param{i: a.K}, param{b: a.C, isBytes: true}, param{b: a.Pad, isBytes: true}
		params = c.params[:4]
	default:
		c.params[0] = param{i: a.ID}
		params = c.params[:1]
	}
	n, err := c.lean.execute(ctx, k, table, params, nil)
	if err != nil {
		return 0, leanErr(ctx, err)
	}
	return n, nil
}

func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *oltpConn) Close() error {
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
