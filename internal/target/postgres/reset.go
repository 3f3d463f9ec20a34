package postgres

import (
	"context"
	"slices"
	"strings"

	"storebench/internal/target"
	"storebench/internal/target/conn"
)

// Reset empties the tables of the current schema that the workloads keep
// (conn.OwnTables), in one statement, for a fresh ladder step (YCSB's
// Init recreates its own table).
func (s *Store) Reset(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return err
	}
	own := conn.OwnTables()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		if slices.Contains(own, t) {
			tables = append(tables, target.PostgreSQL.Quote(t))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	_, err = s.pool.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", "))
	return err
}
