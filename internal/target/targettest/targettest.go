// Package targettest opens registered targets for tests of workloads.
package targettest

import (
	"io"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
)

// Open opens a fresh embedded target in a temporary directory, closed at
// the end of the test. A target this binary cannot open fails the test
// with the reason (the build tag or package it needs): `make test` builds
// every engine, and a missing one must show, not hide behind a skip.
func Open(t testing.TB, name string, d kv.Durability) io.Closer {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if info.Open == nil {
		t.Fatalf("%s is not built into this test binary: %s (make test sets the build tags)", name, info.Unavailable)
	}
	h, err := info.Open(target.Options{Dir: t.TempDir(), Durability: d})
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
