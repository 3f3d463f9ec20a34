package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const profileStudy = `name: prof
title: profiled ycsb
ladder: [2000]
concurrency: 4
targets: [pebble]
workloads:
  - name: ycsb
    params:
      workloads: [c]
      operations: 200000
      fields: 2
      field_length: 16
`

// TestRunProfileWritesPprofFiles: --profile cpu,mutex reaches the worker
// over the protocol and each step's profiles land in the run's results,
// readable by go tool pprof; kinds not asked for are not written.
func TestRunProfileWritesPprofFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prof.yaml")
	if err := os.WriteFile(p, []byte(profileStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	_, stderr, code := runCLI(t, "run", p, "--out", out, "--quiet", "--profile", "cpu,mutex")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dir := filepath.Join(onlyDir(t, out), "profiles", "pebble")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, kind := range []struct{ suffix, typ string }{{".cpu.pprof", "Type: cpu"}, {".mutex.pprof", "Type: delay"}} {
		var found []string
		for _, n := range names {
			if strings.HasSuffix(n, kind.suffix) {
				found = append(found, n)
			}
		}
		// The ycsb study has a load step and a run step (C).
		if len(found) != 2 {
			t.Fatalf("want 2 %s files (load, C) in %s, have %v", kind.suffix, dir, names)
		}
		for _, f := range found {
			top, err := exec.Command(goTool, "tool", "pprof", "-top", filepath.Join(dir, f)).CombinedOutput()
			if err != nil {
				t.Fatalf("go tool pprof -top %s: %v\n%s", f, err, top)
			}
			if !strings.Contains(string(top), kind.typ) {
				t.Errorf("%s: pprof says\n%s\nwant %q", f, top, kind.typ)
			}
		}
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".block.pprof") {
			t.Errorf("a block profile was written though not asked for: %s", n)
		}
	}
	// The CPU profile of the timed reads names the workload's code.
	for _, n := range names {
		if strings.Contains(n, "-c") && strings.HasSuffix(n, ".cpu.pprof") {
			top, _ := exec.Command(goTool, "tool", "pprof", "-top", "-nodecount=200", filepath.Join(dir, n)).CombinedOutput()
			if !strings.Contains(string(top), "ycsb") {
				t.Errorf("%s has no sample in the ycsb workload:\n%s", n, top)
			}
		}
	}
}

func TestRunProfileBadKindIsUsageError(t *testing.T) {
	_, stderr, code := runCLI(t, "run", "ycsb", "--profile", "cpu,heap")
	if code != 2 || !strings.Contains(stderr, `"heap" is not one of cpu,mutex,block`) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	help, _, _ := runCLI(t, "run", "--help")
	if !strings.Contains(help, "--profile") || !strings.Contains(help, "profiles/<target>/<step>.<kind>.pprof") {
		t.Fatalf("run --help does not document --profile:\n%s", help)
	}
}
