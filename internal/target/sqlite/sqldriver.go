//go:build cgo

package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"

	"github.com/mattn/go-sqlite3"

	"storebench/internal/target"
)

// What SQLite offers the SQL workloads (their layouts are theirs: the oltp
// workload's in workload/oltp, the documents' in workload/documents).

// SQLDialect implements target.SQLer.
func (s *Store) SQLDialect() target.Dialect { return target.SQLite }

// SQLConnector implements target.SQLDriver: connections to kv.db of the
// workload's own, writing with the store's synchronous setting.
func (s *Store) SQLConnector() driver.Connector { return s.sqlConn }

// SQLError implements target.SQLDriver: SQLite's busy and locked results
// are retried (the deadlock of two transactions upgrading to write).
func (s *Store) SQLError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return errors.Join(target.ErrSQLRetry, err)
	}
	return err
}

// SQLWriteLock implements target.SQLWriteLocker: the mutex the store's
// own writes hold.
func (s *Store) SQLWriteLock() sync.Locker { return &s.mu }

// PrepareIntSelect implements target.IntSelecter: a connection of its own
// with q prepared.
func (s *Store) PrepareIntSelect(ctx context.Context, q string) (target.IntSelect, error) {
	return target.OpenIntSelect(ctx, s.sqlConn, "sqlite", q)
}
