//go:build moeingads && cgo

package moeingads

import (
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/adscheck"
)

// MoeingADS always syncs, so one durability class is enough here.
func TestConformance(t *testing.T) { adscheck.Run(t, Open, kv.Sync) }

func TestRejectsBadOptions(t *testing.T) {
	adscheck.RejectsBadOptions(t, Open,
		target.Options{Dir: t.TempDir()}, // no durability
		target.Options{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"cache": "1"}},
		target.Options{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"root_cache": "maybe"}},
	)
}
