package target

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// OpenIntSelect is an IntSelect through database/sql: one connection of
// its own from c, with q prepared on it (engine names it in errors). The
// targets without a protocol client of their own use it (MariaDB/MySQL's
// go-sql-driver fallback, SQLite).
func OpenIntSelect(ctx context.Context, c driver.Connector, engine, q string) (IntSelect, error) {
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: preparing %s: %w", engine, q, err)
	}
	return &sqlIntSelect{db: db, st: st}, nil
}

// sqlIntSelect runs the prepared point select on its own connection.
type sqlIntSelect struct {
	db *sql.DB
	st *sql.Stmt
}

// Select implements IntSelect.
func (c *sqlIntSelect) Select(ctx context.Context, key int64) (int64, bool, error) {
	var v sql.NullInt64
	err := c.st.QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v.Int64, err == nil, err
}

// Close implements IntSelect.
func (c *sqlIntSelect) Close() error {
	c.st.Close()
	return c.db.Close()
}
