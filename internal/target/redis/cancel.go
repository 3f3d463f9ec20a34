package redis

import (
	"context"
	"net"
	"syscall"

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
		return checkable(h.w.Track(c), c), nil
	}
}

// checkable gives go-redis's pool the socket of a tracked connection
// (tracked: the watch's wrapper; c: what go-redis dialed). Before it
// hands out an idle connection the pool peeks at its socket to drop one
// the server has closed (CLIENT KILL, a restart, an idle timeout), and it
// finds the socket through syscall.Conn on the connection itself only
// (go-redis v9.23.0 internal/pool/conn_check.go: it deliberately does not
// unwrap NetConn). The watch's wrapper has no SyscallConn, so the check
// passed every dead connection: each took a command that read EOF, and
// with more of them than go-redis's 3 retries the command failed with EOF
// (tripcache's TestRedisCache in make test: "verify trip 403: EOF", while
// another package's test killed the shared server's clients). A TLS
// connection has no syscall.Conn of its own and stays unchecked, as it
// would without the watch.
func checkable(tracked, c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return tracked
	}
	return &checkableConn{Conn: tracked, sc: sc}
}

// checkableConn is a tracked connection (Close leaves the watch) that
// exposes its socket for the pool's liveness check.
type checkableConn struct {
	net.Conn
	sc syscall.Conn
}

func (c *checkableConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// NetConn is the tracked connection's, for libraries that unwrap.
func (c *checkableConn) NetConn() net.Conn { return c.Conn }

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
