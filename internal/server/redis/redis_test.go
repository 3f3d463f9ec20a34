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
	"storebench/internal/redact"
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

// password is the one in a managed server's URI.
func password(t *testing.T, uri string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		t.Fatalf("URI %s has no password", redact.Text(uri))
	}
	return pw
}

func TestSyncWriteReadStop(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	inst := servertest.Start(t, "redis", kv.Sync)
	t.Logf("started in %s: %s pid %d, settings %v", time.Since(t0), inst.URI, inst.PID, inst.Settings)
	p := port(t, inst.URI)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got, err := redis.Command(ctx, p, password(t, inst.URI), "SET", "storebench:k", "hello world"); err != nil || got != "+OK" {
		t.Fatalf("SET: %q, %v", got, err)
	}
	if got, err := redis.Command(ctx, p, password(t, inst.URI), "GET", "storebench:k"); err != nil || got != "hello world" {
		t.Fatalf("GET: %q, %v", got, err)
	}
	// The server really runs with the policy Settings state.
	if got, err := redis.Command(ctx, p, password(t, inst.URI), "CONFIG", "GET", "appendfsync"); err != nil || got != "appendfsync always" {
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
	if got, err := redis.Command(ctx, port(t, inst.URI), password(t, inst.URI), "CONFIG", "GET", "appendfsync"); err != nil || got != "appendfsync no" {
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

// Each instance gets its own random password (requirepass), which Redis
// enforces, and which no file of the instance holds: it reaches Redis on
// standard input.
func TestGeneratedPassword(t *testing.T) {
	t.Parallel()
	a := servertest.Start(t, "redis", kv.Async)
	b := servertest.Start(t, "redis", kv.Async)
	pa, pb := password(t, a.URI), password(t, b.URI)
	if pa == pb || len(pa) < 32 {
		t.Fatalf("passwords %d chars, equal: %v", len(pa), pa == pb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := port(t, a.URI)
	if _, err := redis.Command(ctx, p, "", "SET", "k", "v"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without a password: %v; want NOAUTH", err)
	}
	if _, err := redis.Command(ctx, p, pb, "SET", "k", "v"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("SET with another instance's password: %v; want WRONGPASS", err)
	}
	if got, err := redis.Command(ctx, p, pa, "SET", "k", "v"); err != nil || got != "+OK" {
		t.Errorf("SET with the password: %q, %v", got, err)
	}
	for _, s := range a.Settings {
		if strings.Contains(s, pa) {
			t.Errorf("a setting holds the password: %q", s)
		}
	}
	servertest.NoFileHolds(t, filepath.Dir(a.DataDir), pa)
}

// A study target's cache sizes maxmemory; the policy is noeviction, and
// Settings say both.
func TestCacheSizesMaxmemory(t *testing.T) {
	t.Parallel()
	inst := servertest.StartConfig(t, "redis", server.Config{Durability: kv.Async, MemoryBytes: 48 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, pw := port(t, inst.URI), password(t, inst.URI)
	if got, err := redis.Command(ctx, p, pw, "CONFIG", "GET", "maxmemory"); err != nil || got != "maxmemory 50331648" {
		t.Errorf("CONFIG GET maxmemory: %q, %v", got, err)
	}
	if got, err := redis.Command(ctx, p, pw, "CONFIG", "GET", "maxmemory-policy"); err != nil || got != "maxmemory-policy noeviction" {
		t.Errorf("CONFIG GET maxmemory-policy: %q, %v", got, err)
	}
	if s := inst.Settings["maxmemory"]; !strings.HasPrefix(s, "48 MiB") || !strings.Contains(s, "noeviction") {
		t.Errorf("maxmemory setting %q", s)
	}
}

// An instance directory whose path has a space, a quote and a '#' in it
// (--out "/tmp/x/with space", a STOREBENCH_HOME with one): the server
// starts there, its readiness probe passes, and it answers.
func TestStartsInDirectoryWithSpace(t *testing.T) {
	inst := servertest.StartSpaced(t, "redis", kv.Sync)
	if !strings.Contains(inst.DataDir+inst.LogPath, " ") {
		t.Fatalf("instance %q, log %q: no space", inst.DataDir, inst.LogPath)
	}
}
