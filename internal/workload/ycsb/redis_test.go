package ycsb_test

import (
	"context"
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/redis"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest/captest"
	"storebench/internal/workload/ycsb"
)

// The YCSB conformance checks on Redis, and Init deletes the records of
// YCSB only, not the ledger's keys beside them.
func TestOnRedis(t *testing.T) {
	// Database 9 of the shared server: other packages' tests use 0.
	uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/9"
	h := captest.Open(t, "redis", target.Options{URI: uri, Durability: kv.Async, Extra: map[string]string{"pool": "8"}})
	defer h.Close()
	checkDB(t, h, false)
	l, _, ok := ledger.StoreOf(h)
	if !ok {
		t.Fatal("redis offers no ledger layout")
	}
	addr := []byte("an address of thirty-two bytes..")
	if err := l.PutBalances(context.Background(), [][]byte{addr}, []uint64{7}); err != nil {
		t.Fatal(err)
	}
	db, _ := ycsb.Of(h)
	if err := db.Init(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if v, err := l.GetBalance(context.Background(), addr); err != nil || v != 7 {
		t.Errorf("balance after YCSB Init: %d, %v", v, err)
	}
}
