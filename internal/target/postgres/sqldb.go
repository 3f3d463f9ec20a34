package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// The SQL primitive (target.SQLDB) the workloads' tables run on: their
// statements on the pool, which prepares each once per connection and
// keeps it (pgx's statement cache).

// ExecDDL implements target.SQLDB.
func (s *Store) ExecDDL(ctx context.Context, stmts ...string) error {
	for _, q := range stmts {
		if _, err := s.pool.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
	}
	return nil
}

// Exec implements target.SQLDB.
func (s *Store) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// scratchPool holds the per-call scan destinations of rows.
var scratchPool targetkit.ScratchPool[pgtype.DriverBytes]

// Query implements target.SQLDB.
func (s *Store) Query(ctx context.Context, q string, args []any, row func([][]byte) bool) error {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var sc *targetkit.Scratch[pgtype.DriverBytes]
	for rows.Next() {
		if sc == nil {
			sc = scratchPool.Get(len(rows.FieldDescriptions()))
			defer scratchPool.Put(sc)
		}
		if err := rows.Scan(sc.Dest...); err != nil {
			return err
		}
		if !row(sc.Fill()) {
			return nil
		}
	}
	rows.Close()
	return rows.Err()
}

// SQLDialect implements target.SQLer.
func (s *Store) SQLDialect() target.Dialect { return target.PostgreSQL }
