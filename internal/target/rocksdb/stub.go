//go:build !rocksdb || !cgo

package rocksdb

import (
	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    func(kv.Options) (kv.Store, error)
	unavailable = targetkit.Unavailable("rocksdb", "librocksdb-dev")
)

func version() string { return targetkit.NotBuilt }
