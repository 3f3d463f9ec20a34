//go:build moeingads && cgo

package moeingads

import (
	"testing"

	"storebench/internal/ads"
	"storebench/internal/ads/adstest"
	"storebench/internal/kv"
	"storebench/internal/target"
)

// MoeingADS always syncs, so one durability class is enough here.
func TestConformance(t *testing.T) {
	adstest.Run(t, func(t *testing.T, dir string) ads.Store {
		s, err := Open(target.Options{Dir: dir, Durability: kv.Sync})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestRejectsBadOptions(t *testing.T) {
	for _, o := range []target.Options{
		{Dir: t.TempDir()}, // no durability
		{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"cache": "1"}},
		{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"root_cache": "maybe"}},
	} {
		if s, err := Open(o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}
