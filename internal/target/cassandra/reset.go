package cassandra

import (
	"context"
	"slices"

	"storebench/internal/target/conn"
)

// Reset empties the tables of the keyspace that the workloads keep
// (conn.OwnTables), for a fresh ladder step (the managed server runs
// with auto_snapshot off, so TRUNCATE leaves no copy behind).
func (s *Store) Reset(ctx context.Context) error {
	own := conn.OwnTables()
	iter := s.s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, s.ks).IterContext(ctx)
	var tables []string
	var t string
	for iter.Scan(&t) {
		if slices.Contains(own, t) {
			tables = append(tables, t)
		}
	}
	if err := iter.Close(); err != nil {
		return err
	}
	for _, t := range tables {
		if err := s.s.Query(`TRUNCATE ` + s.ks + `."` + t + `"`).WithContext(ctx).Exec(); err != nil {
			return err
		}
	}
	return nil
}
