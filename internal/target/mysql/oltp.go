package mysql

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
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
	c := &oltpConn{cfg: s.cfg.Clone(), tables: tables}
	c.SQLConn = oltp.SQLConn{Name: "mysql", Classify: classify, Interrupt: c.interrupt}
	// The driver dials through here: the socket is the connection's own,
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

type oltpConn struct {
	oltp.SQLConn
	cfg    *mysql.Config
	tables int
	net    atomic.Pointer[bufConn] // the latest socket dialed
}

func (c *oltpConn) interrupt() {
	if bc := c.net.Load(); bc != nil {
		bc.Interrupt()
	}
}

func (c *oltpConn) connect(ctx context.Context) error {
	conn, err := mysql.NewConnector(c.cfg)
	if err != nil {
		return err
	}
	return c.Open(ctx, conn, c.tables)
}

func (c *oltpConn) Begin(ctx context.Context) error    { return c.ExecText(ctx, "BEGIN") }
func (c *oltpConn) Commit(ctx context.Context) error   { return c.ExecText(ctx, "COMMIT") }
func (c *oltpConn) Rollback(ctx context.Context) error { return c.ExecText(ctx, "ROLLBACK") }

func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
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
