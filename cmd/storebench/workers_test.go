package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/server/servertest"
)

// ycsbWorkers: a load, a closed-loop mix (A) and an open-loop one (C at
// 1500 ops/s over 1500 operations: about one second).
const ycsbWorkers = `name: ycsb-workers
ladder: [2000]
concurrency: 2
seed: 7
targets: [%URI%]
workloads:
  - name: ycsb
    params: {workloads: [a], operations: 2000, fields: 4, field_length: 50}
  - name: ycsb
    params: {workloads: [c], operations: 1500, fields: 4, field_length: 50, rate: 1500}
`

func runWorkers(t *testing.T, uri string, args ...string) (*results.Target, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ycsb-workers.yaml")
	os.WriteFile(p, []byte(strings.ReplaceAll(ycsbWorkers, "%URI%", uri)), 0o644)
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, append([]string{"run", p, "--out", out, "--quiet"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "complete" || run.Targets[0].Status != "ok" {
		t.Fatalf("run %s: %s", run.Status, run.Reason)
	}
	return run.Targets[0], dir
}

// hlogServiceCount is the total count of a step's service-time intervals
// in its .hlog (the untagged lines: StartTimestamp,Interval_Length,
// Interval_Max,Interval_Compressed_Histogram).
func hlogServiceCount(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' || line[0] == '"' || strings.HasPrefix(line, "Tag=") {
			continue
		}
		f := strings.Split(line, ",")
		n += decode(t, f[len(f)-1]).TotalCount()
	}
	return n
}

