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
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 25*time.Minute, "run", "ycsb-cluster", "--ladder", "3000", "--set", "ycsb.load_rate=100", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	if tr.Status != "ok" || len(tr.Steps) != 1 {
		t.Fatalf("target %s: %s %s, %d steps", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
	}
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
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 20*time.Minute, "run", "ycsb", "--targets", "cassandra-cluster",
		"--workers", "2", "--hosts", "local,"+d.host, "--ssh-identity", d.key,
		"--ssh-option", "UserKnownHostsFile="+d.knownHosts, "--ssh-option", "StrictHostKeyChecking=accept-new",
		"--ladder", "2000", "--set", "ycsb.workloads=[a,c]", "--set", "ycsb.operations=2000", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	if tr.Status != "ok" || len(tr.Steps) != 3 {
		t.Fatalf("target %s: %s %s, %d steps", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
	}
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
