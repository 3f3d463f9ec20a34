//go:build !leveldb || !cgo

package leveldb

import (
	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    func(kv.Options) (kv.Store, error)
	unavailable = targetkit.Unavailable("leveldb", "libleveldb-dev")
)

func version() string { return targetkit.NotBuilt }