func decode(t *testing.T, enc string) *hdr.Histogram {
	t.Helper()
	h, err := latency.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Three workers drive one Redis: the merged histogram of every step is
// the histogram of all its operations (the workers' own raw histograms,
// merged here, give the same count and the same percentiles; the merged
// intervals add up to it), the open-loop rate split over three workers is
// still the total rate, and the operations are the same as one worker's:
// one worker and three verify the same reads.
func TestWorkersMergeExactly(t *testing.T) {
	uri := ownRedisDB(t, 10)
	three, dir := runWorkers(t, uri, "--workers", "3")
	one, _ := runWorkers(t, uri, "--workers", "1")
	if len(three.Workers) != 3 {
		t.Fatalf("target's workers: %+v", three.Workers)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)
	if !strings.Contains(report, "## Load workers") {
		t.Fatalf("report.md has no Load workers section")
	}
	for _, st := range three.Steps {
		name := st.Phase
		// The report's row of each worker and the merged row.
		for _, w := range st.Workers {
			row := fmt.Sprintf("| %d | local (%d) | %d | %.0f |", w.Index, w.PID, w.Ops, w.OpsPerS)
			if !strings.Contains(report, row) {
				t.Errorf("%s: report.md lacks worker row %q", name, row)
			}
		}
		if row := fmt.Sprintf("| **merged** |  | %d |", st.Ops); !strings.Contains(report, row) {
			t.Errorf("%s: report.md lacks the merged row %q", name, row)
		}
		if len(st.Workers) != 3 {
			t.Fatalf("%s: %d worker parts, want 3", name, len(st.Workers))
		}
		merged := decode(t, st.Hist)
		mine := latency.New()
		var ops, verified int64
		var cpuNs int64
		for _, w := range st.Workers {
			mine.Merge(decode(t, w.Hist))
			ops += w.Ops
			verified += w.Verified
			cpuNs += w.Resources.After.CPUUserNs + w.Resources.After.CPUSysNs - w.Resources.Before.CPUUserNs - w.Resources.Before.CPUSysNs
			if w.Ops == 0 || w.Host != "local" || w.PID == 0 {
				t.Errorf("%s: worker %d: %+v", name, w.Index, w)
			}
		}
		if merged.TotalCount() != st.Ops || mine.TotalCount() != st.Ops || ops != st.Ops {
			t.Fatalf("%s: merged histogram counts %d, the workers' merged here %d, their ops %d, the step's ops %d",
				name, merged.TotalCount(), mine.TotalCount(), ops, st.Ops)
		}
		for _, q := range []float64{50, 90, 99, 99.9, 100} {
			if a, b := merged.ValueAtQuantile(q), mine.ValueAtQuantile(q); a != b {
				t.Fatalf("%s: p%v %d in the step, %d from the workers' histograms", name, q, a, b)
			}
		}
		if st.Latency.P99 != mine.ValueAtQuantile(99) {
			t.Fatalf("%s: summary p99 %d, histogram's %d", name, st.Latency.P99, mine.ValueAtQuantile(99))
		}
		// The merged intervals went to the step's HDR log.
		inIntervals := hlogServiceCount(t, hlogPath(dir, "redis", st))
		var inSeries int64
		for _, tk := range st.Series {
			inSeries += tk.Ops
		}
		if inSeries != st.Ops || inIntervals != st.Ops {
			t.Fatalf("%s: series counts %d operations, intervals' histograms %d, step %d", name, inSeries, inIntervals, st.Ops)
		}
		if verified != st.Verify.Checked {
			t.Fatalf("%s: workers verified %d, step says %d", name, verified, st.Verify.Checked)
		}
		sum := st.Resources.After.CPUUserNs + st.Resources.After.CPUSysNs - st.Resources.Before.CPUUserNs - st.Resources.Before.CPUSysNs
		if sum != cpuNs {
			t.Fatalf("%s: step's CPU %d ns, workers' sum %d ns", name, sum, cpuNs)
		}
		t.Logf("%s: %d ops, p50 %v p99 %v max %v, per worker %v", name, st.Ops, merged.ValueAtQuantile(50), merged.ValueAtQuantile(99), merged.Max(), opsOf(st.Workers))
		// The same operations as one worker's: the same number of reads
		// verified (which reads is fixed by the seed and the sequence
		// numbers, whoever does them).
		o := one.Find("ycsb", st.Phase, st.N)
		if o == nil || o.Ops != st.Ops || o.Verify.Checked != st.Verify.Checked {
			t.Fatalf("%s: one worker did %+v, three %d ops verifying %d", name, o, st.Ops, st.Verify.Checked)
		}
		if st.Phase == "c" {
			// Open loop at 1500 ops/s in total: each worker a third.
			rate := float64(st.Ops) / st.Seconds
			if rate < 1500*0.85 || rate > 1500*1.1 || st.Intended == nil || st.Rate != 1500 {
				t.Fatalf("c: %.0f ops/s in total over %.2fs (offered %v), want about 1500", rate, st.Seconds, st.Rate)
			}
			for _, w := range st.Workers {
				if w.OpsPerS < 500*0.85 || w.OpsPerS > 500*1.15 {
					t.Fatalf("c: worker %d ran at %.0f ops/s, want about 500", w.Index, w.OpsPerS)
				}
			}
			t.Logf("c: %.0f ops/s in total, intended-start p99 %v", rate, st.Intended.P99)
		}
	}
}

func opsOf(ws []results.WorkerPart) []int64 {
	var out []int64
	for _, w := range ws {
		out = append(out, w.Ops)
	}
	return out
}

// An embedded engine is opened by one process: several workers on it are
// refused before anything runs, in one line, exit 2.
func TestWorkersOnAnEmbeddedEngineAreRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ycsb-small.yaml")
	os.WriteFile(p, []byte(ycsbSmall), 0o644)
	_, stderr, code := runCLI(t, "run", p, "--out", t.TempDir(), "--workers", "2")
	if code != 2 || !strings.Contains(stderr, "--workers 2") || !strings.Contains(stderr, "pebble is an embedded engine") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d: %q", code, stderr)
	}
}

