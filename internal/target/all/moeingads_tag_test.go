//go:build moeingads && cgo

package all

import (
	"testing"

	"storebench/internal/target"
)

// Built with the "moeingads" tag (set by "make build" when RocksDB and a
// C++ compiler are installed), MoeingADS must be usable.
func TestMoeingADSAvailableWithTag(t *testing.T) {
	i, err := target.Lookup("moeingads")
	if err != nil {
		t.Fatal(err)
	}
	if i.Unavailable != "" || i.Open == nil {
		t.Fatalf("moeingads is unavailable although built with its tag: %s", i.Unavailable)
	}
}
