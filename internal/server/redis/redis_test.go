package redis_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/redis" // registers "redis"
	"storebench/internal/server/servertest"
)

func port(t *testing.T, uri string) int {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || u.Hostname() != "127.0.0.1" || u.Scheme != "redis" || u.Path != "/0" {
		t.Fatalf("URI %q: want redis://127.0.0.1:PORT/0", uri)
	}
	return p
}

func TestSyncWriteReadStop(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	inst := servertest.Start(t, "redis", kv.Sync)
	t.Logf("started in %s: %s pid %d, settings %v", time.Since(t0), inst.URI, inst.PID, inst.Settings)
	p := port(t, inst.URI)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got, err := redis.Command(ctx, p, "SET", "storebench:k", "hello world"); err != nil || got != "+OK" {
		t.Fatalf("SET: %q, %v", got, err)
	}
	if got, err := redis.Command(ctx, p, "GET", "storebench:k"); err != nil || got != "hello world" {
		t.Fatalf("GET: %q, %v", got, err)
	}
	// The server really runs with the policy Settings state.
	if got, err := redis.Command(ctx, p, "CONFIG", "GET", "appendfsync"); err != nil || got != "appendfsync always" {
		t.Fatalf("CONFIG GET appendfsync: %q, %v", got, err)
	}
	if inst.Settings["appendfsync"] != "always" || !strings.HasPrefix(inst.Settings["durability_mapping"], "sync: ") ||
		inst.Settings["durability"] != "sync" || inst.Settings["version"] == "" || inst.Version == "" {
		t.Errorf("settings %v", inst.Settings)
	}
	if !server.Alive(inst.PID) {
		t.Fatalf("pid %d not alive", inst.PID)
	}
	// The AOF lands in DataDir: that is what the disk measurement reads.
	if _, err := os.Stat(filepath.Join(inst.DataDir, "appendonlydir")); err != nil {
		t.Errorf("no AOF directory in DataDir: %v", err)
	}
	if _, err := os.Stat(inst.LogPath); err != nil {
		t.Errorf("log: %v", err)
	}
	t1 := time.Now()
	if err := inst.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(t1))
	if server.Alive(inst.PID) {
		t.Fatalf("pid %d alive after Stop", inst.PID)
	}
}

func TestAsyncSettings(t *testing.T) {
	t.Parallel()
	inst := servertest.Start(t, "redis", kv.Async)
	if inst.Settings["appendfsync"] != "no" || inst.Settings["durability"] != "async" ||
		!strings.HasPrefix(inst.Settings["durability_mapping"], "async: ") {
		t.Errorf("async settings %v", inst.Settings)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := redis.Command(ctx, port(t, inst.URI), "CONFIG", "GET", "appendfsync"); err != nil || got != "appendfsync no" {
		t.Fatalf("CONFIG GET appendfsync: %q, %v", got, err)
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	servertest.PortInUse(t, "redis", t.TempDir(), 10*time.Second)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	servertest.Installed(t, "redis")
}
