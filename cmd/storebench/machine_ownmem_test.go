//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/machine"
	"storebench/internal/report"
	"storebench/internal/results"
)

// TestMachineOwnMemoryAdded (issue 35 item 1): on a memory=SIZE shape an
// embedded engine's worker holds storebench's own memory (the Go runtime,
// the load generator) beside the engine; what the group is charged for
// once the worker joined it and before the engine opened is measured and
// added to the limit, so that SIZE is the engine's. The limit the kernel
// held through every step (read back from the group's
// memory.limit_in_bytes after it) is SIZE plus that amount; the worker's
// resident memory then is plausible for a Go process (more than 1 MiB,
// less than 200 MiB); where the kernel moves a process's charge with it
// as it joins, that memory is in the group and the amount added is more
// than 1 MiB; where it does not (newer kernels), the setting says that
// what the worker held before it joined stays outside the limit. The
// target's settings and the steps' metrics say it, and the report's
// Machines section shows the raised limit. Left at SIZE, the limit would
// fail this test.
func TestMachineOwnMemoryAdded(t *testing.T) {
	needMachines(t)
	moves := kernelMovesCharges(t)
	const shape, size = "memory=256MiB", int64(256 << 20)
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 5*time.Minute, "run", "ycsb", "--targets", "pebble", "--ladder", "2000",
		"--set", "ycsb.workloads=[c]", "--set", "ycsb.operations=20000", "--quiet", "--out", out, "--machine", shape)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run := readRun(t, dir)
	if len(run.Targets) != 1 || run.Targets[0].Status != "ok" || len(run.Targets[0].Steps) != 2 {
		t.Fatalf("targets: %+v", run.Targets)
	}
	tr := run.Targets[0]
	own, res := ownMemorySteps(t, tr.Steps, size)
	if moves && own <= 1<<20 {
		t.Errorf("this kernel moves a process's charge as it joins, yet the group held only %.0f bytes of the worker's %.0f resident", own, res)
	}
	if !moves && own >= res {
		t.Errorf("this kernel moves no charges, yet the group held %.0f bytes, no less than the worker's %.0f resident", own, res)
	}
	set := tr.Settings["machine_storebench_memory"]
	t.Logf("machine_storebench_memory: %s", set)
	wants := []string{
		"storebench's own memory in the worker, measured with the engine closed: " + settingSize(int64(own)) + " as the group's limit counts it (",
		"added to the limit: " + settingSize(size+int64(own)) + " (memory=256MiB is the engine's)",
		"the worker then held " + settingSize(int64(res)) + " resident (",
	}
	if moves {
		wants = append(wants, "its charge moved into the group as it joined")
	} else {
		wants = append(wants, "what it was charged for before it joined the group stays outside the group and its limit (this kernel moves no charge with a process")
	}
	for _, want := range wants {
		if !strings.Contains(set, want) {
			t.Errorf("machine_storebench_memory %q does not say %q", set, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if col := " (" + report.Bytes(size+int64(own)) + ") |"; !strings.Contains(string(b), col) {
		t.Errorf("the report's Machines section does not show the raised limit %q:\n%s", col, b)
	}
	if left := runGroups(t, dir); len(left) > 0 {
		t.Fatalf("groups left after the run: %v", left)
	}
}

// ownMemorySteps checks each step's metrics: storebench's own memory
// (measured once, more than nothing, less than 200 MiB), the worker's
// resident memory then (1–200 MiB), and the limit the kernel held
// (size plus the own memory). It returns the own and resident bytes.
func ownMemorySteps(t *testing.T, steps []*results.Step, size int64) (own, res float64) {
	t.Helper()
	for i, s := range steps {
		m := s.Metrics
		o, r, limit := m["machine_storebench_memory_bytes"], m["machine_storebench_resident_bytes"], m["machine_memory_limit_bytes"]
		t.Logf("%s: storebench's own memory %.2f MiB in the group (the worker %.1f MiB resident), the limit the kernel held %.2f MiB, peak memory %.1f MiB",
			s.Phase, o/(1<<20), r/(1<<20), limit/(1<<20), m["machine_memory_peak_bytes"]/(1<<20))
		if o <= 0 || o >= 200<<20 {
			t.Fatalf("%s: machine_storebench_memory_bytes %.0f, want more than 0 and less than 200 MiB", s.Phase, o)
		}
		if r <= 1<<20 || r >= 200<<20 {
			t.Fatalf("%s: machine_storebench_resident_bytes %.0f, want more than 1 MiB and less than 200 MiB", s.Phase, r)
		}
		if i > 0 && (o != own || r != res) {
			t.Errorf("%s: own memory %.0f (resident %.0f), but %.0f (%.0f) on the step before: it is measured once, with the engine closed", s.Phase, o, r, own, res)
		}
		own, res = o, r
		if want := float64(size) + o; limit != want {
			t.Errorf("%s: the kernel held the group to %.0f bytes, want the shape's %d + storebench's own %.0f = %.0f", s.Phase, limit, size, o, want)
		}
		if m["machine_oom_kills"] != 0 {
			t.Errorf("%s: %v OOM kills", s.Phase, m["machine_oom_kills"])
		}
	}
	return own, res
}

// kernelMovesCharges reports whether this kernel moves a process's
// memory charge with it into a memory group it joins: whether a fresh
// group accepts memory.move_charge_at_immigrate=3.
func kernelMovesCharges(t *testing.T) bool {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/memory", machine.ParentName, fmt.Sprintf("ownmem-probe-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Remove(dir); err != nil {
			t.Error(err)
		}
	}()
	err := os.WriteFile(filepath.Join(dir, "memory.move_charge_at_immigrate"), []byte("3"), 0o644)
	b, rerr := os.ReadFile(filepath.Join(dir, "memory.move_charge_at_immigrate"))
	if rerr != nil {
		return false // a kernel that dropped the file moves nothing
	}
	moves := err == nil && strings.TrimSpace(string(b)) == "3"
	t.Logf("this kernel moves a process's memory charge as it joins a group: %v", moves)
	return moves
}

// settingSize writes bytes as the coordinator's settings do (9.8MiB).
func settingSize(b int64) string {
	const u = 1024
	if b < u {
		return fmt.Sprintf("%dB", b)
	}
	div, exp := int64(u), 0
	for n := b / u; n >= u; n /= u {
		div *= u
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
