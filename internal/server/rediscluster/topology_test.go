package rediscluster

import (
	"strings"
	"testing"
)

// A CLUSTER NODES reply as Redis 7.0 writes it, after node 1 failed over
// to node 5 and came back as its replica (a migrating slot on node 2).
const nodesReply = `a1 127.0.0.1:7000@17000 slave e5 0 1700000000000 7 connected
b2 127.0.0.2:7000@17000 myself,master - 0 0 2 connected 5461-10922 [5461->-c3]
c3 127.0.0.3:7000@17000 master - 0 1700000000000 3 connected 10923-16383
d4 127.0.0.4:7000@17000 slave c3 0 1700000000000 3 connected
e5 127.0.0.5:7000@17000,host5 master - 0 1700000000000 7 connected 0-5459 5460
f6 127.0.0.6:7000@17000 slave,fail b2 1700000000000 1700000000000 2 disconnected
`

func TestParseNodesAndDescribe(t *testing.T) {
	nodes, err := ParseNodes(nodesReply)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 6 || nodes[0].Addr != "127.0.0.1:7000" || nodes[4].Addr != "127.0.0.5:7000" {
		t.Fatalf("nodes %+v", nodes)
	}
	if err := Covered(nodes); err != nil {
		t.Errorf("Covered: %v", err)
	}
	if c := nodes[4].SlotCount(); c != 5461 {
		t.Errorf("node5 serves %d slots, want 5461", c)
	}
	d := Describe(nodes)
	for addr, want := range map[string]string{
		"127.0.0.1:7000": "replica of 127.0.0.5:7000",
		"127.0.0.2:7000": "primary, slots 5461-10922 (5462)",
		"127.0.0.5:7000": "primary, slots 0-5459,5460 (5461)",
		"127.0.0.6:7000": "replica of 127.0.0.2:7000, FAILED",
	} {
		if d[addr] != want {
			t.Errorf("%s: %q, want %q", addr, d[addr], want)
		}
	}
	if got := SortedAddrs(d); got[0] != "127.0.0.1:7000" || got[5] != "127.0.0.6:7000" {
		t.Errorf("order %v", got)
	}
}

func TestCoveredFindsGapsAndOverlaps(t *testing.T) {
	gap := strings.Replace(nodesReply, "10923-16383", "10923-16382", 1)
	nodes, err := ParseNodes(gap)
	if err != nil {
		t.Fatal(err)
	}
	if err := Covered(nodes); err == nil || !strings.Contains(err.Error(), "16383 of 16384") {
		t.Errorf("a missing slot: %v", err)
	}
	overlap := strings.Replace(nodesReply, "10923-16383", "10922-16383", 1)
	if nodes, err = ParseNodes(overlap); err != nil {
		t.Fatal(err)
	}
	if err := Covered(nodes); err == nil || !strings.Contains(err.Error(), "slot 10922 served twice") {
		t.Errorf("a slot served twice: %v", err)
	}
	if _, err := ParseNodes("a1 127.0.0.1:7000@17000 master - 0 0 1 connected 0-16384"); err == nil {
		t.Error("slot 16384 accepted")
	}
	if _, err := ParseNodes("a1 127.0.0.1:7000"); err == nil {
		t.Error("a short line accepted")
	}
}

func TestOptions(t *testing.T) {
	if p, r, err := Options(nil); p != 3 || r != 1 || err != nil {
		t.Errorf("defaults: %d, %d, %v", p, r, err)
	}
	if p, r, err := Options(map[string]string{"primaries": "4", "replicas": "2"}); p != 4 || r != 2 || err != nil {
		t.Errorf("4 primaries, 2 replicas: %d, %d, %v", p, r, err)
	}
	for _, bad := range []map[string]string{{"primaries": "2"}, {"primaries": "x"}, {"replicas": "-1"}, {"primaries": "5", "replicas": "2"}} {
		if _, _, err := Options(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
