package ads_test

import (
	"testing"

	"storebench/internal/ads"
	"storebench/internal/ads/adstest"
	"storebench/internal/kv"
	"storebench/internal/target/goleveldb"
)

// The seed's GoLevelDB baseline: a plain kv store written in blocks.
func TestFromKVConformance(t *testing.T) {
	adstest.Run(t, func(t *testing.T, dir string) ads.Store {
		s, err := goleveldb.Open(kv.Options{Dir: dir, Durability: kv.Async})
		if err != nil {
			t.Fatal(err)
		}
		return ads.FromKV(s)
	})
}
