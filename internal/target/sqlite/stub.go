//go:build !cgo

package sqlite

import (
	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    func(kv.Options) (kv.Store, error)
	unavailable = targetkit.Unavailable("", "")
)

func version() string { return targetkit.NotBuilt }
