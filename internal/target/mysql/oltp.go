package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"

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
	c := &oltpConn{SQLConn: oltp.SQLConn{Name: "mysql", Classify: classify}, cfg: s.cfg, tables: tables}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type oltpConn struct {
	oltp.SQLConn
	cfg    *mysql.Config
	tables int
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
