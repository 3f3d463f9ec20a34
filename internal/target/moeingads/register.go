// Package moeingads is the storebench target for MoeingADS, the
// authenticated store of smartBCH and successor of OnvaKV, which seed 001
// measured (OnvaKV itself is not served by the Go module proxy). It is an
// ads.Store built on MoeingADS's RootStore -> TrunkStore -> RabbitStore
// layers, as the library's own benchmarks use it.
//
// MoeingADS needs cgo, a C++ compiler (its index is a C++ B-tree) and the
// system RocksDB (through third_party/gorocksdb, a stand-in for the
// tecbot/gorocksdb API on grocksdb). It is compiled in only with the
// "moeingads" build tag, which scripts/build-tags.sh sets when those are
// installed; otherwise the target is registered as unavailable with the
// reason and the fix.
package moeingads

import (
	"storebench/internal/ads"
	"storebench/internal/target"
)

// Title is the name reports use: the seed calls the engine OnvaKV.
const Title = "MoeingADS (successor of OnvaKV)"

var optionNames = []string{"root_cache"}

func init() {
	target.RegisterEmbedded(target.Info{
		Name:        "moeingads",
		Title:       Title,
		Kind:        "cgo",
		Version:     version(),
		Unavailable: unavailable,
		OptionNames: optionNames,
		Provides:    ads.Provides,
		Open:        openFunc,
	})
}
