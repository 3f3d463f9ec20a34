//go:build !moeingads || !cgo

package moeingads

import (
	"io"

	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    func(target.Options) (io.Closer, error)
	unavailable = targetkit.Unavailable("moeingads", "librocksdb-dev g++")
)

func version() string { return targetkit.NotBuilt }
