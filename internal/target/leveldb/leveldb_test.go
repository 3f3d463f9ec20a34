//go:build leveldb && cgo

package leveldb

import (
	"testing"

	"storebench/internal/kv/kvtest"
)

func TestConformance(t *testing.T) { kvtest.Run(t, "leveldb") }
