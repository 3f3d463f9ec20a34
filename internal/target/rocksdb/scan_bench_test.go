//go:build rocksdb && cgo

package rocksdb

import (
	"encoding/binary"
	"testing"

	"storebench/internal/kv"
)

// BenchmarkScanPastTombstones is a scan of an empty range [a, b) that
// ends where 500,000 deleted keys begin: with RocksDB told the upper
// bound it stops there; checked only in Go, the iterator first skips
// every tombstone to the next live key (geo's timeline of a user who does
// not exist after its point-by-point GC). docs/performance.md quotes it.
func BenchmarkScanPastTombstones(b *testing.B) {
	s, err := Open(kv.Options{Dir: b.TempDir(), Durability: kv.Async})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 500000
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte("b"), uint64(i)) }
	for i := 0; i < n; i++ {
		if err := s.Put(key(i), []byte("v")); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if err := s.Delete(key(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Put([]byte("c"), []byte("live")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		found := 0
		if err := s.Scan([]byte("a"), []byte("b"), func(_, _ []byte) bool { found++; return true }); err != nil {
			b.Fatal(err)
		}
		if found != 0 {
			b.Fatalf("found %d keys in an empty range", found)
		}
	}
}
