package memcached_test

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/memcached" // registers "memcached"
	"storebench/internal/server/servertest"
)

func port(t *testing.T, uri string) int {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || u.Scheme != "memcached" || u.Hostname() != "127.0.0.1" {
		t.Fatalf("URI %q: want memcached://127.0.0.1:PORT", uri)
	}
	return p
}

func TestSyncWriteReadStop(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	inst := servertest.Start(t, "memcached", kv.Sync)
	t.Logf("started in %s: %s pid %d, settings %v", time.Since(t0), inst.URI, inst.PID, inst.Settings)
	p := port(t, inst.URI)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := memcached.Command(ctx, p, "set storebench:k 7 0 11", "hello world"); err != nil || got != "STORED" {
		t.Fatalf("set: %q, %v", got, err)
	}
	if got, err := memcached.Command(ctx, p, "get storebench:k"); err != nil || got != "VALUE storebench:k 7 11\nhello world\nEND" {
		t.Fatalf("get: %q, %v", got, err)
	}
	// The server really has the memory limit Settings state.
	stats, err := memcached.Command(ctx, p, "stats settings")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, "STAT maxbytes 268435456") || !strings.Contains(stats, "STAT udpport 0") {
		t.Errorf("stats settings:\n%s", stats)
	}
	if inst.Settings["memory_limit"] != "256 MiB (-m 256, storebench's default)" || inst.Settings["durability"] != "sync" ||
		!strings.Contains(inst.Settings["durability_mapping"], "durability not applicable") || inst.Version == "" {
		t.Errorf("settings %v, version %q", inst.Settings, inst.Version)
	}
	if !server.Alive(inst.PID) {
		t.Fatalf("pid %d not alive", inst.PID)
	}
	if st, err := os.Stat(inst.DataDir); err != nil || !st.IsDir() {
		t.Errorf("DataDir %s: %v", inst.DataDir, err)
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
	inst := servertest.Start(t, "memcached", kv.Async)
	if inst.Settings["durability"] != "async" || !strings.HasPrefix(inst.Settings["durability_mapping"], "async: no persistence") {
		t.Errorf("async settings %v", inst.Settings)
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	servertest.PortInUse(t, "memcached", t.TempDir(), 10*time.Second)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	servertest.Installed(t, "memcached")
}

// A study target's cache is memcached's memory limit (-m), and Settings
// say so.
func TestCacheSizesMemoryLimit(t *testing.T) {
	t.Parallel()
	inst := servertest.StartConfig(t, "memcached", server.Config{Durability: kv.Async, MemoryBytes: 40 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stats, err := memcached.Command(ctx, port(t, inst.URI), "stats")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, "STAT limit_maxbytes 41943040\r") && !strings.Contains(stats, "STAT limit_maxbytes 41943040\n") {
		t.Errorf("stats: no limit_maxbytes 41943040:\n%s", stats)
	}
	if s := inst.Settings["memory_limit"]; s != "40 MiB (-m 40, the target's cache)" {
		t.Errorf("memory_limit setting %q", s)
	}
}

// An instance directory whose path has a space, a quote and a '#' in it
// (--out "/tmp/x/with space", a STOREBENCH_HOME with one): the server
// starts there, its readiness probe passes, and it answers.
func TestStartsInDirectoryWithSpace(t *testing.T) {
	inst := servertest.StartSpaced(t, "memcached", kv.Sync)
	if !strings.Contains(inst.DataDir+inst.LogPath, " ") {
		t.Fatalf("instance %q, log %q: no space", inst.DataDir, inst.LogPath)
	}
}
