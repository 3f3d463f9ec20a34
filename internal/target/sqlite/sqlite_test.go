//go:build cgo

package sqlite

import (
	"testing"

	"storebench/internal/kv/kvtest"
)

func TestConformance(t *testing.T) { kvtest.Run(t, "sqlite") }
