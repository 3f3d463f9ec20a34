package coordinator

import (
	"strings"
	"testing"

	"storebench/internal/fault"
	"storebench/internal/powerfs"
	"storebench/internal/server"
	_ "storebench/internal/server/cassandra"
	"storebench/internal/server/crashable"
	_ "storebench/internal/server/rediscluster"
	"storebench/internal/study"
	_ "storebench/internal/target/cassandra"
	_ "storebench/internal/target/pebble"
	_ "storebench/internal/target/redis"
	_ "storebench/internal/target/rediscluster"
	"storebench/internal/workload"
	_ "storebench/internal/workload/ycsb"
)

// A crash fault takes a single server storebench starts: one on an
// embedded engine or on a server named by URI is refused when the plan is
// made, before any target starts; one on a managed redis is planned.
func TestCrashFaultsNeedASingleManagedServer(t *testing.T) {
	for _, c := range []struct{ targets, action, want string }{
		{"[pebble]", "kill-9", "target pebble: phase load: kill-9 at 1s: an embedded engine runs inside the worker process; its crashes are the durability workload's: storebench run durability"},
		{"[pebble]", "power-loss", "an embedded engine runs inside the worker process"},
		{`[{uri: "redis://127.0.0.1:1/0"}]`, "kill-9", "target redis: phase load: kill-9 at 1s: redis is named by URI; storebench crashes only a server it starts itself"},
		{"[redis-cluster]", "kill-9", "target redis-cluster: phase load: kill-9 at 1s: redis-cluster is a cluster and a crash takes a single server; use kill and restart on a cluster's nodes"},
		{"[cassandra-cluster]", "power-loss", "cassandra-cluster is a cluster and a crash takes a single server"},
		{"[redis]", "kill-9", ""},
	} {
		src := "name: t\nladder: [100]\ntargets: " + c.targets + "\nworkloads:\n  - name: ycsb\n    faults: [{at: 1s, action: " + c.action + ", phase: load}]\n"
		s, err := study.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Prepare(s)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s %s: %v", c.targets, c.action, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.targets, c.action, err, c.want)
		}
	}
}

// A power loss where the power-loss file system cannot mount is refused
// with the reason when the plan is made.
func TestPowerLossRefusedWithoutPowerFS(t *testing.T) {
	t.Setenv(powerfs.OffEnv, "off")
	s, err := study.Parse("t.yaml", []byte("name: t\nladder: [100]\ntargets: [redis]\nworkloads:\n  - name: ycsb\n    faults: [{at: 1s, action: power-loss}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(s); err == nil || !strings.Contains(err.Error(), "target redis: phase load: power-loss at 1s needs the power-loss file system: turned off") {
		t.Errorf("a power loss without powerfs: %v", err)
	}
}

// Behind the plan's check, a crash is refused again on a cluster once
// the server is up, before any step: its nodes take kill and restart.
func TestCrashFaultRefusedOnACluster(t *testing.T) {
	steps := []workload.Step{{Phase: "load"}}
	steps[0].Faults = decodeFaults(t, "[{at: 1s, action: kill-9}]")
	cluster := &managed{inst: &server.Instance{Nodes: []*server.Node{{}, {}}}}
	if err := checkFaultTargets(cluster, steps); err == nil || !strings.Contains(err.Error(), "use kill and restart on a cluster's nodes") {
		t.Errorf("a kill-9 on a cluster: %v", err)
	}
	single := &managed{inst: &server.Instance{}, crash: &crashable.Server{}}
	if err := checkFaultTargets(single, steps); err != nil {
		t.Errorf("a kill-9 on a single server: %v", err)
	}
	if err := checkFaultTargets(nil, steps); err == nil || !strings.Contains(err.Error(), "needs a server storebench starts itself") {
		t.Errorf("a kill-9 on no managed server: %v", err)
	}
	steps[0].Faults = decodeFaults(t, "[{at: 1s, action: kill, node: 1}, {at: 2s, action: restart, node: 1}]")
	if err := checkFaultTargets(single, steps); err == nil || !strings.Contains(err.Error(), "need a cluster") {
		t.Errorf("a node kill on a single server: %v", err)
	}
}

func decodeFaults(t *testing.T, faults string) []fault.Action {
	t.Helper()
	s, err := study.Parse("t.yaml", []byte("name: t\nladder: [10]\ntargets: [redis]\nworkloads:\n  - name: ycsb\n    faults: "+faults+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := fault.Decode(s, s.Workloads[0])
	if err != nil {
		t.Fatal(err)
	}
	return a
}
