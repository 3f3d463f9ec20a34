//go:build rocksdb && leveldb

package all

import (
	"testing"

	"storebench/internal/kv"
)

// Built with the tags "make build" uses (rocksdb leveldb, plus libsqlite3
// when available), every engine must be usable.
func TestNothingUnavailableWithAllTags(t *testing.T) {
	for _, e := range kv.Engines() {
		if e.Unavailable != "" || e.Open == nil {
			t.Errorf("%s is unavailable in a full build: %s", e.Name, e.Unavailable)
		}
	}
}
