//go:build linux

package main

import (
	"math"
	"testing"
	"time"

	"storebench/internal/machine"
)

// TestMachineCacheRatio: a cache=R shape (a seed machine's ratio of page
// cache to data, issue 35 item 3) sets no memory limit on a step that
// starts with no data, and at the start of every later step sets it to
// the engine's own memory plus R × the data's bytes on disk then, and
// follows the engine's own memory through the step: the page cache stays
// at its budget, and the engine is not killed for growing.
func TestMachineCacheRatio(t *testing.T) {
	needMachines(t)
	if why := machine.Can(t.TempDir())[machine.KeyCache]; why != "" {
		t.Fatalf("cache: %s", why)
	}
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 5*time.Minute, "run", "ycsb", "--targets", "pebble", "--ladder", "40000",
		"--set", "ycsb.workloads=[c]", "--set", "ycsb.operations=100000", "--quiet", "--out", out,
		"--machine", "name=quarter-scaled,cache=0.25")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run := readRun(t, dir)
	if len(run.Targets) != 1 || run.Targets[0].Status != "ok" {
		t.Fatalf("targets: %+v", run.Targets)
	}
	tr := run.Targets[0]
	if tr.Name != "pebble@quarter-scaled" || tr.Machine != "name=quarter-scaled,cache=0.25" {
		t.Fatalf("target %q on %q", tr.Name, tr.Machine)
	}
	limited := 0
	for _, s := range tr.Steps {
		m := s.Metrics
		data, budget, limit := m["machine_data_bytes_at_start"], m["machine_cache_budget_bytes"], m["machine_memory_limit_bytes"]
		t.Logf("%s: data at start %.1f MiB, own %.1f MiB, budget %.1f MiB (at most %.1f), limit %.1f MiB (at most %.1f); page cache after %.1f MiB, peak memory %.1f MiB, %.1f MiB read from disk",
			s.Phase, data/(1<<20), m["machine_own_memory_at_start_bytes"]/(1<<20), budget/(1<<20), m["machine_cache_budget_max_bytes"]/(1<<20), limit/(1<<20), m["machine_memory_limit_max_bytes"]/(1<<20),
			m["machine_page_cache_bytes"]/(1<<20), m["machine_memory_peak_bytes"]/(1<<20), m["machine_disk_read_bytes"]/(1<<20))
		if m["machine_cache_ratio"] != 0.25 {
			t.Fatalf("%s: machine_cache_ratio %v, want 0.25", s.Phase, m["machine_cache_ratio"])
		}
		if data == 0 {
			if _, ok := m["machine_memory_limit_bytes"]; ok {
				t.Errorf("%s: a memory limit (%.0f) on a step that started with no data", s.Phase, limit)
			}
			continue
		}
		limited++
		if math.Abs(budget-0.25*data) > 1 {
			t.Errorf("%s: budget %.0f, want 0.25 × %.0f", s.Phase, budget, data)
		}
		if want := max(m["machine_own_memory_at_start_bytes"]+budget, machine.MinMemory); limit > want || limit < want-4096 {
			t.Errorf("%s: limit %.0f, want own + budget = %.0f (to the page)", s.Phase, limit, want)
		}
		if hi := m["machine_memory_limit_max_bytes"]; m["machine_memory_peak_bytes"] > hi+64*4096 || hi < limit {
			t.Errorf("%s: the group's memory peaked at %.0f, its highest limit %.0f (first %.0f)", s.Phase, m["machine_memory_peak_bytes"], hi, limit)
		}
		// The page cache stays under the limit (the kernel's own
		// guarantee: how closely the limit follows the engine's memory
		// depends on how promptly the 50 ms loop runs on a loaded
		// machine, which internal/machine's tests check with a process
		// of their own).
		if c, hi := m["machine_page_cache_bytes"], m["machine_memory_limit_max_bytes"]; c > hi {
			t.Errorf("%s: %.1f MiB of page cache at the end, over the highest limit %.1f MiB", s.Phase, c/(1<<20), hi/(1<<20))
		}
		if m["machine_oom_kills"] != 0 {
			t.Errorf("%s: %v OOM kills", s.Phase, m["machine_oom_kills"])
		}
	}
	if limited == 0 {
		t.Fatalf("no step started with data: nothing was limited")
	}
}

// TestMachineCacheRatioServer: a managed server's data (its own
// directory: the workers that drive it hold none) sets a cache shape's
// budget, as an embedded engine's does. (The budget was 0, and the
// server ran without a limit, when only the workers' directory was
// measured.)
func TestMachineCacheRatioServer(t *testing.T) {
	needMachines(t)
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 5*time.Minute, "run", "ycsb", "--targets", "redis", "--ladder", "20000",
		"--set", "ycsb.workloads=[c]", "--set", "ycsb.operations=20000", "--quiet", "--out", out, "--machine", "cache=0.5")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := readRun(t, onlyDir(t, out))
	tr := run.Targets[0]
	st := tr.Find("ycsb", "c", 20000)
	if tr.Status != "ok" || st == nil {
		t.Fatalf("%s: %s %s", tr.Name, tr.Status, tr.Reason)
	}
	m := st.Metrics
	data, budget := m["machine_data_bytes_at_start"], m["machine_cache_budget_bytes"]
	t.Logf("redis c: data %.1f MiB, budget %.1f MiB, limit %.1f MiB, page cache %.1f MiB", data/(1<<20), budget/(1<<20), m["machine_memory_limit_bytes"]/(1<<20), m["machine_page_cache_bytes"]/(1<<20))
	if data <= 0 || math.Abs(budget-0.5*data) > 1 || m["machine_memory_limit_bytes"] <= 0 {
		t.Fatalf("redis c under cache=0.5: data %v, budget %v, limit %v: the server's data did not set the budget", data, budget, m["machine_memory_limit_bytes"])
	}
	if c := m["machine_page_cache_bytes"]; c > m["machine_memory_limit_max_bytes"] {
		t.Errorf("page cache %.0f over the highest limit %.0f", c, m["machine_memory_limit_max_bytes"])
	}
}
