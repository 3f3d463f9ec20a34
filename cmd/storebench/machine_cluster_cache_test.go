//go:build linux && cluster

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/machine"
	"storebench/internal/results"
)

// Issue 35: a cache shape on a cluster is a page-cache budget per node:
// under cache=SIZE each node of a Redis Cluster of 3 primaries runs in a
// group of its own whose limit is that node's own memory plus SIZE, not
// one budget shared by the nodes, and each node's page cache (its AOF,
// written with appendfsync always: Redis holds its data in its own
// memory, so its files are its page cache) stays at its budget while its
// AOF grows to several times it. Node 3 is killed and restarted during
// the load: placed back in its group, it is held again.
const machineClusterCacheStudy = `name: machine-cluster-cache
seed: 1
durability: sync
concurrency: 4
ladder: [36000]
targets:
  - name: redis-cluster
    options: {primaries: "3", replicas: "0"}
workloads:
  - name: ycsb
    params: {workloads: [c], operations: 3000, fields: 1, field_length: 4000}
    faults:
      - {at: 500ms, action: kill, node: 3, phase: load}
      - {at: 900ms, action: restart, node: 3}
`

// clusterCacheBudget is each node's page-cache budget: with its own
// memory (its share of the data, in Redis's memory) it is above
// machine.MinMemory, so the limit is own memory + budget, never raised
// to the floor; each node's AOF grows to over twice it.
const clusterCacheBudget = 16 << 20

func TestMachineClusterCacheBudgetPerNode(t *testing.T) {
	needMachines(t)
	if why := machine.Can(t.TempDir())[machine.KeyCache]; why != "" {
		t.Fatalf("cache: %s", why)
	}
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s not installed (make deps installs it)", b)
		}
	}
	study := filepath.Join(t.TempDir(), "machine-cluster-cache.yaml")
	if err := os.WriteFile(study, []byte(machineClusterCacheStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	const shape = "cache=16MiB"
	dir, tr, _ := runOK(t, 6*time.Minute, 2, "run", study, "--machine", shape, "--quiet")
	if tr.Machine != shape {
		t.Fatalf("machine %q, want %s", tr.Machine, shape)
	}
	if !strings.Contains(tr.Settings["machine_placement"], "each of the cluster's 3 nodes on its own machine of this shape (3 groups") {
		t.Errorf("machine_placement: %s", tr.Settings["machine_placement"])
	}
	for _, s := range tr.Steps {
		checkNodeBudgets(t, s)
	}
	// The run step starts with the load's data: each node's AOF on disk
	// is over twice its budget, so a budget missing (no limit) would have
	// left it all in the page cache, over the budget.
	run := tr.Steps[1].Metrics
	for i := 1; i <= 3; i++ {
		if d := run["machine_node"+strconv.Itoa(i)+"_data_bytes_at_start"]; d < 2*clusterCacheBudget {
			t.Errorf("node %d: %.1f MiB of data on disk, want over twice its budget", i, d/(1<<20))
		}
	}
	checkRestarted(t, tr.Steps[0])
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "(48.0 MiB: 3 nodes' sum)") {
		t.Errorf("the report's Machines section does not give the budget as the 3 nodes' sum:\n%s", md)
	}
	if left := runGroups(t, dir); len(left) > 0 {
		t.Fatalf("groups left after the run: %v", left)
	}
}

// checkNodeBudgets: each node of the step had a budget of its own, the
// shape's, and a limit of its own memory plus it; its page cache at the
// step's end is within it and, the AOF being larger, near it (a budget
// shared by the nodes, a third each, would leave less); the step's
// machine_ cache metrics are the nodes' sums.
func checkNodeBudgets(t *testing.T, s *results.Step) {
	t.Helper()
	m := s.Metrics
	var budgets, data, own float64
	for i := 1; i <= 3; i++ {
		k := "machine_node" + strconv.Itoa(i) + "_"
		budget, limit, cache := m[k+"cache_budget_bytes"], m[k+"memory_limit_bytes"], m[k+"page_cache_bytes"]
		t.Logf("%s node %d: data at start %.1f MiB, own memory %.1f MiB, budget %.1f MiB, limit %.1f MiB (at most %.1f); page cache at the end %.1f MiB, peak memory %.1f MiB",
			s.Phase, i, m[k+"data_bytes_at_start"]/(1<<20), m[k+"own_memory_at_start_bytes"]/(1<<20), budget/(1<<20), limit/(1<<20),
			m[k+"memory_limit_max_bytes"]/(1<<20), cache/(1<<20), m[k+"memory_peak_bytes"]/(1<<20))
		for _, name := range []string{"cache_budget_bytes", "data_bytes_at_start", "own_memory_at_start_bytes", "memory_limit_bytes", "memory_limit_max_bytes", "page_cache_bytes"} {
			if _, ok := m[k+name]; !ok {
				t.Errorf("%s: no %s%s", s.Phase, k, name)
			}
		}
		if budget != clusterCacheBudget {
			t.Errorf("%s: node %d's budget %.0f, want the shape's %d each", s.Phase, i, budget, clusterCacheBudget)
		}
		// The floor (MinMemory) lifts the limit of a node that holds
		// little yet (at the load's start); the run step's nodes hold
		// their data and are above it.
		want := m[k+"own_memory_at_start_bytes"] + clusterCacheBudget
		if limit != max(want, machine.MinMemory) || (s.Phase != "load" && want <= machine.MinMemory) {
			t.Errorf("%s: node %d's limit %.0f, want its own memory + the budget = %.0f (above the %d floor after the load)", s.Phase, i, limit, want, machine.MinMemory)
		}
		// Within the budget, to the kernel's charge batch (32 pages a
		// CPU) that the group's own memory may have shrunk by since the
		// last 50 ms tick.
		if cache > clusterCacheBudget+64*4096 {
			t.Errorf("%s: node %d's page cache %.1f MiB at the end, over its budget", s.Phase, i, cache/(1<<20))
		}
		if cache < clusterCacheBudget/2 {
			t.Errorf("%s: node %d's page cache %.1f MiB at the end, its AOF over twice its budget: less than half its budget was its own", s.Phase, i, cache/(1<<20))
		}
		if m[k+"oom_kills"] != 0 {
			t.Errorf("%s: node %d: %v OOM kills", s.Phase, i, m[k+"oom_kills"])
		}
		budgets, data, own = budgets+budget, data+m[k+"data_bytes_at_start"], own+m[k+"own_memory_at_start_bytes"]
	}
	if m["machine_cache_budget_bytes"] != budgets || m["machine_data_bytes_at_start"] != data || m["machine_own_memory_at_start_bytes"] != own {
		t.Errorf("%s: machine_cache_budget_bytes %v, machine_data_bytes_at_start %v, machine_own_memory_at_start_bytes %v: want the nodes' sums %v, %v, %v",
			s.Phase, m["machine_cache_budget_bytes"], m["machine_data_bytes_at_start"], m["machine_own_memory_at_start_bytes"], budgets, data, own)
	}
}

// checkRestarted: node 3 was killed and restarted during the load, with
// no fault failing.
func checkRestarted(t *testing.T, load *results.Step) {
	t.Helper()
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
}
