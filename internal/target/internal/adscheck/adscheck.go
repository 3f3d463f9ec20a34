// Package adscheck holds the tests every ads.Store target (IAVL, MPT,
// MoeingADS) runs on its Open: adstest's conformance suite under each
// durability class it supports, and the refusal of bad options.
package adscheck

import (
	"testing"

	"storebench/internal/ads"
	"storebench/internal/ads/adstest"
	"storebench/internal/kv"
	"storebench/internal/target"
)

// Conformance runs adstest's suite on stores that open opens in a fresh
// directory, once per durability class in ds, each as a subtest named by
// the class.
func Conformance[S ads.Store](t *testing.T, open func(target.Options) (S, error), ds ...kv.Durability) {
	for _, d := range ds {
		t.Run(string(d), func(t *testing.T) { Run(t, open, d) })
	}
}

// Run runs adstest's suite on stores that open opens in a fresh
// directory under durability d.
func Run[S ads.Store](t *testing.T, open func(target.Options) (S, error), d kv.Durability) {
	adstest.Run(t, func(t *testing.T, dir string) ads.Store {
		s, err := open(target.Options{Dir: dir, Durability: d})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// RejectsBadOptions checks that open refuses each of opts (and closes a
// store it opened all the same).
func RejectsBadOptions[S interface{ Close() error }](t *testing.T, open func(target.Options) (S, error), opts ...target.Options) {
	t.Helper()
	for _, o := range opts {
		if s, err := open(o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}
