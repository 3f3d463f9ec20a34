package ledger_test

import (
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/memcached"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/memcached"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest/captest"
)

// memcached keeps no order: the ledger has no layout on it.
func TestNoLayoutOnMemcached(t *testing.T) {
	h := captest.Open(t, "memcached", target.Options{URI: servertest.URI(t, "memcached"), Durability: kv.Async})
	defer h.Close()
	if _, _, ok := ledger.StoreOf(h); ok || ledger.CanRun(h) {
		t.Errorf("the ledger has a layout on memcached (%T)", h)
	}
}
