package target

import (
	"context"
	"strconv"
	"strings"

	"storebench/internal/evloop"
)

// What a SQL target offers the workloads. The statements are the
// workloads': each writes them in the target's dialect, and the target
// runs them on its own connections (its lean clients included).

// Dialect is how a SQL engine spells what differs between engines.
type Dialect struct {
	// Name is the engine's family: "mysql", "postgres" or "sqlite".
	Name string
	// Param is a statement's n-th parameter (from 1): "?" or "$1".
	Param func(n int) string
	// Quote quotes an identifier.
	Quote func(id string) string
}

func questionMark(int) string { return "?" }

// MySQL is the dialect of MySQL and MariaDB.
var MySQL = Dialect{Name: "mysql", Param: questionMark,
	Quote: func(id string) string { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }}

// PostgreSQL is the dialect of PostgreSQL.
var PostgreSQL = Dialect{Name: "postgres",
	Param: func(n int) string { return "$" + strconv.Itoa(n) },
	Quote: func(id string) string {
		// As pgx.Identifier.Sanitize: no NUL, quotes doubled.
		return `"` + strings.ReplaceAll(strings.ReplaceAll(id, "\x00", ""), `"`, `""`) + `"`
	}}

// SQLite is the dialect of SQLite.
var SQLite = Dialect{Name: "sqlite", Param: questionMark,
	Quote: func(id string) string { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }}

// SQLer is a SQL target (capability SQL): its dialect.
type SQLer interface {
	SQLDialect() Dialect
}

// IntSelecter is a SQL target's fast path of point reads: a connection of
// its own, outside any pool, with one statement prepared on it that takes
// one integer parameter and returns at most one row of one integer column
// (e.g. pgbench -S's select).
type IntSelecter interface {
	SQLer
	PrepareIntSelect(ctx context.Context, query string) (IntSelect, error)
}

// IntSelect runs the prepared select; not safe for concurrent use.
type IntSelect interface {
	// Select returns the value of the row selected by key (found false
	// when there is none).
	Select(ctx context.Context, key int64) (value int64, found bool, err error)
	Close() error
}

// EventedIntSelect is the optional ability of an IntSelect on a plain
// socket whose protocol an event loop can drive (package evloop).
type EventedIntSelect interface {
	// Session hands the connection's socket to an event loop. Operation
	// seq selects key(seq); got takes each answer (value, found) and
	// says whether it is right. After Session only the returned Conn is
	// used (Close still closes the connection).
	Session(name string, key func(seq int64) int64, got func(key, value int64, found bool) error) (evloop.Conn, error)
}

// SQLDB is a SQL target's pool of connections, safe for concurrent use,
// on which a workload runs its own statements (its tables, written in
// the target's dialect). The target prepares each statement once and
// keeps it.
type SQLDB interface {
	SQLer
	// ExecDDL runs schema statements, one after the other, unprepared.
	ExecDDL(ctx context.Context, stmts ...string) error
	// Exec runs q with args and returns the number of rows it matched.
	Exec(ctx context.Context, q string, args ...any) (rows int64, err error)
	// Query runs q with args and calls row with each row's columns, as
	// the driver's bytes (nil for NULL; valid only during the call),
	// until row returns false.
	Query(ctx context.Context, q string, args []any, row func(cols [][]byte) bool) error
}
