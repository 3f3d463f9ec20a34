package redis

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"

	"storebench/internal/target/internal/targetkit"
)

// cancelHook makes a cancelled context interrupt the commands that wait on
// the server (see targetkit.ConnWatch): go-redis itself bounds them only
// by its read timeout.
type cancelHook struct{ w *targetkit.ConnWatch }

func (h cancelHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return h.w.Track(c), nil
	}
}

func (h cancelHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.w.Watch(ctx)
		return next(ctx, cmd)
	}
}

func (h cancelHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.w.Watch(ctx)
		return next(ctx, cmds)
	}
}
