//go:build rocksdb && cgo

package rocksdb

import (
	"testing"

	"storebench/internal/kv"
	"storebench/internal/kv/kvtest"
)

func TestConformance(t *testing.T) { kvtest.Run(t, "rocksdb") }

// libraryVersion is written by hand (see register.go); the version RocksDB
// records on open must match it, or the reports would state a wrong one.
func TestLibraryVersion(t *testing.T) {
	s, err := Open(kv.Options{Dir: t.TempDir(), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.(kv.Describer).Settings()["library_version"]; got != libraryVersion {
		t.Fatalf("linked RocksDB is %q but libraryVersion says %q: update register.go", got, libraryVersion)
	}
}
