//go:build cluster

package cassandra_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/cassandra"
	"storebench/internal/server/servertest"
)

// TestClusterStartRestart starts three nodes, checks that the ring has
// formed with the asked replication factor, kills node 2 and restarts it,
// and stops them all (the cleanup).
func TestClusterStartRestart(t *testing.T) {
	t0 := time.Now()
	inst := servertest.StartConfig(t, "cassandra-cluster", server.Config{Durability: kv.Sync, Options: map[string]string{"replication_factor": "2"}})
	t.Logf("started in %v: %s", time.Since(t0).Round(time.Millisecond), inst.URI)
	for k, v := range inst.Settings {
		t.Logf("  %s: %s", k, v)
	}
	if len(inst.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(inst.Nodes))
	}
	for i, n := range inst.Nodes {
		if !strings.HasPrefix(n.Addr, "127.0.0."+string(rune('1'+i))+":") || n.PID() == 0 {
			t.Errorf("node %d: addr %s pid %d", i+1, n.Addr, n.PID())
		}
		if !strings.Contains(inst.Settings["node"+string(rune('1'+i))], "16 tokens") {
			t.Errorf("node%d topology %q", i+1, inst.Settings["node"+string(rune('1'+i))])
		}
	}
	// Every node knows every other one in the ring before Start returns,
	// and the check says so when a node does not know a peer.
	port := func(n *server.Node) (string, int) {
		h, p, _ := net.SplitHostPort(n.Addr)
		v, _ := strconv.Atoi(p)
		return h, v
	}
	seesAll := func() {
		t.Helper()
		for _, n := range inst.Nodes {
			addr, p := port(n)
			var others []string
			for _, o := range inst.Nodes {
				if a, _ := port(o); a != addr {
					others = append(others, a)
				}
			}
			if err := cassandra.SeesRing(context.Background(), addr, p, others); err != nil {
				t.Errorf("%s: %v", addr, err)
			}
		}
	}
	seesAll()
	if a, p := port(inst.Nodes[0]); cassandra.SeesRing(context.Background(), a, p, []string{"127.0.0.9"}) == nil {
		t.Errorf("%s sees 127.0.0.9, which is no node, in its ring", a)
	}
	hosts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(inst.URI, "cassandra://"), "/storebench"), ",")
	c := gocql.NewCluster(hosts...)
	c.Timeout = 10 * time.Second
	s, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rf map[string]string
	if err := s.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'storebench'").Scan(&rf); err != nil {
		t.Fatal(err)
	}
	if rf["replication_factor"] != "2" {
		t.Errorf("replication %v, want factor 2", rf)
	}
	n2 := inst.Nodes[1]
	old := n2.PID()
	if err := n2.Kill(); err != nil {
		t.Fatal(err)
	}
	if n2.PID() != 0 {
		t.Fatalf("node2 still runs after kill")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t1 := time.Now()
	if err := n2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("node2 back in %v", time.Since(t1).Round(time.Millisecond))
	if n2.PID() == 0 || n2.PID() == old {
		t.Errorf("node2 pid %d after restart (was %d)", n2.PID(), old)
	}
	seesAll()
}
