package mysql

import (
	"context"
	"slices"

	"storebench/internal/target"
	"storebench/internal/target/conn"
)

// Reset empties the tables of the database that the workloads keep
// (conn.OwnTables), for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	tables, err := s.ownTables(ctx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := s.db.ExecContext(ctx, "TRUNCATE TABLE "+t); err != nil {
			return err
		}
	}
	return nil
}

// ownTables are the tables of the current database that the workloads
// declared theirs.
func (s *Store) ownTables(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	own := conn.OwnTables()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		if slices.Contains(own, t) {
			out = append(out, target.MySQL.Quote(t))
		}
	}
	return out, rows.Err()
}
