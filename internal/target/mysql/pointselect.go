package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/target"
)

// Integer point selects (pgbench -S shaped, the pointselect workload): a
// connection of its own per load goroutine.

// PrepareIntSelect implements target.IntSelecter: a connection of its own
// (outside the pool) with q prepared.
func (s *Store) PrepareIntSelect(ctx context.Context, q string) (target.IntSelect, error) {
	conn, err := mysql.NewConnector(s.cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
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

// Select implements target.IntSelect.
func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	var v sql.NullInt64
	err := c.st.QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v.Int64, err == nil, err
}

// Close implements target.IntSelect.
func (c *selectConn) Close() error {
	c.st.Close()
	return c.db.Close()
}
