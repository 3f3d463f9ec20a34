// Package leveldb is the storebench target for Google's C++ LevelDB,
// reached through levigo and the system libleveldb. It is compiled in only
// with the "leveldb" build tag and cgo; otherwise the engine is registered
// as unavailable with the reason and the fix.
package leveldb

import "storebench/internal/kv"

var optionNames = []string{"bloom_bits_per_key", "write_buffer_bytes", "compression"}

func init() {
	kv.Register(kv.Engine{
		Name:        "leveldb",
		Title:       "LevelDB (C++)",
		Kind:        "cgo",
		Open:        openFunc,
		Version:     version(),
		Unavailable: unavailable,
		OptionNames: optionNames,
		More:        []string{"compaction"}, // kv.Compacter
		Default:     kv.Async,
		DefaultNote: "LevelDB's default write: WriteOptions sync=false (handed to the OS, never fsynced)",
	})
}
