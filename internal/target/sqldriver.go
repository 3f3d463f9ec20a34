package target

import (
	"database/sql/driver"
	"errors"
	"sync"
)

// SQLDriver is a SQL target whose driver connections a workload may open
// and hold itself, outside any pool (database/sql/driver): its statements
// prepared once on a connection of its own, pinned to one goroutine (the
// oltp workload's clients).
type SQLDriver interface {
	SQLer
	// SQLConnector opens such connections.
	SQLConnector() driver.Connector
	// SQLError says what a driver's error means: err joined with
	// ErrSQLRetry or ErrSQLLost, or err itself.
	SQLError(err error) error
}

// SQLWriteLocker is an engine that runs one writing transaction at a
// time (SQLite): a workload holds the lock from BEGIN to the end of a
// writing transaction, so that writers queue in Go beside the target's
// own writes instead of sleeping in the engine's busy handler.
type SQLWriteLocker interface {
	SQLWriteLock() sync.Locker
}

// ErrSQLRetry marks what a SQL client rolls back and runs again: a
// deadlock, a lock wait timeout, a serialization failure, a busy
// database.
var ErrSQLRetry = errors.New("ignorable error (deadlock or serialization failure)")

// ErrSQLLost marks a lost connection: the client opens a new one.
var ErrSQLLost = errors.New("connection lost")
