package memcached

import "context"

// Reset drops every item (flush_all), for a fresh ladder step.
func (s *Store) Reset(context.Context) error { return s.c.FlushAll() }
