// Package servertest gives tests a running server: the one `make test`
// started once for the whole suite (its URI in STOREBENCH_TEST_<NAME>_URI),
// or else a fresh instance started for this test and stopped after it. A
// server that cannot be started fails the test: a missing install step
// must show, never hide behind a skip. The one exception is a server no
// package ships (Aerospike), which storebench cannot start: ByURI skips
// a test of it, saying so, unless its variable names one.
package servertest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server"
)

// EnvVar is the variable that carries a shared server's URI; a dash in
// the server's name (ferretdb-pg) is an underscore there, as a shell
// variable's name requires (scripts/test.sh derives it the same way).
func EnvVar(name string) string {
	return "STOREBENCH_TEST_" + strings.ReplaceAll(strings.ToUpper(name), "-", "_") + "_URI"
}

// URI returns the URI of a running server of that name.
func URI(t testing.TB, name string) string {
	t.Helper()
	if uri := os.Getenv(EnvVar(name)); uri != "" {
		return uri
	}
	return Start(t, name, kv.Sync).URI
}

// ByURI returns the URI of a server storebench cannot start (no package
// ships it: Aerospike), from its variable STOREBENCH_TEST_<NAME>_URI;
// without one the test is skipped, saying plainly that it did not run
// and what would run it (form: the URI's form,
// aerospike://host:port/namespace).
func ByURI(t testing.TB, name, form string) string {
	t.Helper()
	if uri := os.Getenv(EnvVar(name)); uri != "" {
		return uri
	}
	t.Skipf("%s: NOT TESTED: no package ships its server and storebench cannot start one; set %s to one (%s) to run this test",
		name, EnvVar(name), form)
	return ""
}

// Start starts a fresh instance in a temporary directory and stops it when
// the test ends.
func Start(t testing.TB, name string, d kv.Durability) *server.Instance {
	t.Helper()
	return StartConfig(t, name, server.Config{Durability: d})
}

// StartConfig is Start with more of the configuration (cache size...);
// cfg.Dir and cfg.Log are set here.
func StartConfig(t testing.TB, name string, cfg server.Config) *server.Instance {
	t.Helper()
	return startIn(t, name, cfg, "storebench-"+name+"-")
}

// StartSpaced is Start in an instance directory whose path has a space,
// a quote and a '#' in it: every path written into the server's
// configuration or command line must reach it whole.
func StartSpaced(t testing.TB, name string, d kv.Durability) *server.Instance {
	t.Helper()
	return startIn(t, name, server.Config{Durability: d}, "storebench "+name+" it's #")
}

func startIn(t testing.TB, name string, cfg server.Config, pattern string) *server.Instance {
	t.Helper()
	s, err := server.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("%s cannot start on this machine: %v", name, err)
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	// Servers that drop privileges (PostgreSQL, MariaDB) need to reach it.
	_ = os.Chmod(dir, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg.Dir, cfg.Log = dir, testWriter{t}
	inst, err := s.Start(ctx, cfg)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
		defer cancel()
		if err := inst.Stop(ctx); err != nil {
			t.Errorf("stopping %s: %v", name, err)
		}
		os.RemoveAll(dir)
	})
	return inst
}

// NoFileHolds fails the test when a file under dir contains secret: a
// generated password must reach the server without being written down.
func NoFileHolds(t testing.TB, dir, secret string) {
	t.Helper()
	if secret == "" {
		t.Fatal("NoFileHolds: empty secret")
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // sockets, vanished files: nothing to read
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		n++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the password", path)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("reading %s: %d files, %v", dir, n, err)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Main is a test package's TestMain that lets the test binary stand in
// for storebench: a server run in-process (FerretDB) is started as
// `<this executable> server-main NAME ...`, which runs that server's
// main; any other invocation runs the tests.
func Main(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "server-main" {
		fn, ok := server.Main(os.Args[2])
		if !ok {
			fmt.Fprintf(os.Stderr, "no server main %q\n", os.Args[2])
			os.Exit(2)
		}
		os.Exit(fn(os.Args[3:]))
	}
	os.Exit(m.Run())
}
