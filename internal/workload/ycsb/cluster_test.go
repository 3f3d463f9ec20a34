//go:build cluster

package ycsb_test

import (
	"context"
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/rediscluster"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/rediscluster"
	"storebench/internal/target/servers"
	"storebench/internal/workload/worktest/captest"
	"storebench/internal/workload/ycsb"
)

// TestClusterRedisYCSB runs the YCSB conformance checks (the Redis
// Cluster target's own layout, a ycsb.DB) through the
// cluster client on a managed cluster, and checks what the target
// declares for faults: primary reads after them, asynchronous
// replication, and a watch that sees the topology.
func TestClusterRedisYCSB(t *testing.T) {
	inst := servertest.Start(t, "redis-cluster", kv.Sync)
	h := captest.Open(t, "redis-cluster", target.Options{URI: inst.URI, Durability: kv.Sync, Extra: map[string]string{"pool": "4"}})
	defer h.Close()
	set := servers.Settings(t, h, "layout.ycsb")
	if !strings.Contains(set["durability"], "appendfsync always") {
		t.Errorf("durability %q", set["durability"])
	}
	checkDB(t, h, false)
	if _, ok := h.(ycsb.DurableReader); !ok {
		t.Error("no DurableReader")
	}
	if a, ok := h.(ycsb.AsyncReplication); !ok || !strings.Contains(a.AsyncReplication(), "asynchronously") {
		t.Error("does not declare asynchronous replication")
	}
	fw, ok := h.(ycsb.FaultWatcher)
	if !ok {
		t.Fatal("no FaultWatcher")
	}
	done := fw.WatchFaults(context.Background())
	facts, metrics := done(context.Background())
	if !strings.Contains(facts["topology_before"], "node1 127.0.0.1:") || facts["topology_before"] != facts["topology_after"] ||
		!strings.HasPrefix(facts["failover"], "none") || metrics["cluster_not_ok_seconds"] != 0 {
		t.Errorf("a watch with no fault: %v %v", facts, metrics)
	}
}
