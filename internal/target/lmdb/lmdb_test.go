//go:build cgo

package lmdb

import (
	"testing"

	"storebench/internal/kv/kvtest"
)

func TestConformance(t *testing.T) { kvtest.Run(t, "lmdb") }
