//go:build linux

package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 35 item 1: a machine shape is a machine, so each node of a
// managed cluster runs on its own instance of it: a Redis Cluster of 3
// primaries under cpus=0.5,memory=256MiB is 3 groups, each node's
// process tree in its own, each with the shape's limits; a node killed
// and restarted during a step goes back into its own group; the step's
// machine_ metrics are the nodes' sum, each node's are
// machine_node<i>_*; no group is left after the run.
const machineClusterStudy = `name: machine-cluster
seed: 1
durability: sync
concurrency: 4
ladder: [2000]
targets:
  - name: redis-cluster
    options: {primaries: "3", replicas: "0"}
workloads:
  - name: ycsb
    params: {workloads: [c], operations: 3000, fields: 2, field_length: 32, load_rate: 1000}
    faults:
      - {at: 500ms, action: kill, node: 3, phase: load}
      - {at: 900ms, action: restart, node: 3}
`

func TestMachineClusterNodes(t *testing.T) {
	needMachines(t)
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s not installed (make deps installs it)", b)
		}
	}
	study := filepath.Join(t.TempDir(), "machine-cluster.yaml")
	if err := os.WriteFile(study, []byte(machineClusterStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	const shape = "cpus=0.5,memory=256MiB"
	dir, tr, _ := runOK(t, 3*time.Minute, 2, "run", study, "--machine", shape, "--quiet")
	if tr.Machine != shape {
		t.Fatalf("machine %q, want %s", tr.Machine, shape)
	}
	set := tr.Settings
	t.Logf("machine_placement: %s", set["machine_placement"])
	t.Logf("machine_node_groups: %s", set["machine_node_groups"])
	if !strings.Contains(set["machine_placement"], "each of the cluster's 3 nodes on its own machine of this shape (3 groups") {
		t.Errorf("machine_placement does not say each node has its own machine: %s", set["machine_placement"])
	}
	if strings.Contains(set["machine_placement"], "share one group") {
		t.Errorf("machine_placement still says the nodes share one group: %s", set["machine_placement"])
	}

	// Three distinct groups, each holding its node's process (nodes 1
	// and 2 kept theirs through the run; node 3 was restarted).
	entries := strings.Split(set["machine_node_groups"], "; ")
	if len(entries) != 3 {
		t.Fatalf("machine_node_groups %q: want 3 nodes", set["machine_node_groups"])
	}
	load := tr.Steps[0]
	if len(load.Nodes) != 3 {
		t.Fatalf("load step: %d nodes, want 3", len(load.Nodes))
	}
	seen := map[string]bool{}
	for i, e := range entries {
		head, pids, ok := strings.Cut(e, " (pids ")
		_, group, ok2 := strings.Cut(head, ": ")
		if !ok || !ok2 || !strings.HasPrefix(e, "node"+strconv.Itoa(i+1)+" ") || !strings.Contains(group, "-n"+strconv.Itoa(i+1)+"-") {
			t.Fatalf("node %d: %q: want node%d ADDR: RUN-n%d-SHAPE (pids ...)", i+1, e, i+1, i+1)
		}
		if seen[group] {
			t.Fatalf("group %s holds two nodes: %s", group, set["machine_node_groups"])
		}
		seen[group] = true
		list := strings.Split(strings.TrimSuffix(pids, ")"), ", ")
		if i < 2 {
			pid := strconv.Itoa(load.Nodes[i].PID)
			found := false
			for _, p := range list {
				found = found || p == pid
			}
			if !found {
				t.Errorf("node %d (pid %s) is not in its group %s (pids %s)", i+1, pid, group, pids)
			}
		}
	}

	// The metrics: each node's, their sum, the limit each node's.
	for _, s := range tr.Steps {
		m := s.Metrics
		var sum float64
		for i := 1; i <= 3; i++ {
			k := "machine_node" + strconv.Itoa(i) + "_"
			t.Logf("%s node %d: cpu %.3f s (%.3f cores, throttled %.3f s), peak memory %.1f MiB, rss %.1f MiB, disk written %.1f MiB",
				s.Phase, i, m[k+"cpu_seconds"], m[k+"cpu_cores"], m[k+"cpu_throttled_seconds"], m[k+"memory_peak_bytes"]/(1<<20),
				m[k+"rss_bytes"]/(1<<20), m[k+"disk_write_bytes"]/(1<<20))
			for _, name := range []string{"cpu_seconds", "cpu_cores", "memory_peak_bytes", "memory_bytes", "rss_bytes", "disk_write_bytes"} {
				if _, ok := m[k+name]; !ok {
					t.Errorf("%s: no %s%s", s.Phase, k, name)
				}
			}
			// Every node serves a third of the slots: each does work in
			// each step, node 3 after its restart too (in its group again).
			if m[k+"cpu_seconds"] <= 0 || m[k+"rss_bytes"] <= 0 {
				t.Errorf("%s: node %d's group used no CPU or holds no memory: %v s, %v bytes", s.Phase, i, m[k+"cpu_seconds"], m[k+"rss_bytes"])
			}
			sum += m[k+"cpu_seconds"]
		}
		if math.Abs(sum-m["machine_cpu_seconds"]) > 1e-6 {
			t.Errorf("%s: machine_cpu_seconds %v, the nodes' sum %v", s.Phase, m["machine_cpu_seconds"], sum)
		}
		if m["machine_memory_limit_bytes"] != 256<<20 {
			t.Errorf("%s: machine_memory_limit_bytes %v, want each node's 256 MiB", s.Phase, m["machine_memory_limit_bytes"])
		}
	}
	restarted := false
	for _, e := range load.Events {
		if e.Error != "" {
			t.Errorf("event %s node %d: %s", e.Action, e.Node, e.Error)
		}
		restarted = restarted || (e.Action == "restart" && e.Node == 3)
	}
	if !restarted {
		t.Errorf("events %+v: node 3 was not restarted during the load", load.Events)
	}
	if left := runGroups(t, dir); len(left) > 0 {
		t.Fatalf("groups left after the run: %v", left)
	}
}
