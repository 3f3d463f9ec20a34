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
	c := &oltpConn{cfg: s.cfg, tables: tables}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type oltpConn struct {
	cfg    *mysql.Config
	tables int
	db     *sql.DB
	conn   *sql.Conn
	stmts  [][oltp.NumKinds]*sql.Stmt // by table-1
	raw    sql.RawBytes
	sum    sql.NullInt64
}

func (c *oltpConn) connect(ctx context.Context) error {
	conn, err := mysql.NewConnector(c.cfg)
	if err != nil {
		return err
	}
	c.db = sql.OpenDB(conn)
	c.db.SetMaxOpenConns(1)
	c.db.SetMaxIdleConns(1)
	if c.conn, err = c.db.Conn(ctx); err != nil {
		c.db.Close()
		return classify(err)
	}
	c.stmts = make([][oltp.NumKinds]*sql.Stmt, c.tables)
	for t := range c.stmts {
		for k := oltp.Kind(0); k < oltp.NumKinds; k++ {
			q := oltp.Statement(k, t+1)
			if c.stmts[t][k], err = c.conn.PrepareContext(ctx, q); err != nil {
				c.Close()
				return fmt.Errorf("mysql: preparing %s: %w", q, classify(err))
			}
		}
	}
	return nil
}

func (c *oltpConn) exec(ctx context.Context, q string) error {
	_, err := c.conn.ExecContext(ctx, q)
	return classify(err)
}

func (c *oltpConn) Begin(ctx context.Context) error    { return c.exec(ctx, "BEGIN") }
func (c *oltpConn) Commit(ctx context.Context) error   { return c.exec(ctx, "COMMIT") }
func (c *oltpConn) Rollback(ctx context.Context) error { return c.exec(ctx, "ROLLBACK") }

func (c *oltpConn) Select(ctx context.Context, k oltp.Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	st := c.stmts[table-1][k]
	var rows *sql.Rows
	var err error
	if k == oltp.PointSelect {
		rows, err = st.QueryContext(ctx, lo)
	} else {
		rows, err = st.QueryContext(ctx, lo, hi)
	}
	if err != nil {
		return classify(err)
	}
	for rows.Next() {
		if k == oltp.SumRange {
			if err := rows.Scan(&c.sum); err != nil {
				rows.Close()
				return classify(err)
			}
			row(nil, c.sum.Int64, !c.sum.Valid)
			continue
		}
		if err := rows.Scan(&c.raw); err != nil {
			rows.Close()
			return classify(err)
		}
		row(c.raw, 0, false)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return classify(err)
	}
	return classify(rows.Close())
}

func (c *oltpConn) Exec(ctx context.Context, k oltp.Kind, table int, a *oltp.Args) (int64, error) {
	res, err := c.stmts[table-1][k].ExecContext(ctx, a.Values(k)...)
	if err != nil {
		return 0, classify(err)
	}
	return res.RowsAffected()
}

func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *oltpConn) Close() error {
	for _, ts := range c.stmts {
		for _, st := range ts {
			if st != nil {
				st.Close()
			}
		}
	}
	c.stmts = nil
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	if c.db != nil {
		err := c.db.Close()
		c.db = nil
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
