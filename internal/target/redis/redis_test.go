package redis_test

import (
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

func TestInfo(t *testing.T) {
	servers.Info(t, "redis", "redis", "redis")
	servers.ModuleVersion(t, "github.com/redis/go-redis/v9", "v9.23.0")
}

// One server serves every subtest.
func TestWithServer(t *testing.T) {
	// Database 9 of the shared server: other packages' tests use 0.
	uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/9"
	open := func(t *testing.T, d kv.Durability) any {
		h := servers.Open(t, "redis", target.Options{URI: uri, Durability: d, Extra: map[string]string{"pool": "8"}})
		t.Cleanup(func() { h.Close() })
		return h
	}
	// The workloads' layouts are checked in their packages (ledger's and
	// ycsb's TestLayoutOnServerTargets, ycsb's TestOnRedis).
	t.Run("Settings", func(t *testing.T) {
		t.Logf("settings: %v", servers.Settings(t, open(t, kv.Sync), "layout.ledger", "batch"))
	})
	t.Run("SetGet", func(t *testing.T) {
		servers.SetGet(t, open(t, kv.Async))
	})
	// Credentials the server refuses (it has no password set) fail Open
	// without the password showing.
	t.Run("RefusedCredentials", func(t *testing.T) {
		servers.OpenFails(t, "redis", servers.WithCredentials(uri, "nobody"))
	})
}

// A sync study is refused on a server that does not fsync every write.
func TestSyncOnAsyncServer(t *testing.T) {
	inst := servertest.Start(t, "redis", kv.Async)
	err := servers.OpenFails(t, "redis", inst.URI)
	if !strings.Contains(err.Error(), "appendfsync") {
		t.Errorf("error does not name the setting: %v", err)
	}
	h := servers.Open(t, "redis", target.Options{URI: inst.URI, Durability: kv.Async})
	defer h.Close()
	if d := servers.Settings(t, h)["durability"]; !strings.Contains(d, "appendfsync no") {
		t.Errorf("durability %q does not report the server's setting", d)
	}
}

func TestUnreachable(t *testing.T) {
	servers.Unreachable(t, "redis", "redis://bench:%s@127.0.0.1:%d/0")
}

func TestBadURI(t *testing.T) {
	err := servers.OpenFails(t, "redis", "redis://bench:"+servers.TestPassword+"@127.0.0.1:6379/notanumber")
	if !strings.Contains(err.Error(), "database") {
		t.Errorf("error does not say what is wrong: %v", err)
	}
}

// A server that accepts connections and never answers fails Open in time.
func TestSilentServer(t *testing.T) {
	servers.Silent(t, "redis", "redis://bench:%s@127.0.0.1:%d/0")
}

// The run's highest concurrency sizes the default pool, so no load
// goroutine of a 64-goroutine sweep level waits for one of 16
// connections; the pool option still wins.
func TestPoolFollowsTheRunsConcurrency(t *testing.T) {
	uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/9"
	for _, c := range []struct {
		conc  int
		extra map[string]string
		want  string
	}{
		{0, nil, "16 connections"},
		{64, nil, "64 connections"},
		{64, map[string]string{"pool": "8"}, "8 connections"},
	} {
		h := servers.Open(t, "redis", target.Options{URI: uri, Durability: kv.Async, Extra: c.extra, Concurrency: c.conc})
		got := h.(kv.Describer).Settings()["pool"]
		h.Close()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("concurrency %d, options %v: pool %q, want %q", c.conc, c.extra, got, c.want)
		}
	}
}
