package coordinator

import (
	"errors"
	"strings"
	"testing"

	"storebench/internal/fault"
	"storebench/internal/powerfs"
	"storebench/internal/results"
	"storebench/internal/server"
	_ "storebench/internal/server/cassandra"
	"storebench/internal/server/crashable"
	_ "storebench/internal/server/rediscluster"
	"storebench/internal/study"
	_ "storebench/internal/target/cassandra"
	_ "storebench/internal/target/memcached"
	_ "storebench/internal/target/pebble"
	_ "storebench/internal/target/redis"
	_ "storebench/internal/target/rediscluster"
	"storebench/internal/workload"
	_ "storebench/internal/workload/durability"
	_ "storebench/internal/workload/geo"
	_ "storebench/internal/workload/ycsb"
)

// A crash fault takes a single server storebench starts: one on an
// embedded engine or on a server named by URI is refused when the plan is
// made, before any target starts; one on a managed redis is planned.
func TestCrashFaultsNeedASingleManagedServer(t *testing.T) {
	for _, c := range []struct{ targets, action, want string }{
		{"[pebble]", "kill-9", "target pebble: phase load: kill-9 at 1s: an embedded engine runs inside the worker process; its crashes are the durability workload's: storebench run durability"},
		{"[pebble]", "power-loss", "an embedded engine runs inside the worker process"},
		{`[{uri: "redis://127.0.0.1:1/0"}]`, "kill-9", "target redis: phase load: kill-9 at 1s: redis is named by URI (redis://127.0.0.1:1/0); storebench crashes only a server it starts itself"},
		{"[redis-cluster]", "kill-9", "target redis-cluster: phase load: kill-9 at 1s: redis-cluster is a cluster and a crash takes a single server; use kill and restart on a cluster's nodes"},
		{"[cassandra-cluster]", "power-loss", "cassandra-cluster is a cluster and a crash takes a single server"},
		{"[redis]", "kill-9", ""},
		// Node numbers are checked against the node count when the plan
		// is made (exit 2), not once the cluster is up.
		{"[redis]", "kill-9, node: 7", "target redis: phase load: kill-9 at 1s node 7: redis is a single server, its only node is 1"},
		{"[redis-cluster]", "kill, node: 9}, {at: 2s, action: restart, node: 9", "target redis-cluster: phase load: kill node 9 at 1s: redis-cluster has 6 nodes (1..6)"},
		{"[{name: redis-cluster, options: {replicas: 0}}]", "kill, node: 4}, {at: 2s, action: restart, node: 4", "redis-cluster has 3 nodes (1..3)"},
		{"[cassandra-cluster]", "kill, node: 4}, {at: 2s, action: restart, node: 4", "cassandra-cluster has 3 nodes (1..3)"},
		{"[redis-cluster]", "kill, node: 6}, {at: 2s, action: restart, node: 6", ""},
		{"[redis]", "kill, node: 1}, {at: 2s, action: restart, node: 1", "node actions need a cluster storebench starts itself (cassandra-cluster, redis-cluster), not redis"},
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

// The durability workload crashes the target itself (each step a crash
// kind, K trials): on a server named by URI its trials would crash a
// server of their own making and report it under the URI's name, so the
// plan refuses it, as a crash fault action there, with the study's error
// (exit 2); on a managed server or an embedded engine it is planned.
func TestDurabilityRefusedOnAServerNamedByURI(t *testing.T) {
	for _, c := range []struct{ targets, want string }{
		{`[{uri: "redis://127.0.0.1:1/0"}]`, "t.yaml:3: targets[0]: target redis: durability power-loss: redis is named by URI (redis://127.0.0.1:1/0); the durability workload crashes the target's server, and storebench crashes only a server it starts itself"},
		{`[{uri: "memcached://127.0.0.1:1"}]`, "target memcached: durability power-loss: memcached is named by URI (memcached://127.0.0.1:1)"},
		{"[redis, pebble]", ""},
	} {
		s, err := study.Parse("t.yaml", []byte("name: t\nladder: [100]\ntargets: "+c.targets+"\nworkloads:\n  - name: durability\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Prepare(s)
		var se *study.Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.targets, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.targets, err, c.want)
		case c.want != "" && !errors.As(err, &se):
			t.Errorf("%s: %T is not the study's error (exit 2)", c.targets, err)
		}
	}
}

// A fault whose instant (or the end of the range it is drawn from) is past
// the length its phase is known to last when the plan is made (a load of
// N records at a fixed rate: N/rate; geo's ingest: its duration) could
// strike only after the phase's writes: refused at its line.
func TestFaultPastItsPhaseRefused(t *testing.T) {
	for _, c := range []struct{ workload, params, faults, want string }{
		{"ycsb", "{workloads: [], load_rate: 1000}", "[{at: 1s, action: kill-9, phase: load}]",
			"t.yaml:7: workloads.ycsb.faults[0].at: kill-9 at 1s cannot strike inside phase load N=100, which lasts 100ms (100 records at load_rate 1000/s)"},
		{"ycsb", "{workloads: [], load_rate: 1000}", "[{at: 50ms, until: 200ms, action: power-loss, phase: load}]",
			"workloads.ycsb.faults[0].until: power-loss at"},
		{"ycsb", "{workloads: [], load_rate: 100}", "[{at: 200ms, action: kill-9, phase: load}]", ""},
		{"ycsb", "{workloads: []}", "[{at: 1s, action: kill-9, phase: load}]", ""}, // closed loop: checked when it ends
		{"geo", "{ingest: {duration: 3s}}", "[{at: 2500ms, until: 3500ms, action: kill-9, phase: ingest}]",
			"workloads.geo.faults[0].until: kill-9 at"},
		{"geo", "{ingest: {duration: 3s}}", "[{at: 500ms, until: 1500ms, action: kill-9, phase: ingest}]", ""},
	} {
		src := "name: t\nladder: [100]\ntargets: [redis]\nworkloads:\n  - name: " + c.workload + "\n    params: " + c.params + "\n    faults: " + c.faults + "\n"
		s, err := study.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Prepare(s)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s %s: %v", c.params, c.faults, err)
			}
			continue
		}
		var se *study.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &se) {
			t.Errorf("%s %s: %v, want %q", c.params, c.faults, err, c.want)
		}
	}
}

// A fault whose phase's length was not known in advance, and that came
// after the phase ended, fails the step with the reason.
func TestUnstruckFault(t *testing.T) {
	st := workload.Step{Phase: "load", Faults: decodeFaults(t, "[{at: 1s, action: kill-9}]")}
	if why := unstruck(st, &results.Step{Seconds: 0.099}); why != "fault kill-9 at 1s never struck: phase load ended at 0.099s" {
		t.Errorf("a kill-9 at 1 s after a load of 0.099 s: %q", why)
	}
	if why := unstruck(st, &results.Step{Seconds: 3}); why != "" {
		t.Errorf("a kill-9 at 1 s in a load of 3 s: %q", why)
	}
}
