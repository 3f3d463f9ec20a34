// Package rocksdb is the storebench target for RocksDB, reached through
// grocksdb and the system librocksdb. It is compiled in only with the
// "rocksdb" build tag and cgo; otherwise the engine is registered as
// unavailable with the reason and the fix.
package rocksdb

import "storebench/internal/kv"

var optionNames = []string{"bloom_bits_per_key", "write_buffer_bytes", "compression"}

// libraryVersion is the RocksDB release the build is known to link: the
// Debian 12 package librocksdb-dev 7.8.3. RocksDB exposes its version only
// through C++ (rocksdb/version.h), which cgo cannot include, so it is
// written here and checked at run time: Open reads the version RocksDB
// records in its OPTIONS file into Settings()["library_version"], and the
// package test fails if the two ever disagree.
const libraryVersion = "7.8.3"

func init() {
	kv.Register(kv.Engine{
		Name:        "rocksdb",
		Title:       "RocksDB",
		Kind:        "cgo",
		Open:        openFunc,
		Version:     version(),
		Unavailable: unavailable,
		OptionNames: optionNames,
		More:        []string{"compaction"}, // kv.Compacter
	})
}
