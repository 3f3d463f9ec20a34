// Package oltp is sysbench's OLTP workload (oltp_read_only and
// oltp_write_only of sysbench 1.0.20) on SQL targets: its tables
// sbtest1..N (id, k, c, pad; a secondary index k_<N> on k), its value
// formats, and its transactions statement for statement, prepared once per
// connection. This package holds the layout on what a target offers
// (layout_sql.go: MariaDB/MySQL and PostgreSQL, layout_sqlite.go: SQLite;
// StoreOf), or a target implements Store itself.
package oltp

import (
	"context"
	"errors"
	"fmt"

	"storebench/internal/target"
)

// Kind is one of sysbench's statements.
type Kind int

const (
	PointSelect Kind = iota
	SimpleRange
	SumRange
	OrderRange
	DistinctRange
	IndexUpdate
	NonIndexUpdate
	Delete
	Insert
	NumKinds
)

// Statements are sysbench's statements (oltp_common.lua's stmt_defs), %d
// the table number, ? a parameter (layout_sql.go numbers them $1, $2 on
// PostgreSQL).
var Statements = [NumKinds]string{
	PointSelect:    "SELECT c FROM sbtest%d WHERE id=?",
	SimpleRange:    "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ?",
	SumRange:       "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN ? AND ?",
	OrderRange:     "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	DistinctRange:  "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	IndexUpdate:    "UPDATE sbtest%d SET k=k+1 WHERE id=?",
	NonIndexUpdate: "UPDATE sbtest%d SET c=? WHERE id=?",
	Delete:         "DELETE FROM sbtest%d WHERE id=?",
	Insert:         "INSERT INTO sbtest%d (id, k, c, pad) VALUES (?, ?, ?, ?)",
}

// Statement is the text of statement k on table t (1-based).
func Statement(k Kind, t int) string { return fmt.Sprintf(Statements[k], t) }

// Row is one row of an sbtest table.
type Row struct {
	ID, K  int64
	C, Pad []byte
}

// Args are the parameters of a write: ID (every write), K (Insert), C
// (NonIndexUpdate, Insert) and Pad (Insert).
type Args struct {
	ID, K  int64
	C, Pad []byte
}

// Store is what a target offers the oltp workload.
type Store interface {
	// CreateTables drops sbtest1..tables if they exist and creates them
	// empty, with sysbench's schema in the target's dialect: id an
	// auto-increment integer primary key, k INTEGER DEFAULT 0 NOT NULL,
	// c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL,
	// and no secondary index yet.
	CreateTables(ctx context.Context, tables int) error
	// InsertRows inserts one batch of rows into sbtest<table> (sysbench's
	// bulk insert). Safe for concurrent use on different batches.
	InsertRows(ctx context.Context, table int, rows []Row) error
	// CreateIndex creates k_<table> on sbtest<table>(k), after the load
	// as sysbench does.
	CreateIndex(ctx context.Context, table int) error
	// OpenConn opens a connection of its own with every statement
	// prepared on tables 1..tables; write says the connection's
	// transactions write (SQLite then takes its write lock at BEGIN).
	OpenConn(ctx context.Context, tables int, write bool) (Conn, error)
}

// Conn is one client connection, used by one goroutine at a time.
type Conn interface {
	Begin(ctx context.Context) error
	Commit(ctx context.Context) error
	// Rollback ends a transaction an ignorable error broke.
	Rollback(ctx context.Context) error
	// Select runs a select statement (PointSelect … DistinctRange) with
	// id lo (and hi for a range), calling row for each row: c for the
	// c-selecting statements (the bytes are valid only during the call;
	// CHAR padding may remain), or sum for SumRange (null false when the
	// range is empty).
	Select(ctx context.Context, k Kind, table int, lo, hi int64, row func(c []byte, sum int64, null bool)) error
	// Exec runs a write statement and returns the rows it affected.
	Exec(ctx context.Context, k Kind, table int, a *Args) (int64, error)
	// Reconnect replaces a lost connection and prepares the statements
	// again (sysbench's reconnect).
	Reconnect(ctx context.Context) error
	Close() error
}

// ErrIgnorable marks what sysbench ignores and retries: a deadlock, a
// lock wait timeout, a serialization failure, and on PostgreSQL the
// unique violation of two concurrent delete+inserts of one id. The
// workload rolls back, counts an ignored error and runs the transaction
// again.
var ErrIgnorable = target.ErrSQLRetry

// ErrLost marks a lost connection: the workload counts a reconnect,
// calls Reconnect and runs the transaction again.
var ErrLost = target.ErrSQLLost

// Ignorable wraps err as ignorable.
func Ignorable(err error) error { return errors.Join(ErrIgnorable, err) }

// Lost wraps err as a lost connection.
func Lost(err error) error { return errors.Join(ErrLost, err) }
