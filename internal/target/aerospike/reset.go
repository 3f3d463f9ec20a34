package aerospike

import (
	"context"

	"storebench/internal/target/conn"
)

// Reset truncates the sets the workloads keep (conn.OwnTables) in the
// namespace, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	for _, set := range conn.OwnTables() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.c.Truncate(nil, s.ns, set, nil); err != nil {
			return err
		}
	}
	return nil
}
