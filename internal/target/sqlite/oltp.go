//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"

	"storebench/internal/target"
	"storebench/internal/workload/oltp"
)

// The oltp workload (sysbench oltp_read_only / oltp_write_only) in the
// same database file as the kv table: sysbench's schema in SQLite's
// dialect, sbtest<N>(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, k
// INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad
// CHAR(60) DEFAULT '' NOT NULL), index k_<N> on k after the load. Each
// load goroutine has a connection of its own with every statement
// prepared. A read-only transaction is a plain BEGIN (WAL readers run
// beside the writer); a writing one takes the Go write mutex the kv
// writes use and then BEGIN IMMEDIATE, so writers queue in Go instead of
// sleeping in SQLite's busy handler, and SQLite's one writer at a time is
// what is measured.

// CreateTables implements oltp.Store.
func (s *Store) CreateTables(ctx context.Context, tables int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := 1; t <= tables; t++ {
		for _, q := range []string{
			fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t),
			fmt.Sprintf("CREATE TABLE sbtest%d(\n  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL\n)", t),
		} {
			if _, err := s.writer.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("sqlite: %s: %w", strings.SplitN(q, "(", 2)[0], err)
			}
		}
	}
	return nil
}

// InsertRows implements oltp.Store: the batch in one transaction.
func (s *Store) InsertRows(ctx context.Context, table int, rows []oltp.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, oltp.Statement(oltp.Insert, table))
	if err != nil {
		tx.Rollback()
		return err
	}
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, r.ID, r.K, r.C, r.Pad); err != nil {
			st.Close()
			tx.Rollback()
			return fmt.Errorf("sqlite: inserting into sbtest%d: %w", table, err)
		}
	}
	st.Close()
	return tx.Commit()
}

// CreateIndex implements oltp.Store.
func (s *Store) CreateIndex(ctx context.Context, table int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.writer.ExecContext(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", table, table))
	return err
}

// OpenConn implements oltp.Store.
func (s *Store) OpenConn(ctx context.Context, tables int, write bool) (oltp.Conn, error) {
	c := &oltpConn{SQLConn: oltp.SQLConn{Name: "sqlite", Classify: classify}, s: s, tables: tables, write: write}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type oltpConn struct {
	oltp.SQLConn
	s      *Store
	tables int
	write  bool
	locked bool // holds s.mu, from Begin to Commit or Rollback
}

func (c *oltpConn) connect(ctx context.Context) error {
	return c.Open(ctx, c.s.sqlConn, c.tables)
}

func (c *oltpConn) unlock() {
	if c.locked {
		c.locked = false
		c.s.mu.Unlock()
	}
}

func (c *oltpConn) Begin(ctx context.Context) error {
	q := "BEGIN"
	if c.write {
		c.s.mu.Lock()
		c.locked = true
		q = "BEGIN IMMEDIATE"
	}
	err := c.ExecText(ctx, q)
	if err != nil {
		c.unlock()
	}
	return err
}

func (c *oltpConn) Commit(ctx context.Context) error {
	err := c.ExecText(ctx, "COMMIT")
	if err == nil {
		c.unlock()
	}
	return err
}

func (c *oltpConn) Rollback(ctx context.Context) error {
	defer c.unlock()
	err := c.ExecText(ctx, "ROLLBACK")
	if err != nil && strings.Contains(err.Error(), "no transaction is active") {
		return nil
	}
	return err
}

// Reconnect implements oltp.Conn (an embedded database loses no
// connection; it reopens it all the same).
func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *oltpConn) Close() error {
	c.unlock()
	return c.SQLConn.Close()
}

// classify marks SQLite's busy and locked results as ignorable: the
// deadlock of two transactions upgrading to write.
func classify(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return oltp.Ignorable(err)
	}
	return err
}

// SQLDialect implements target.SQLer.
func (s *Store) SQLDialect() target.Dialect { return target.SQLite }

// PrepareIntSelect implements target.IntSelecter: a connection of its own
// with q prepared.
func (s *Store) PrepareIntSelect(ctx context.Context, q string) (target.IntSelect, error) {
	db := sql.OpenDB(s.sqlConn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: preparing %s: %w", q, err)
	}
	return &selectConn{db: db, st: st}, nil
}

type selectConn struct {
	db *sql.DB
	st *sql.Stmt
}

func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	var v sql.NullInt64
	err := c.st.QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v.Int64, err == nil, err
}

func (c *selectConn) Close() error {
	c.st.Close()
	return c.db.Close()
}
