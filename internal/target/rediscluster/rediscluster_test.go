package rediscluster_test

import (
	"testing"

	_ "storebench/internal/target/rediscluster"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "redis-cluster", "redis-cluster", "redis-cluster")
	servers.ModuleVersion(t, "github.com/redis/go-redis/v9", "v9.23.0")
}

// A node that cannot be reached fails Open within the bound, naming the
// target and the redacted URI, without the password.
func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "redis-cluster", "redis-cluster://:%s@127.0.0.1:%d")
}

// A database other than 0, or a node without a port, is refused.
func TestBadURI(t *testing.T) {
	for _, uri := range []string{"redis-cluster://127.0.0.1:7000/3", "redis-cluster://127.0.0.1"} {
		servers.OpenFails(t, "redis-cluster", uri)
	}
}
