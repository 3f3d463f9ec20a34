package target

import "context"

// SQLTx is a transaction on one connection of a SQLDB, on which a
// workload runs its own statements (prepared by the target as on the
// SQLDB). Not safe for concurrent use.
type SQLTx interface {
	// Exec runs q with args and returns the number of rows it matched.
	Exec(ctx context.Context, q string, args ...any) (rows int64, err error)
	Commit() error
	Rollback() error
}

// SQLTransactor is a SQLDB that runs a workload's statements in a
// transaction it asks for.
type SQLTransactor interface {
	SQLDB
	// BeginSQL starts a transaction on one of the pool's connections.
	BeginSQL(ctx context.Context) (SQLTx, error)
}
