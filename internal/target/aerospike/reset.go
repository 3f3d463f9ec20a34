package aerospike

import (
	"context"

	"storebench/internal/target/conn"
)

// Reset truncates the sets the workloads write (conn.AerospikeSets) in the
// namespace, for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	for _, set := range conn.AerospikeSets() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.c.Truncate(nil, s.ns, set, nil); err != nil {
			return err
		}
	}
	return nil
}
