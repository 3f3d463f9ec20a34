//go:build cluster

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
)

// TestClusterKillNodeMidInsert runs studies/ycsb-cluster.yaml: a 3-node
// Cassandra cluster (RF 2, writes at ONE), node 2 killed with SIGKILL
// during the load and restarted; every acknowledged insert is then read
// back at ALL and none may be lost. It runs in `make test-cluster` (the
// three JVMs take minutes to start on 2 cores). The load is offered at
// 100 inserts/s, so it lasts 30 s on any machine, and the kill (at 12 s)
// and the restart (at 20 s) fall inside it: their offsets count from the
// load's timed start, and a restart still under way when the load ends
// is completed, not abandoned.
func TestClusterKillNodeMidInsert(t *testing.T) {
	dir, tr, _ := runOK(t, 25*time.Minute, 1, "run", "ycsb-cluster", "--ladder", "3000", "--set", "ycsb.load_rate=100")
	s := tr.Steps[0]
	var kill, restart *results.Event
	for i, e := range s.Events {
		switch e.Action {
		case "kill":
			kill = &s.Events[i]
		case "restart":
			restart = &s.Events[i]
		}
		if e.Error != "" {
			t.Errorf("event %s: %s", e.Action, e.Error)
		}
	}
	if kill == nil || restart == nil || kill.Node != 2 || restart.Node != 2 || !restart.Time.After(kill.Time) {
		t.Fatalf("events %+v: want node 2 killed, then restarted", s.Events)
	}
	if kill.OffsetS < 11.5 || kill.OffsetS > 13 || kill.OffsetS >= s.Seconds {
		t.Errorf("the kill at %.1fs of the load (%.1fs long): the study asks for 12s from its timed start", kill.OffsetS, s.Seconds)
	}
	if restart.OffsetS < 19.5 || restart.OffsetS > 21 {
		t.Errorf("the restart at %.1fs: the study asks for 20s", restart.OffsetS)
	}
	m := s.Metrics
	if m["lost_acknowledged"] != 0 || s.Verify.Failed != 0 {
		t.Errorf("acknowledged writes lost: %v (%s)", m["lost_acknowledged"], s.Verify.First)
	}
	if m["acknowledged"] < 1 || float64(s.Verify.Checked) != m["acknowledged"] || m["acknowledged"]+m["unacknowledged"] != 3000 {
		t.Errorf("read back %d records, acknowledged %v, unacknowledged %v of 3000", s.Verify.Checked, m["acknowledged"], m["unacknowledged"])
	}
	if len(s.Nodes) != 3 || s.Nodes[1].PID == 0 {
		t.Errorf("node resources %+v: want 3 nodes, node 2 back", s.Nodes)
	}
	if !strings.Contains(tr.Server.Settings["keyspace"], "replication_factor 2") || !strings.Contains(tr.Settings["consistency"], "ONE") {
		t.Errorf("settings: keyspace %q, consistency %q", tr.Server.Settings["keyspace"], tr.Settings["consistency"])
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Faults: ", "acknowledged writes lost: 0", "before (0–", "during (", "node2 127.0.0.2"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	t.Logf("events: %+v\nmetrics: %v", s.Events, m)
}

// TestClusterWorkersOverSSH is the scale-out run a user types: the
// built-in ycsb study against a 3-node Cassandra cluster from two worker
// processes, one local and one through an sshd of the test's own on
// 127.0.0.2. One merged report comes back: every step's operations are
// the two workers' sum, one of them ran on the ssh host, and every node's
// resources are in it.
func TestClusterWorkersOverSSH(t *testing.T) {
	d := startSSHD(t)
	dir, tr, _ := runOK(t, 20*time.Minute, 3, "run", "ycsb", "--targets", "cassandra-cluster",
		"--workers", "2", "--hosts", "local,"+d.host, "--ssh-identity", d.key,
		"--ssh-option", "UserKnownHostsFile="+d.knownHosts, "--ssh-option", "StrictHostKeyChecking=accept-new",
		"--ladder", "2000", "--set", "ycsb.workloads=[a,c]", "--set", "ycsb.operations=2000", "--quiet")
	for _, s := range tr.Steps {
		if len(s.Workers) != 2 || s.Workers[0].Host != "local" || !strings.Contains(s.Workers[1].Host, "127.0.0.2") {
			t.Fatalf("%s: workers %+v: want one local and one on 127.0.0.2", s.Phase, s.Workers)
		}
		if s.Workers[0].Ops == 0 || s.Workers[1].Ops == 0 || s.Workers[0].Ops+s.Workers[1].Ops != s.Ops {
			t.Fatalf("%s: workers did %d + %d ops, the step %d", s.Phase, s.Workers[0].Ops, s.Workers[1].Ops, s.Ops)
		}
		if len(s.Nodes) != 3 {
			t.Fatalf("%s: %d nodes' resources, want 3", s.Phase, len(s.Nodes))
		}
		if s.Phase != "load" && s.Verify.Checked == 0 {
			t.Fatalf("%s: nothing verified", s.Phase)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Load workers", "127.0.0.2", "**merged**", "## Cluster nodes", "**all nodes**"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestClusterGeoKillNode runs studies/geo-cluster.yaml small: the geo
// workload on a single-node Cassandra, then on a 3-node cluster (RF 2,
// writes at ONE, reads at ALL) whose node 2 is killed 10 s into the
// ingest and restarted at 20 s (the faults name the cluster, so the
// single node runs without them). The events fall inside the ingest at
// their offsets from its timed start; once the node is back every
// acknowledged point is read back at ALL and none is lost; the report
// has the failure's section and the scaling section, whose measured
// rates and projection to the seed's 10 machines are recomputed here
// from results.json's own series.
func TestClusterGeoKillNode(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 20*time.Minute, "run", "geo-cluster", "--set", "geo.ingest.duration=45s",
		"--set", "geo.timeline.queries=20", "--set", "geo.correlate.users=3", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Targets) != 2 {
		t.Fatalf("%d targets, want cassandra and cassandra-cluster", len(run.Targets))
	}
	ingest := map[string]*results.Step{}
	for _, tr := range run.Targets {
		if tr.Status != "ok" || len(tr.Steps) != 3 {
			t.Fatalf("target %s: %s %s, %d steps", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
		}
		for _, s := range tr.Steps {
			if s.Verify.Checked == 0 || s.Verify.Failed != 0 {
				t.Errorf("%s %s: verified %d, failed %d (%s)", tr.Name, s.Phase, s.Verify.Checked, s.Verify.Failed, s.Verify.First)
			}
		}
		ingest[tr.Name] = tr.Steps[0]
	}
	one, cl := ingest["cassandra"], ingest["cassandra-cluster"]
	if one == nil || cl == nil || one.Phase != "ingest" || cl.Phase != "ingest" {
		t.Fatalf("ingest steps: %v", ingest)
	}
	if len(one.Events) != 0 {
		t.Errorf("the single node had fault events %+v: the faults name the cluster", one.Events)
	}
	var kill, restart *results.Event
	for i, e := range cl.Events {
		switch e.Action {
		case "kill":
			kill = &cl.Events[i]
		case "restart":
			restart = &cl.Events[i]
		}
		if e.Error != "" {
			t.Errorf("event %s: %s", e.Action, e.Error)
		}
	}
	if kill == nil || restart == nil || kill.Node != 2 || restart.Node != 2 {
		t.Fatalf("events %+v: want node 2 killed, then restarted", cl.Events)
	}
	if kill.OffsetS < 9.5 || kill.OffsetS > 11 || restart.OffsetS < 19.5 || restart.OffsetS > 21 || restart.OffsetS >= cl.Seconds {
		t.Errorf("kill at %.1fs, restart at %.1fs of a %.1fs ingest: the study asks for 10s and 20s from its timed start", kill.OffsetS, restart.OffsetS, cl.Seconds)
	}
	m := cl.Metrics
	if m["lost_acknowledged"] != 0 || m["acknowledged"] < 1 || m["read_back"] != m["acknowledged"] || m["acknowledged"] != m["points"] {
		t.Errorf("points %v, acknowledged %v, read back %v, lost %v", m["points"], m["acknowledged"], m["read_back"], m["lost_acknowledged"])
	}
	if len(cl.Nodes) != 3 || cl.Nodes[1].PID == 0 {
		t.Errorf("node resources %+v: want 3 nodes, node 2 back", cl.Nodes)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)
	for _, want := range []string{"### Node failure during the ingest", "**acknowledged points lost: 0**", "before (0–10 s)", "during (10–",
		"### Scaling", "**This machine has 2 cores, shared by every node's JVM and by the load generator: no linear scaling can show here.**",
		"PROJECTION (not a measurement)", "## Cluster nodes", "node2 127.0.0.2"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The scaling section's figures, recomputed: the points per second of
	// each ingest over its ticks up to the kill (every node up), the
	// replica writes per node (RF 1 on one node, 2 on three) and the
	// projection to 10 machines at R=2.
	rate := func(s *results.Step, span float64) float64 {
		var ops int64
		last := 0.0
		for _, k := range s.Series {
			if k.T > span+1e-9 {
				break
			}
			ops += k.Ops
			last = k.T
		}
		return float64(ops) * s.Metrics["batch"] / last
	}
	span := min(kill.OffsetS, one.Seconds)
	q1, q3 := rate(one, span), rate(cl, span)
	if q1 <= 0 || q3 <= 0 {
		t.Fatalf("no points inserted in the first %.1f s: 1 node %.0f/s, 3 nodes %.0f/s", span, q1, q3)
	}
	per1, per3 := q1, q3*2/3
	for _, row := range []string{
		fmt.Sprintf("| 1 | RF 1 | first %.0f s | %.0f | %.0f | 1.00 |", span, q1, per1),
		fmt.Sprintf("| 3 | RF 2 | first %.0f s | %.0f | %.0f | %.2f |", span, q3, per3, q3/q1),
		fmt.Sprintf("(1 node(s), RF 1) | %.0f | %.0f | %.0f |", per1, per1*10/2, per1*10/2*60),
		fmt.Sprintf("(3 node(s), RF 2) | %.0f | %.0f | %.0f |", per3, per3*10/2, per3*10/2*60),
	} {
		if !strings.Contains(report, row) {
			t.Errorf("the scaling section lacks the row %q", row)
		}
	}
	if i := strings.Index(report, "### Node failure"); i >= 0 {
		end := strings.Index(report[i:], "## Charts")
		if end < 0 {
			end = len(report) - i
		}
		t.Logf("%s", report[i:i+end])
	}
	t.Logf("1 node: %v\n3 nodes: %v", one.Metrics, m)
}
