//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/machine"
)

// oomStudy loads 1 KiB records into Pebble with a memtable that may grow
// to 1 GiB: the records stay in the worker's anonymous memory until the
// load ends, so a small machine's memory cannot hold them.
const oomStudy = `name: oom
title: an engine that does not fit its machine
seed: 1
durability: async
concurrency: 2
ladder: [100000]
targets: [{name: pebble, options: {memtable_bytes: 1GiB}}]
workloads:
  - name: ycsb
    params:
      workloads: [c]
      operations: 2000
      fields: 10
      field_length: 100
`

// TestMachineOOMKill (issue 35 item 5): an embedded engine killed by its
// machine's memory limit fails its step with "out of memory under machine
// X (limit …)", not the worker's EOF; the run goes on to the next machine,
// where the same target loads and runs its steps.
func TestMachineOOMKill(t *testing.T) {
	c := machine.Can(t.TempDir())
	if c[machine.KeyMemory] != "" {
		t.Fatalf("machine shapes: memory cannot be enforced here: %s (make test runs as root on a machine with cgroup v1 memory)", c[machine.KeyMemory])
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.oom_control"); err != nil || !strings.Contains(string(b), "oom_kill ") {
		t.Fatal("this kernel does not count OOM kills per group (memory.oom_control has no oom_kill): the out-of-memory message cannot be tested")
	}
	file := filepath.Join(t.TempDir(), "oom.yaml")
	if err := os.WriteFile(file, []byte(oomStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 3*time.Minute, "run", file, "--machine", "memory=48MiB", "--machine", "memory=512MiB", "--quiet", "--out", out)
	if code == 0 {
		t.Errorf("exit 0 with a target failed\n%s", stderr)
	}
	dir := onlyDir(t, out)
	run := readRun(t, dir)
	if len(run.Targets) != 2 {
		t.Fatalf("%d targets, want 2 (one per machine)\n%s\n%s", len(run.Targets), stdout, stderr)
	}
	small, big := run.Targets[0], run.Targets[1]
	// The limit is the shape's and storebench's own memory in the worker
	// (machine_ownmem_test.go).
	want := "out of memory under machine memory=48MiB (limit "
	t.Logf("%s: %s: %s", small.Name, small.Status, small.Reason)
	if small.Status != "failed" || !strings.Contains(small.Reason, "load N=1e5: "+want) || !strings.Contains(small.Reason, ": the shape's 48.0MiB and storebench's own ") || !strings.Contains(small.Reason, " in its group") {
		t.Fatalf("%s: %s %q, want failed with %q", small.Name, small.Status, small.Reason, want)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	if !strings.Contains(run.Reason, small.Name) {
		t.Errorf("run: %s %q does not name %s", run.Status, run.Reason, small.Name)
	}
	// The run went on: the next machine ran the target from its load.
	if big.Name != "pebble@memory=512MiB" || big.Status != "ok" || len(big.Steps) != 2 {
		t.Fatalf("%s: %s %q, %d steps; want ok with 2 steps after the other machine's OOM kill", big.Name, big.Status, big.Reason, len(big.Steps))
	}
	for _, s := range big.Steps {
		t.Logf("%s %s: %d ops in %.2f s, machine peak memory %.1f MiB", big.Name, s.Phase, s.Ops, s.Seconds, s.Metrics["machine_memory_peak_bytes"]/(1<<20))
		if s.Error != "" || s.Metrics["machine_oom_kills"] != 0 || s.Metrics["machine_memory_peak_bytes"] <= 0 {
			t.Errorf("%s %s: error %q, machine_oom_kills %v, peak memory %v", big.Name, s.Phase, s.Error, s.Metrics["machine_oom_kills"], s.Metrics["machine_memory_peak_bytes"])
		}
	}
	if left := runGroups(t, dir); len(left) > 0 {
		t.Fatalf("groups left after the run: %v", left)
	}
}

// TestMachineListSaysWhatItEnforces (issue 35 item 5): storebench list
// has a MACHINE SHAPES section naming every limit of --machine, each
// either among those this machine can enforce or with why it cannot, as
// machine.Can says for data under results/.
func TestMachineListSaysWhatItEnforces(t *testing.T) {
	list, stderr, code := runCLI(t, "list")
	if code != 0 {
		t.Fatalf("storebench list: exit %d\n%s", code, stderr)
	}
	const head = "\nMACHINE SHAPES (--machine: the limits this machine can enforce on a target, for data under results/)\n  can enforce: "
	i := strings.Index(list, head)
	if i < 0 {
		t.Fatalf("storebench list has no MACHINE SHAPES section:\n%s", list)
	}
	line, _, _ := strings.Cut(list[i+len(head):], "\n")
	t.Logf("storebench list: MACHINE SHAPES\n  can enforce: %s", line)
	parts := strings.Split(line, "; not ")
	enforced, _, _ := strings.Cut(parts[0], " (")
	can := map[string]bool{}
	for _, k := range strings.Split(enforced, ", ") {
		can[k] = true
	}
	whyNot := map[string]string{}
	for _, p := range parts[1:] {
		keys, why, ok := strings.Cut(p, ": ")
		if !ok || why == "" {
			t.Errorf("%q: no reason", p)
		}
		for _, k := range strings.Split(keys, ", ") {
			whyNot[k] = why
		}
	}
	c := machine.Can("results") // the same directory as list's, from the same working directory
	for _, k := range machine.Limits {
		switch {
		case can[k] && whyNot[k] != "":
			t.Errorf("%s: both enforceable and not (%s)", k, whyNot[k])
		case c[k] == "" && !can[k]:
			t.Errorf("%s: enforceable here, but list does not say so: %s", k, line)
		case c[k] != "" && whyNot[k] != c[k]:
			t.Errorf("%s: list says %q, want not enforceable because %q", k, whyNot[k], c[k])
		}
	}
}
