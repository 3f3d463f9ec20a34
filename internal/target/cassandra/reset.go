package cassandra

import (
	"context"
	"slices"

	"storebench/internal/target"
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

// ownTables lists the keyspace's tables, storebench's own (conn.OwnTables)
// apart from the others.
func (s *Store) ownTables(ctx context.Context) (own, foreign []string, err error) {
	names := conn.OwnTables()
	iter := s.s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, s.ks).IterContext(ctx)
	var t string
	for iter.Scan(&t) {
		if slices.Contains(names, t) {
			own = append(own, t)
		} else {
			foreign = append(foreign, t)
		}
	}
	return own, foreign, iter.Close()
}

// Occupancy implements target.Occupant: the keyspace's tables that are
// not storebench's, and how many of storebench's own hold rows.
func (s *Store) Occupancy(ctx context.Context) (target.Occupancy, error) {
	o := target.Occupancy{Unit: "tables", OwnNames: conn.OwnTables()}
	own, foreign, err := s.ownTables(ctx)
	if err != nil {
		return o, err
	}
	o.Foreign = int64(len(foreign))
	for _, t := range own {
		iter := s.s.Query(`SELECT * FROM ` + s.ks + `."` + t + `" LIMIT 1`).IterContext(ctx)
		n := iter.NumRows()
		if err := iter.Close(); err != nil {
			return o, err
		}
		if n > 0 {
			o.Own++
		}
	}
	return o, nil
}

// Cleanup implements target.Cleaner: it drops storebench's own tables
// of the keyspace, at the end of a run on a server named by URI; the
// keyspace and every other table stay.
func (s *Store) Cleanup(ctx context.Context) error {
	own, _, err := s.ownTables(ctx)
	if err != nil {
		return err
	}
	for _, t := range own {
		if err := s.s.Query(`DROP TABLE IF EXISTS ` + s.ks + `."` + t + `"`).WithContext(ctx).Exec(); err != nil {
			return err
		}
	}
	return nil
}