// client_cpus bounds the worker's GOMAXPROCS: the worker says so in the
// target's settings; a bad value names the file, line and field.
func TestClientCPUs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("name: cpus\nladder: [200]\nclient_cpus: 1\ntargets: [pebble]\nworkloads:\n  - name: ycsb\n    params: {workloads: [c], operations: 300}\n"), 0o644)
	out := t.TempDir()
	if stdout, stderr, code := runCLI(t, "run", p, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Targets[0].Settings["client_cpus"]; !strings.HasPrefix(got, "1 ") {
		t.Errorf("settings client_cpus %q, want 1", got)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: cpus\nladder: [200]\nclient_cpus: -2\ntargets: [pebble]\nworkloads:\n  - name: ycsb\n"), 0o644)
	if _, stderr, code := runCLI(t, "run", bad, "--out", t.TempDir()); code != 2 || !strings.Contains(stderr, "bad.yaml:3") || !strings.Contains(stderr, "client_cpus") {
		t.Errorf("client_cpus -2: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "run", p, "--client-cpus", "-1", "--out", t.TempDir()); code != 2 || !strings.Contains(stderr, "--client-cpus -1") {
		t.Errorf("--client-cpus -1: exit %d, %s", code, stderr)
	}
}

// --workers on a target whose data its workers cannot share (memcached
// has no Attach for YCSB's table) is refused before anything starts:
// exit 2 in one line naming the target and why, no server started (the
// run's STOREBENCH_HOME is left empty, nothing is written under --out, no
// "starting" line); the study's own `workers:` alike.
func TestWorkersOnATargetThatCannotShareAreRefusedBeforeAnythingStarts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.yaml")
	os.WriteFile(p, []byte("name: w\nladder: [100]\ntargets: [memcached]\nworkloads:\n  - name: ycsb\n    params: {workloads: [a], operations: 100}\n"), 0o644)
	pw := filepath.Join(t.TempDir(), "w2.yaml")
	os.WriteFile(pw, []byte("name: w\nladder: [100]\nworkers: 2\ntargets: [memcached]\nworkloads:\n  - name: ycsb\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", p, "--workers", "4"}, "--workers 4: 4: memcached cannot share its data among worker processes (no data shared across worker processes), which step ycsb.load"},
		{[]string{"run", "ycsb", "--targets", "memcached", "--workers", "256"}, "--workers 256: 256: memcached cannot share its data among worker processes"},
		{[]string{"run", pw}, pw + ":3: workers: 2: memcached cannot share its data among worker processes"},
		{[]string{"run", p, "--hosts", "local,local"}, "--hosts local,local: 2: memcached cannot share its data among worker processes"},
	} {
		home, out := t.TempDir(), t.TempDir()
		cmd := storebench(t, append(c.args, "--out", out)...)
		cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 2 || !strings.Contains(e.String(), c.want) || strings.Count(strings.TrimSpace(e.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q\nwant exit 2 and one line with %q", c.args, code, e.String(), c.want)
		}
		if strings.Contains(o.String()+e.String(), "starting") {
			t.Errorf("%v: something started:\n%s%s", c.args, o.String(), e.String())
		}
		for _, d := range []string{home, out} {
			if ents, _ := os.ReadDir(d); len(ents) != 0 {
				t.Errorf("%v: %s holds %v: something ran", c.args, d, ents)
			}
		}
	}
}

// Several workers on one PostgreSQL: every worker process opens the
// target at once, and the ledger schema each one makes sure of (CREATE
// ... IF NOT EXISTS, not safe against itself in PostgreSQL) used to fail
// all but one ("duplicate key value violates unique constraint
// pg_type_typname_nsp_index"); the schema is made behind an advisory lock.
func TestWorkersOnPostgres(t *testing.T) {
	// Quoted: the URI's password may hold characters a YAML flow list
	// reads as its own.
	uri := strconv.Quote(servertest.URI(t, "postgres"))
	for range 2 {
		tr, _ := runWorkers(t, uri, "--workers", "3")
		if len(tr.Workers) != 3 {
			t.Fatalf("target's workers: %+v", tr.Workers)
		}
	}
}

// The managed PostgreSQL accepts 97 client connections: 4 workers of 32
// connections each are refused before anything starts (exit 2, one line
// naming the target, the arithmetic and the bound); they used to fail
// the load mid-run with "sorry, too many clients already".
func TestWorkersBeyondTheManagedServersConnectionsAreRefused(t *testing.T) {
	home, out := t.TempDir(), t.TempDir()
	cmd := storebench(t, "run", "ycsb", "--targets", "postgres", "--workers", "4", "--concurrency", "32", "--out", out)
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	want := "--workers 4: postgres: 4 worker process(es) × 32 connections (the most load goroutines of a step) = 128, more than the managed postgres server accepts (97)"
	if code != 2 || !strings.Contains(e.String(), want) || strings.Count(strings.TrimSpace(e.String()), "\n") != 0 {
		t.Errorf("exit %d, stderr %q\nwant exit 2 and %q", code, e.String(), want)
	}
	for _, d := range []string{home, out} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s holds %v: something ran", d, ents)
		}
	}
}
