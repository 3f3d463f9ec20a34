package redis

import (
	"context"

	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/target/internal/ycsbhash"
)

// ownPrefixes are the key prefixes storebench writes on Redis: the
// workloads' (conn.OwnKeyPrefixes) and this target's YCSB layout's.
func ownPrefixes() []string { return append(conn.OwnKeyPrefixes(), ycsbhash.Prefix) }

// Reset empties the database for a fresh ladder step: FLUSHDB on a
// server storebench started; on a server named by URI only the keys
// under storebench's own prefixes (SCAN MATCH + UNLINK), never the rest.
func (s *Store) Reset(ctx context.Context) error {
	if !s.external {
		return s.c.FlushDB(ctx).Err()
	}
	return targetkit.RESPDeleteOwn(ctx, s.c, ownPrefixes())
}

// Cleanup implements target.Cleaner: the keys under storebench's own
// prefixes, at the end of a run on a server named by URI.
func (s *Store) Cleanup(ctx context.Context) error {
	return targetkit.RESPDeleteOwn(ctx, s.c, ownPrefixes())
}

// Occupancy implements target.Occupant: DBSIZE, and how many of those
// keys lie under storebench's own prefixes.
func (s *Store) Occupancy(ctx context.Context) (target.Occupancy, error) {
	return targetkit.RESPOccupancy(ctx, s.c, ownPrefixes())
}
