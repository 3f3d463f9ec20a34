//go:build cluster

package rediscluster_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/rediscluster"
	"storebench/internal/server/servertest"
)

// TestClusterRedisStartRestartStop starts 3 primaries with a replica
// each, checks the slots cover 0..16383 and the cluster serves keys on
// every primary, kills a replica and restarts it (back in sync), and
// stops everything: no node process is left.
func TestClusterRedisStartRestartStop(t *testing.T) {
	t0 := time.Now()
	inst := servertest.Start(t, rediscluster.Name, kv.Sync)
	t.Logf("started in %v", time.Since(t0).Round(time.Millisecond))
	if len(inst.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(inst.Nodes))
	}
	u, err := url.Parse(inst.URI)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	if u.Scheme != "redis-cluster" || len(password) < 32 {
		t.Fatalf("URI scheme %q, password of %d chars", u.Scheme, len(password))
	}
	for i, n := range inst.Nodes {
		if !strings.HasPrefix(n.Addr, fmt.Sprintf("127.0.0.%d:", i+1)) || n.PID() == 0 || n.Role == "" {
			t.Errorf("node %d: addr %s pid %d role %q", i+1, n.Addr, n.PID(), n.Role)
		}
		if s := inst.Settings[n.Name]; !strings.HasPrefix(s, n.Addr+" ") {
			t.Errorf("settings %s = %q", n.Name, s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo, err := rediscluster.Nodes(ctx, inst.Nodes[0].Addr, password)
	if err != nil {
		t.Fatal(err)
	}
	if err := rediscluster.Covered(topo); err != nil {
		t.Fatal(err)
	}
	primaries, ofPrimary := 0, map[string]bool{}
	for _, n := range topo {
		if n.Primary {
			primaries++
		} else {
			ofPrimary[n.PrimaryID] = true
		}
	}
	if primaries != 3 || len(ofPrimary) != 3 {
		t.Errorf("%d primaries, replicas of %d distinct primaries; want 3 and 3", primaries, len(ofPrimary))
	}
	// The nodes run with the settings stated.
	for _, n := range inst.Nodes {
		c := rediscluster.Client(n.Addr, password)
		cfg, err := c.ConfigGet(ctx, "*").Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if cfg["cluster-node-timeout"] != "3000" || cfg["appendfsync"] != "always" || cfg["appendonly"] != "yes" {
			t.Errorf("%s: node timeout %s, appendonly %s, appendfsync %s", n.Name, cfg["cluster-node-timeout"], cfg["appendonly"], cfg["appendfsync"])
		}
	}
	// Keys land on every primary, through the cluster client.
	var addrs []string
	for _, n := range inst.Nodes {
		addrs = append(addrs, n.Addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: password})
	defer cc.Close()
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%d", i)
		if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var keys []int64
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		keys = append(keys, n)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[0] == 0 || keys[1] == 0 || keys[2] == 0 {
		t.Errorf("keys per primary %v: want all three serving", keys)
	}

	// A replica killed and restarted comes back in sync.
	var replica *server.Node
	for _, n := range inst.Nodes {
		if strings.HasPrefix(n.Role, "replica") {
			replica = n
			break
		}
	}
	old := replica.PID()
	if err := replica.Kill(); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	if err := replica.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s back in %v", replica.Name, time.Since(t1).Round(time.Millisecond))
	if replica.PID() == 0 || replica.PID() == old {
		t.Errorf("%s pid %d after restart (was %d)", replica.Name, replica.PID(), old)
	}
	c := rediscluster.Client(replica.Addr, password)
	repl, err := c.Info(ctx, "replication").Result()
	c.Close()
	if err != nil || !strings.Contains(repl, "role:slave") || !strings.Contains(repl, "master_link_status:up") {
		t.Errorf("%s after restart: %v\n%s", replica.Name, err, repl)
	}

	servertest.NoFileHolds(t, inst.DataDir, password)
	for k, v := range inst.Settings {
		if strings.Contains(v, password) {
			t.Errorf("setting %s holds the password", k)
		}
	}

	var pids []int
	for _, n := range inst.Nodes {
		pids = append(pids, n.PID())
	}
	sctx, scancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
	defer scancel()
	if err := inst.Stop(sctx); err != nil {
		for _, n := range inst.Nodes {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(n.DataDir), "redis.log"))
			t.Logf("%s log:\n%s", n.Name, grepOut(string(b)))
		}
		t.Fatal(err)
	}
	for i, p := range pids {
		if server.Alive(p) {
			t.Errorf("node%d (pid %d) alive after Stop", i+1, p)
		}
	}
}

// grepOut drops a replica's once-a-second reconnection lines.
func grepOut(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "Connecting to MASTER") && !strings.Contains(l, "sync started") && !strings.Contains(l, "Connection refused") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
