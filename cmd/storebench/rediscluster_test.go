//go:build cluster

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
)

// TestClusterRedisPrimaryPaused runs studies/ycsb-redis-cluster.yaml: a
// Redis Cluster of 3 primaries with a replica each, primary 1 paused
// (SIGSTOP) for 10 s during the load, longer than cluster-node-timeout
// (3 s), so its replica is promoted. The load is offered at 100 inserts/s
// for 3,000 records: 30 s, which the pause (10 s to 20 s from the timed
// start) falls inside. Lost acknowledged writes are a figure here
// (asynchronous replication), so the test asserts that it is reported,
// not its value; it asserts the failover itself: node 1's slots served by
// its replica afterwards, node 1 back as that replica.
func TestClusterRedisPrimaryPaused(t *testing.T) {
	dir, tr, _ := runOK(t, 5*time.Minute, 1, "run", "ycsb-redis-cluster", "--ladder", "3000", "--set", "ycsb.load_rate=100")
	s := tr.Steps[0]
	var pause, resume *results.Event
	for i, e := range s.Events {
		switch e.Action {
		case "pause":
			pause = &s.Events[i]
		case "resume":
			resume = &s.Events[i]
		}
		if e.Error != "" {
			t.Errorf("event %s: %s", e.Action, e.Error)
		}
	}
	if pause == nil || resume == nil || pause.Node != 1 || resume.Node != 1 {
		t.Fatalf("events %+v: want node 1 paused, then resumed", s.Events)
	}
	if pause.OffsetS < 9.5 || pause.OffsetS > 11 || resume.OffsetS < 19.5 || resume.OffsetS > 21 || resume.OffsetS >= s.Seconds {
		t.Errorf("pause at %.1fs, resume at %.1fs of a %.1fs load: the study asks for 10s and 20s from its timed start", pause.OffsetS, resume.OffsetS, s.Seconds)
	}

	// The topology the server stated: node1 a primary, and which node is
	// its replica.
	set := tr.Server.Settings
	if !strings.Contains(set["node1"], "primary, slots ") || set["nodes"] != "6" {
		t.Fatalf("server settings: node1 %q, nodes %q", set["node1"], set["nodes"])
	}
	replica := ""
	for _, n := range []string{"node2", "node3", "node4", "node5", "node6"} {
		if strings.HasSuffix(set[n], "replica of node1") {
			replica = n
		}
	}
	if replica == "" {
		t.Fatalf("no replica of node1 in the settings %v", set)
	}
	// The failover: node1's slots are its replica's, node1 its replica.
	slots := strings.TrimPrefix(set["node1"][strings.Index(set["node1"], " ")+1:], "primary, slots ")
	after := s.Facts["topology_after"]
	if !strings.Contains(after, replica+" ") || !strings.Contains(after, "node1 ") {
		t.Fatalf("topology after %q", after)
	}
	wantFail := "slots " + slots + " of node1 are now served by " + replica
	if !strings.Contains(s.Facts["failover"], wantFail) || !strings.Contains(s.Facts["failover"], "node1 is now replica of "+replica) {
		t.Errorf("failover %q: want %q and node1 back as its replica", s.Facts["failover"], wantFail)
	}
	if s.Metrics["cluster_not_ok_seconds"] <= 0 || s.Metrics["cluster_not_ok_seconds"] > 10 {
		t.Errorf("cluster not ok for %v s (%s): a failover takes a node timeout and an election, some seconds",
			s.Metrics["cluster_not_ok_seconds"], s.Facts["cluster_not_ok"])
	}

	// Inserts go on before node1 resumes: once its replica is promoted
	// (a 3 s node timeout and an election: about 5 s after the pause),
	// the client's retries reach it. A client that kept its old slot map
	// waited for node1 to come back, with no insert at all until 20 s.
	var served int64
	for _, k := range s.Series {
		if k.T > pause.OffsetS+8 && k.T <= resume.OffsetS {
			served += k.Ops
		}
	}
	if served == 0 {
		t.Errorf("no insert acknowledged from %.0fs to the resume at %.0fs: the client did not follow the failover", pause.OffsetS+8, resume.OffsetS)
	}

	m := s.Metrics
	if _, ok := m["lost_acknowledged"]; !ok || float64(s.Verify.Failed) != m["lost_acknowledged"] {
		t.Errorf("lost_acknowledged %v (reported: %v), verify failures %d", m["lost_acknowledged"], ok, s.Verify.Failed)
	}
	if m["acknowledged"] < 1 || m["acknowledged"]+m["unacknowledged"] != 3000 || float64(s.Verify.Checked) != m["acknowledged"] {
		t.Errorf("acknowledged %v + unacknowledged %v, read back %d: want 3000 in all", m["acknowledged"], m["unacknowledged"], s.Verify.Checked)
	}
	// Keys of node1's third of the slots fail while it is paused.
	if m["errors"] < 1 || m["retries"] < 1 {
		t.Errorf("errors %v, retries %v: inserts to a paused primary must fail and be retried", m["errors"], m["retries"])
	}
	if !strings.HasPrefix(s.Facts["lost_writes"], "measured, not a failure") {
		t.Errorf("lost_writes fact %q", s.Facts["lost_writes"])
	}
	if len(s.Nodes) != 6 {
		t.Fatalf("node resources %+v: want 6 nodes", s.Nodes)
	}
	for _, n := range s.Nodes {
		if n.PID == 0 || n.RSSBytes <= 0 || n.DiskAllocated <= 0 || n.Role == "" {
			t.Errorf("node %s %s: pid %d, RSS %d, disk %d, role %q", n.Name, n.Addr, n.PID, n.RSSBytes, n.DiskAllocated, n.Role)
		}
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Faults: ", "acknowledged writes lost: ", "before (0–", "during (", "node1 127.0.0.1",
		"| Node | At the start of the phase | After the faults |", "Failover: " + wantFail, "Cluster not ok: about ",
		"node1: 127.0.0.1:", "primary, slots 0-"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	t.Logf("events: %+v\nmetrics: %v\nfailover: %s\nnot ok: %s", s.Events, m, s.Facts["failover"], s.Facts["cluster_not_ok"])
}
