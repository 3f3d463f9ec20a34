package postgres_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/server"
	_ "storebench/internal/server/postgres" // registers "postgres"
	"storebench/internal/server/servertest"
)

func TestSyncWriteReadStop(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	inst := servertest.Start(t, "postgres", kv.Sync)
	t.Logf("started in %s: %s pid %d, settings %v", time.Since(t0), redact.Text(inst.URI), inst.PID, inst.Settings)
	if !strings.HasPrefix(inst.URI, "postgres://storebench:") || !strings.HasSuffix(inst.URI, "/storebench?sslmode=disable") {
		t.Errorf("URI %q", inst.URI)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, inst.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, v bytea NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO kv VALUES ($1, $2)", "key", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var v []byte
	if err := conn.QueryRow(ctx, "SELECT v FROM kv WHERE k = $1", "key").Scan(&v); err != nil || string(v) != "hello" {
		t.Fatalf("read back %q, %v", v, err)
	}
	// The server really runs with what Settings state.
	for name, want := range map[string]string{"synchronous_commit": "on", "fsync": "on", "shared_buffers": "128MB", "listen_addresses": "127.0.0.1"} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	conn.Close(ctx)
	if inst.Settings["synchronous_commit"] != "on" || inst.Settings["durability"] != "sync" ||
		!strings.HasPrefix(inst.Settings["durability_mapping"], "sync: ") || !strings.HasPrefix(inst.Version, "15.") {
		t.Errorf("settings %v, version %q", inst.Settings, inst.Version)
	}
	if !server.Alive(inst.PID) {
		t.Fatalf("pid %d not alive", inst.PID)
	}
	if _, err := os.Stat(filepath.Join(inst.DataDir, "PG_VERSION")); err != nil {
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
	// A fast shutdown is clean: the log says so.
	if b, _ := os.ReadFile(inst.LogPath); !strings.Contains(string(b), "database system is shut down") {
		t.Errorf("log does not show a clean shutdown:\n%s", b)
	}
}

func TestAsyncSettings(t *testing.T) {
	t.Parallel()
	inst := servertest.Start(t, "postgres", kv.Async)
	if inst.Settings["synchronous_commit"] != "off" || inst.Settings["durability"] != "async" ||
		!strings.HasPrefix(inst.Settings["durability_mapping"], "async: ") {
		t.Errorf("async settings %v", inst.Settings)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, inst.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got string
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || got != "off" {
		t.Errorf("synchronous_commit = %q, %v", got, err)
	}
}

// instanceDir is a fresh directory the postgres user can reach.
func instanceDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "storebench-postgres-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	servertest.PortInUse(t, "postgres", instanceDir(t), 15*time.Second)
}

func TestUnreachableDir(t *testing.T) {
	t.Parallel()
	parent := instanceDir(t)
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := server.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := s.Start(context.Background(), server.Config{Dir: filepath.Join(parent, "inst"), Durability: kv.Sync})
	if os.Geteuid() != 0 {
		// Not root: the server runs as us, and reaches what we reach.
		if err != nil {
			t.Fatal(err)
		}
		if err := inst.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "user postgres cannot reach") || !strings.Contains(err.Error(), "chmod o+x "+parent) {
		t.Fatalf("got %v; want a clear traversal error", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	servertest.Installed(t, "postgres")
}

// Over TCP, PostgreSQL asks for the password generated for this instance
// (scram-sha-256): none, or another instance's, is refused. No file of the
// instance holds it.
func TestGeneratedPassword(t *testing.T) {
	t.Parallel()
	a := servertest.Start(t, "postgres", kv.Async)
	b := servertest.Start(t, "postgres", kv.Async)
	ua, ub := mustParse(t, a.URI), mustParse(t, b.URI)
	pa, _ := ua.User.Password()
	pb, _ := ub.User.Password()
	if len(pa) < 32 || pa == pb {
		t.Fatalf("passwords: %d chars, equal: %v", len(pa), pa == pb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := func(pw *url.Userinfo) error {
		u := *ua
		u.User = pw
		conn, err := pgx.Connect(ctx, u.String())
		if err == nil {
			conn.Close(ctx)
		}
		return err
	}
	if err := login(url.User("storebench")); err == nil || !strings.Contains(err.Error(), "password") {
		t.Errorf("TCP login without a password: %v; want refused", err)
	}
	if err := login(url.UserPassword("storebench", pb)); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("TCP login with another instance's password: %v; want refused", err)
	}
	if err := login(url.UserPassword("postgres", pa)); err == nil {
		t.Errorf("TCP login as postgres succeeded")
	}
	if err := login(ua.User); err != nil {
		t.Errorf("TCP login with the password: %v", err)
	}
	var method string
	conn, err := pgx.Connect(ctx, a.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, "SELECT auth_method FROM pg_hba_file_rules WHERE type = 'host' AND 'all' = ANY(user_name) AND address = '127.0.0.1'").Scan(&method); err != nil || method != "scram-sha-256" {
		t.Errorf("pg_hba for host 127.0.0.1: %q, %v", method, err)
	}
	for _, s := range a.Settings {
		if strings.Contains(s, pa) {
			t.Errorf("a setting holds the password: %q", s)
		}
	}
	servertest.NoFileHolds(t, filepath.Dir(a.DataDir), pa)
}

func mustParse(t *testing.T, uri string) *url.URL {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(redact.Text(uri), err)
	}
	return u
}

// A study target's cache sizes shared_buffers, and Settings say so.
func TestCacheSizesSharedBuffers(t *testing.T) {
	t.Parallel()
	inst := servertest.StartConfig(t, "postgres", server.Config{Durability: kv.Async, MemoryBytes: 48 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, inst.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got string
	if err := conn.QueryRow(ctx, "SHOW shared_buffers").Scan(&got); err != nil || got != "48MB" {
		t.Errorf("shared_buffers = %q, %v; want 48MB", got, err)
	}
	if s := inst.Settings["shared_buffers"]; s != "48 MiB (the target's cache)" {
		t.Errorf("shared_buffers setting %q", s)
	}
}

// A data and socket directory whose path has a space, a quote and a '#'
// (--out "/tmp/x/with space", a STOREBENCH_HOME with one): PostgreSQL
// starts, its readiness probe connects over the socket, and so does a
// client.
func TestStartsInDirectoryWithSpace(t *testing.T) {
	t.Parallel()
	inst := servertest.StartSpaced(t, "postgres", kv.Sync)
	if !strings.Contains(inst.DataDir, " ") {
		t.Fatalf("data dir %q has no space", inst.DataDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, inst.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var dir string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil || dir != inst.DataDir {
		t.Errorf("data_directory %q, %v; want %q", dir, err, inst.DataDir)
	}
}

// A start that fails (here on a shared_buffers PostgreSQL refuses; on a
// full disk, initdb's 32 MB) removes the data directory it made.
func TestFailedStartRemovesItsDataDir(t *testing.T) {
	t.Parallel()
	s, err := server.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(instanceDir(t), "inst")
	inst, err := s.Start(context.Background(), server.Config{Dir: dir, Durability: kv.Sync, MemoryBytes: 1 << 60})
	if err == nil {
		_ = inst.Stop(context.Background())
		t.Fatal("postgres started with shared_buffers of an EiB")
	}
	if _, serr := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(serr) {
		t.Errorf("a failed start (%v) left its data directory: stat: %v", err, serr)
	}
}
