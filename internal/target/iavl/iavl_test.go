package iavl

import (
	"testing"

	"storebench/internal/ads"
	"storebench/internal/ads/adstest"
	"storebench/internal/kv"
	"storebench/internal/target"
)

func TestConformance(t *testing.T) {
	for _, d := range []kv.Durability{kv.Async, kv.Sync} {
		t.Run(string(d), func(t *testing.T) {
			adstest.Run(t, func(t *testing.T, dir string) ads.Store {
				s, err := Open(target.Options{Dir: dir, Durability: d})
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

func TestRejectsBadOptions(t *testing.T) {
	for _, o := range []target.Options{
		{Dir: t.TempDir()}, // no durability
		{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"bloom": "1"}},
		{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"node_cache_nodes": "lots"}},
	} {
		if s, err := Open(o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}
