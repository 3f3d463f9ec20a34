package pebble

import (
	"testing"

	"storebench/internal/kv/kvtest"
)

func TestConformance(t *testing.T) { kvtest.Run(t, "pebble") }
