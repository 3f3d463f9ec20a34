package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
	"storebench/internal/target/servers"
)

const ycsbSmall = `name: ycsb-small
ladder: [300]
concurrency: 2
durability: sync
targets: [pebble]
workloads:
  - name: ycsb
    params:
      workloads: [a, c, e]
      operations: 300
      fields: 4
      field_length: 50
      max_scan_length: 10
`

// Redis has no ordered scan: YCSB E is n/a on it, with the reason, in
// results.json and the report; its other workloads are measured; the run
// is complete and exits 0.
func TestYCSBEIsNAOnATargetWithoutScans(t *testing.T) {
	uri := ownRedisDB(t, 11)
	p := filepath.Join(t.TempDir(), "ycsb-small.yaml")
	os.WriteFile(p, []byte(ycsbSmall), 0o644)
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", p, "--out", out, "--targets", uri+",pebble")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "complete" {
		t.Fatalf("run %s: %s", run.Status, run.Reason)
	}
	r, pb := run.Targets[0], run.Targets[1]
	if r.Status != "ok" || len(r.NA) != 1 || r.NA[0].Phase != "e" || r.NA[0].Status != "n/a" || r.NA[0].Reason != "no ordered scans" {
		t.Fatalf("redis: %s %s, n/a %+v", r.Status, r.Reason, r.NA)
	}
	for _, w := range []string{"load", "a", "c"} {
		if s := r.Find("ycsb", w, 300); s == nil || s.Ops == 0 {
			t.Errorf("redis: ycsb %s not measured", w)
		}
	}
	if r.Find("ycsb", "e", -1) != nil {
		t.Errorf("redis: ycsb e has a step")
	}
	if s := pb.Find("ycsb", "e", 300); pb.Status != "ok" || s == nil || s.Verify.Checked == 0 {
		t.Errorf("pebble: %s, e %+v", pb.Status, s)
	}
	// The raw JSON names the cell's status and reason.
	b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if !strings.Contains(string(b), `"status": "n/a"`) || !strings.Contains(string(b), `"reason": "no ordered scans"`) {
		t.Errorf("results.json lacks the n/a cell")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	var eRow string
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "| E: ") {
			eRow = l
		}
	}
	if !strings.Contains(eRow, "n/a: no ordered scans") || !strings.Contains(eRow, "ops/s") {
		t.Errorf("report.md row of E: %q", eRow)
	}
}

// A target that failed is not hidden when the study's time limit expires
// later: the run is failed and exits 1, and says it was cut short too. A
// run cut short by its time limit alone exits 3.
func TestTimeLimitNeverHidesAFailure(t *testing.T) {
	dead := fmt.Sprintf("redis://127.0.0.1:%d/0", servers.ClosedPort(t))
	out := t.TempDir()
	_, stderr, code := runCLI(t, "run", writeStudy(t, "60s"), "--out", out, "--targets", dead+",pebble", "--time-limit", "6s")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "failed" || !strings.Contains(run.Reason, "study time limit reached") || run.Targets[0].Status != "failed" || run.Targets[1].Status != "partial" {
		t.Fatalf("run %s (%s); %s %s, %s %s", run.Status, run.Reason, run.Targets[0].Name, run.Targets[0].Status, run.Targets[1].Name, run.Targets[1].Status)
	}
	if !strings.Contains(stderr, "study time limit reached") {
		t.Errorf("stderr does not say the run was cut short:\n%s", stderr)
	}

	out = t.TempDir()
	_, stderr, code = runCLI(t, "run", writeStudy(t, "60s"), "--out", out, "--targets", "pebble", "--time-limit", "3s")
	if code != 3 || !strings.Contains(stderr, "run cut short: study time limit reached") {
		t.Fatalf("exit %d, want 3\n%s", code, stderr)
	}
}

// smallFS mounts a 40 MiB tmpfs for the test and unmounts it after.
func smallFS(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a 40 MiB tmpfs and must run as root (make test does in CI); uid %d", os.Getuid())
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, b)
	}
	t.Cleanup(func() {
		if b, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, b)
		}
	})
	return dir
}

// checkRunFiles fails on a temporary file left behind and on a results.json
// or report.md that is not whole.
func checkRunFiles(t *testing.T, root string) {
	t.Helper()
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left behind: %s (%d bytes)", p, fi.Size())
		}
		return nil
	})
	dir := onlyDir(t, root)
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err == nil {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("results.json is not whole: %v", err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.md")); err == nil && len(b) == 0 {
		t.Errorf("report.md is empty")
	}
}

