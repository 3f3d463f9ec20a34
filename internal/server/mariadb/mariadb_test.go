package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/server"
	_ "storebench/internal/server/mariadb" // registers "mariadb"
	"storebench/internal/server/servertest"
)

// open turns the instance URI into a database/sql handle.
func open(t *testing.T, uri string) *sql.DB {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if u.Scheme != "mysql" || u.Hostname() != "127.0.0.1" || u.User.Username() != "storebench" || len(pw) < 32 || u.Path != "/storebench" {
		t.Fatalf("URI %q: want mysql://storebench:PASSWORD@127.0.0.1:PORT/storebench", redact.Text(uri))
	}
	return login(t, u.Host, u.User.Username(), pw)
}

// login opens a database/sql handle as user with password.
func login(t *testing.T, addr, user, pw string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, pw, "tcp", addr, "storebench"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func variable(t *testing.T, ctx context.Context, db *sql.DB, name string) string {
	t.Helper()
	var v string
	// A system variable is an identifier, not a parameter: the names are
	// the test's own constants.
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&v); err != nil {
		t.Fatalf("SHOW VARIABLES %s: %v", name, err)
	}
	return v
}

func TestSyncWriteReadStop(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	inst := servertest.Start(t, "mariadb", kv.Sync)
	t.Logf("started in %s: %s pid %d, settings %v", time.Since(t0), redact.Text(inst.URI), inst.PID, inst.Settings)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := open(t, inst.URI)
	if _, err := db.ExecContext(ctx, "CREATE TABLE kv (k VARCHAR(64) PRIMARY KEY, v BLOB NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO kv VALUES (?, ?)", "key", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var v []byte
	if err := db.QueryRowContext(ctx, "SELECT v FROM kv WHERE k = ?", "key").Scan(&v); err != nil || string(v) != "hello" {
		t.Fatalf("read back %q, %v", v, err)
	}
	// The server really runs with what Settings state.
	for name, want := range map[string]string{"innodb_flush_log_at_trx_commit": "1", "log_bin": "0", "sync_binlog": "0",
		"innodb_buffer_pool_size": "134217728", "bind_address": "127.0.0.1", "innodb_flush_method": "O_DIRECT"} {
		if got := variable(t, ctx, db, name); got != want {
			t.Errorf("%s = %q; want %q", name, got, want)
		}
	}
	db.Close()
	if inst.Settings["innodb_flush_log_at_trx_commit"] != "1" || inst.Settings["durability"] != "sync" ||
		!strings.HasPrefix(inst.Settings["durability_mapping"], "sync: ") || !strings.HasPrefix(inst.Version, "10.") {
		t.Errorf("settings %v, version %q", inst.Settings, inst.Version)
	}
	if !server.Alive(inst.PID) {
		t.Fatalf("pid %d not alive", inst.PID)
	}
	if _, err := os.Stat(filepath.Join(inst.DataDir, "storebench", "kv.ibd")); err != nil {
		t.Errorf("the table is not in DataDir: %v", err)
	}
	t1 := time.Now()
	if err := inst.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(t1))
	if server.Alive(inst.PID) {
		t.Fatalf("pid %d alive after Stop", inst.PID)
	}
	if b, _ := os.ReadFile(inst.LogPath); !strings.Contains(string(b), "Shutdown complete") {
		t.Errorf("log does not show a clean shutdown:\n%s", b)
	}
}

func TestAsyncSettings(t *testing.T) {
	t.Parallel()
	inst := servertest.Start(t, "mariadb", kv.Async)
	if inst.Settings["innodb_flush_log_at_trx_commit"] != "2" || inst.Settings["durability"] != "async" ||
		!strings.HasPrefix(inst.Settings["durability_mapping"], "async: ") {
		t.Errorf("async settings %v", inst.Settings)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := variable(t, ctx, open(t, inst.URI), "innodb_flush_log_at_trx_commit"); got != "2" {
		t.Errorf("innodb_flush_log_at_trx_commit = %q", got)
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "storebench-mariadb-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	servertest.PortInUse(t, "mariadb", dir, 20*time.Second)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	servertest.Installed(t, "mariadb")
}

// The account storebench gets a random password per instance, which the
// server enforces over TCP; the init file that set it is gone once the
// server runs, and no file of the instance holds the password.
func TestGeneratedPassword(t *testing.T) {
	t.Parallel()
	a := servertest.Start(t, "mariadb", kv.Async)
	b := servertest.Start(t, "mariadb", kv.Async)
	ua, _ := url.Parse(a.URI)
	ub, _ := url.Parse(b.URI)
	pa, _ := ua.User.Password()
	pb, _ := ub.User.Password()
	if len(pa) < 32 || pa == pb || pa == "storebench" {
		t.Fatalf("passwords: %d chars, equal: %v", len(pa), pa == pb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct{ user, pw string }{{"storebench", ""}, {"storebench", pb}, {"storebench", "storebench"}, {"root", ""}, {"root", pa}} {
		err := login(t, ua.Host, c.user, c.pw).PingContext(ctx)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Errorf("TCP login as %s with a wrong or no password: %v; want access denied (1045)", c.user, err)
		}
	}
	if err := open(t, a.URI).PingContext(ctx); err != nil {
		t.Errorf("TCP login with the password: %v", err)
	}
	dir := filepath.Dir(a.DataDir)
	if _, err := os.Stat(filepath.Join(dir, "init.sql")); !os.IsNotExist(err) {
		t.Errorf("init.sql left behind: %v", err)
	}
	for _, s := range a.Settings {
		if strings.Contains(s, pa) {
			t.Errorf("a setting holds the password: %q", s)
		}
	}
	servertest.NoFileHolds(t, dir, pa)
}

// A study target's cache sizes the InnoDB buffer pool, and Settings state
// what the server has.
func TestCacheSizesBufferPool(t *testing.T) {
	t.Parallel()
	inst := servertest.StartConfig(t, "mariadb", server.Config{Durability: kv.Async, MemoryBytes: 64 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := variable(t, ctx, open(t, inst.URI), "innodb_buffer_pool_size"); got != "67108864" {
		t.Errorf("innodb_buffer_pool_size = %s; want 67108864", got)
	}
	if s := inst.Settings["innodb_buffer_pool_size"]; !strings.HasPrefix(s, "64 MiB (the target's cache") {
		t.Errorf("innodb_buffer_pool_size setting %q", s)
	}
}

// An instance directory whose path has a space, a quote and a '#' in it
// (--out "/tmp/x/with space", a STOREBENCH_HOME with one): the server
// starts there, its readiness probe passes, and it answers.
func TestStartsInDirectoryWithSpace(t *testing.T) {
	inst := servertest.StartSpaced(t, "mariadb", kv.Sync)
	if !strings.Contains(inst.DataDir+inst.LogPath, " ") {
		t.Fatalf("instance %q, log %q: no space", inst.DataDir, inst.LogPath)
	}
}
