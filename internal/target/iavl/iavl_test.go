package iavl

import (
	"bytes"
	"strings"
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
		target.Options{Dir: t.TempDir(), Durability: kv.Async, Extra: map[string]string{"node_cache_nodes": "lots"}},
	)
}

// iavl-nofast is the seed's IAVL: reads walk the tree, IAVL keeps no
// fast index; iavl keeps one (the Cosmos SDK default). Both read back
// what they wrote, and both give the same root (fast storage is an index
// beside the tree, not part of it).
func TestFastStorageOnAndOff(t *testing.T) {
	var roots [2][]byte
	for i, c := range []struct {
		target string
		want   bool
	}{{"iavl", true}, {"iavl-nofast", false}} {
		info, err := target.Lookup(c.target)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := info.Open(target.Options{Dir: t.TempDir(), Durability: kv.Async})
		if err != nil {
			t.Fatal(err)
		}
		s := cl.(*Store)
		for k := 0; k < 100; k++ {
			if err := s.Set([]byte{byte(k)}, []byte{byte(k), 1}); err != nil {
				t.Fatal(err)
			}
		}
		if roots[i], _, err = s.Commit(); err != nil {
			t.Fatal(err)
		}
		fast, err := s.FastStorage()
		if err != nil || fast != c.want {
			t.Errorf("%s: fast storage %v (%v), want %v", c.target, fast, err, c.want)
		}
		if got := s.Settings()["fast_storage"]; strings.HasPrefix(got, "on") != c.want {
			t.Errorf("%s: settings say fast_storage %q", c.target, got)
		}
		for k := 0; k < 100; k++ {
			if v, err := s.Get([]byte{byte(k)}); err != nil || !bytes.Equal(v, []byte{byte(k), 1}) {
				t.Fatalf("%s: get %d: %x, %v", c.target, k, v, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(roots[0], roots[1]) {
		t.Errorf("roots differ: %x with fast storage, %x without", roots[0], roots[1])
	}
}

// The nofast variant still honours an explicit fast_storage.
func TestNoFastKeepsAnExplicitOption(t *testing.T) {
	o := NoFast(target.Options{Extra: map[string]string{"fast_storage": "true", "node_cache_nodes": "10"}})
	if o.Extra["fast_storage"] != "true" || o.Extra["node_cache_nodes"] != "10" {
		t.Errorf("NoFast: %v", o.Extra)
	}
	if o := NoFast(target.Options{}); o.Extra["fast_storage"] != "false" {
		t.Errorf("NoFast of no options: %v", o.Extra)
	}
}
