package memcached

import "context"

// Reset drops every item (flush_all), for a fresh ladder step.
func (s *Store) Reset(ctx context.Context) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	return s.c.FlushAll()
}
