//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/measure/latency"
)

// machineRun runs pebble's ycsb load and a on the given shapes and
// returns the run directory.
func machineRun(t *testing.T, extra ...string) string {
	t.Helper()
	out := t.TempDir()
	args := append([]string{"run", "ycsb", "--targets", "pebble", "--ladder", "2000",
		"--set", "ycsb.workloads=[a]", "--set", "ycsb.operations=20000", "--quiet", "--out", out}, extra...)
	stdout, stderr, code := runCLIWithin(t, 5*time.Minute, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	return onlyDir(t, out)
}

// Issue 35 item 1: a machine is a dimension of a step in every output. A
// run on two shapes (one named) exports each row with its engine and
// machine; each step's HDR log names its machine in a header the
// reference readers read past, counting every operation; compare pairs a
// target with the same engine on the same machine only, says so when a
// named shape changed, and --targets takes names with commas of their
// own.
func TestMachineInExportsLogsAndCompare(t *testing.T) {
	needMachines(t)
	py, jar := hdrPython(t), hdrJar(t)
	exp := t.TempDir()
	dirA := machineRun(t, "--machine", "cpus=0.5,memory=256MiB", "--machine", "name=small,cpus=1,memory=512MiB", "--export", "csv="+exp)
	runA := readRun(t, dirA)
	want := map[string][2]string{"pebble@cpus=0.5,memory=256MiB": {"pebble", "cpus=0.5,memory=256MiB"},
		"pebble@small": {"pebble", "name=small,cpus=1,memory=512MiB"}}
	if len(runA.Targets) != 2 {
		t.Fatalf("%d targets, want 2", len(runA.Targets))
	}
	for _, tr := range runA.Targets {
		if w, ok := want[tr.Name]; !ok || tr.Machine != w[1] || tr.Status != "ok" {
			t.Fatalf("target %s machine %q status %s (%s)", tr.Name, tr.Machine, tr.Status, tr.Reason)
		}
		for _, s := range tr.Steps {
			checkMachineLog(t, py, jar, hlogPath(dirA, tr.Name, s), tr.Machine, s.Latency.Count)
		}
	}
	for _, file := range []string{"steps.csv", "ticks.csv"} {
		rows := readCSV(t, filepath.Join(exp, file))
		for i, r := range rows {
			if w := want[r["target"]]; r["engine"] != w[0] || r["machine"] != w[1] {
				t.Errorf("%s row %d: target %q engine %q machine %q, want %q %q", file, i+1, r["target"], r["engine"], r["machine"], w[0], w[1])
			}
		}
	}

	// B: the unnamed shape again, and "small" with half its CPUs.
	dirB := machineRun(t, "--machine", "name=small,cpus=0.5,memory=512MiB", "--machine", "cpus=0.5,memory=256MiB")
	stdout, stderr, code := runCLI(t, "compare", dirA, dirB)
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"A: Pebble on cpus=0.5,memory=256MiB in " + dirA, "B: Pebble on cpus=0.5,memory=256MiB in " + dirB,
		"Machine: cpus=0.5,memory=256MiB (both sides)", "**pebble@small is not compared**",
		"name=small,cpus=1,memory=512MiB; name=small,cpus=0.5,memory=512MiB"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("compare: no %q in\n%s", w, stdout)
		}
	}
	if n := strings.Count(stdout, "# Comparison"); n != 1 {
		t.Errorf("compare: %d comparisons, want the one shape both runs share\n%s", n, stdout)
	}
	stdout, stderr, code = runCLI(t, "compare", dirA, "--targets", "pebble@cpus=0.5,memory=256MiB,pebble@small")
	if code != 0 || !strings.Contains(stdout, "Machine: A cpus=0.5,memory=256MiB; B name=small,cpus=1,memory=512MiB") {
		t.Errorf("compare --targets of two shapes: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// checkMachineLog checks that a step's .hlog names machine in its header
// and that HdrHistogram_py and HistogramLogProcessor count ops values in
// its untagged intervals.
func checkMachineLog(t *testing.T, py, jar, log, machine string, ops int64) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	got, err := latency.LogMachine(f)
	f.Close()
	if err != nil || got != machine {
		t.Errorf("%s: header machine %q (%v), want %q", log, got, err, machine)
	}
	var byTag map[string]int64
	pyTotals(t, py, &byTag, "log", log)
	if fmt.Sprint(byTag) != fmt.Sprint(map[string]int64{"": ops}) {
		t.Errorf("%s: HdrHistogram_py reads %v, want %d untagged", log, byTag, ops)
	}
	if n := javaTotalCount(t, jar, log, ""); n != ops {
		t.Errorf("%s: HistogramLogProcessor counts %d, want %d", log, n, ops)
	}
}
