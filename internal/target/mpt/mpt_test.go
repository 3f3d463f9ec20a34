package mpt

import (
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/adscheck"
)

func TestConformance(t *testing.T) { adscheck.Conformance(t, Open, kv.Async, kv.Sync) }

func TestRejectsBadOptions(t *testing.T) {
	adscheck.RejectsBadOptions(t, Open,
		target.Options{Dir: t.TempDir()}, // no durability
		target.Options{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"bloom": "1"}},
		target.Options{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"clean_cache_bytes": "lots"}},
	)
}
