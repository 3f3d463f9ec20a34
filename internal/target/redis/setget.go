package redis

import (
	"context"
	"fmt"

	"storebench/internal/target/redis/resp"
	"storebench/internal/workload/setget"
)

// The setget workload (redis-benchmark shaped): a connection of its own
// per load goroutine.

// NewSession implements setget.Pipeliner: a connection of its own,
// through the allocation-free RESP2 client, for redis-benchmark-shaped
// SET/GET pipelines.
func (s *Store) NewSession(ctx context.Context) (setget.Session, error) {
	if s.opt.Username != "" && s.opt.Username != "default" {
		return nil, fmt.Errorf("redis: setget sessions authenticate the default user only, not %q", s.opt.Username)
	}
	c, err := resp.Dial(ctx, s.opt.Addr, s.opt.DB, s.opt.Password, openTimeout)
	if err != nil {
		return nil, fmt.Errorf("redis: setget session to %s: %w", s.opt.Addr, err)
	}
	return c, nil
}
