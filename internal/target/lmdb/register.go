// Package lmdb is the storebench target for LMDB, a copy-on-write B+tree
// read through a memory map, reached through PowerDNS/lmdb-go (which
// bundles the C library, so only cgo is needed). Without cgo the engine is
// registered as unavailable with the reason and the fix.
package lmdb

import "storebench/internal/kv"

var optionNames = []string{"map_size", "no_readahead"}

func init() {
	kv.Register(kv.Engine{
		Name:        "lmdb",
		Title:       "LMDB",
		Kind:        "cgo",
		Open:        openFunc,
		Version:     version(),
		Unavailable: unavailable,
		OptionNames: optionNames,
	})
}
