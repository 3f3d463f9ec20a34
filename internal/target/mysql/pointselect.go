package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/workload/pointselect"
)

// The pointselect workload (pgbench -S shaped): a connection of its own
// per load goroutine.

// NewSelectConn implements pointselect.Selecter: a connection of its own
// (outside the pool) with "SELECT value FROM table WHERE key = ?"
// prepared.
func (s *Store) NewSelectConn(ctx context.Context, table, key, value string) (pointselect.SelectConn, error) {
	conn, err := mysql.NewConnector(s.cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	quote := func(id string) string { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }
	q := "SELECT " + quote(value) + " FROM " + quote(table) + " WHERE " + quote(key) + " = ?"
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql: preparing %s: %s", q, err)
	}
	return &selectConn{db: db, st: st}, nil
}

// selectConn runs the prepared point select on its own connection.
type selectConn struct {
	db *sql.DB
	st *sql.Stmt
}

// Select implements pointselect.SelectConn.
func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	var v sql.NullInt64
	err := c.st.QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v.Int64, err == nil, err
}

// Close implements pointselect.SelectConn.
func (c *selectConn) Close() error {
	c.st.Close()
	return c.db.Close()
}
