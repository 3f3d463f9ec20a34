package redis

import "context"

// Reset empties the database of the URI (FLUSHDB), for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error { return s.c.FlushDB(ctx).Err() }