// On a 40 MiB filesystem a ledger ladder up to 1e5 cannot fit: Pebble is
// stopped within seconds with the reason (the step is refused before it
// starts, or stopped once the disk is full), never left hanging, and the
// next target runs after it.
func TestFullDiskStopsTheTargetAndTheNextRuns(t *testing.T) {
	small := smallFS(t)
	out := filepath.Join(small, "res")
	t0 := time.Now()
	_, stderr, code := runCLI(t, "run", "ledger", "--targets", "pebble,sqlite", "--ladder", "10,1000,100000", "--out", out)
	took := time.Since(t0)
	if code == 0 || took > 3*time.Minute {
		t.Fatalf("exit %d after %v\n%s", code, took, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	p, s := run.Targets[0], run.Targets[1]
	noSpace := func(r string) bool {
		return strings.Contains(r, "no space left on device (") || strings.Contains(r, "not enough disk: N=1e5 needs at least")
	}
	if (p.Status != "failed" && p.Status != "partial") || !noSpace(p.Reason) || p.Find("ledger", "insert", 1000) == nil {
		t.Fatalf("pebble: %s (%s)\n%s", p.Status, p.Reason, stderr)
	}
	if s.Status == "skipped" || s.Find("ledger", "insert", 1000) == nil {
		t.Fatalf("sqlite did not run after pebble: %s (%s)", s.Status, s.Reason)
	}
	checkRunFiles(t, out)
}

// A step that fills the disk while it runs (open-loop writes far beyond
// the free space) fails its target within seconds with "no space left on
// device (N bytes free on MOUNT)", instead of hanging in the engine's
// write stall. With --keep-data the disk stays full: nothing is left
// half-written and the run still ends.
func TestDiskFullDuringAStepFailsItWithinSeconds(t *testing.T) {
	small := smallFS(t)
	src := `name: fill
ladder: [10, 1000]
concurrency: 4
targets: [pebble, sqlite]
workloads:
  - name: ledger
    params:
      payload: 1KiB
      selects: 10
      chains: {lengths: [10], samples: 1}
      stress: {duration: 120s, rate: 20000, read_fraction: 0}
      balance: {addresses: 0, reads: 0}
`
	p := filepath.Join(t.TempDir(), "fill.yaml")
	os.WriteFile(p, []byte(src), 0o644)
	out := filepath.Join(small, "res")
	t0 := time.Now()
	_, stderr, code := runCLI(t, "run", p, "--out", out, "--keep-data")
	took := time.Since(t0)
	if code == 0 || took > 100*time.Second {
		t.Fatalf("exit %d after %v (the stress alone would take 120 s per target)\n%s", code, took, stderr)
	}
	checkRunFiles(t, out)
	if !strings.Contains(stderr, "no space left on device (") || !strings.Contains(stderr, " bytes free on "+small) {
		t.Fatalf("no no-space reason naming %s:\n%s", small, stderr)
	}
	// A report is named only when it was written (the disk stayed full).
	// (An error line may name the file it failed to write, report.md.tmp:
	// only the "results:" and "html:" lines say a report is there.)
	for f, head := range map[string]string{"report.md": "results: ", "report.html": "html:    "} {
		path := filepath.Join(onlyDir(t, out), f)
		_, err := os.Stat(path)
		named := slices.Contains(strings.Split(stderr, "\n"), head+path)
		if named != (err == nil) {
			t.Errorf("%s named on stderr: %v; written: %v\n%s", f, named, err == nil, stderr)
		}
	}
	if strings.Contains(stderr, "worker died: exit status") && !strings.Contains(stderr, "log: ") {
		t.Errorf("a worker's death without its last words:\n%s", stderr)
	}
	t.Logf("stderr:\n%s", stderr)
	if b, err := os.ReadFile(filepath.Join(onlyDir(t, out), "results.json")); err == nil {
		var run results.Run
		json.Unmarshal(b, &run)
		// results.json is written from the start ("running"): where its
		// last write found the disk full, the file still says so, and
		// the run must have said it could not write it.
		if run.Status == "running" {
			if !strings.Contains(stderr, "results.json") || !strings.Contains(stderr, "no space left on device") {
				t.Fatalf("results.json left running, and no error said it could not be written:\n%s", stderr)
			}
			return
		}
		if pb := run.Targets[0]; pb.Status != "failed" || !strings.Contains(pb.Reason, "bytes free on "+small) {
			t.Fatalf("pebble: %s (%s)", pb.Status, pb.Reason)
		}
	}
}
