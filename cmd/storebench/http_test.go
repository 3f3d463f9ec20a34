package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

const httpSmall = `name: http-small
ladder: [1]
concurrency: 4
targets: [nginx, node]
workloads:
  - name: http
    params:
      requests: 200
      keep_alive: [false, true]
    sweep:
      concurrency: [16]
`

// storebench run on an HTTP study starts nginx and Node.js, runs both
// phases at both concurrency levels, verifies every response and prints
// ab's tables.
func TestRunHTTPStudy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "http-small.yaml")
	os.WriteFile(p, []byte(httpSmall), 0o644)
	out := t.TempDir()
	_ = os.Chmod(out, 0o755)
	stdout, stderr, code := runCLI(t, "run", p, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range run.Targets {
		if tr.Status != "ok" || len(tr.Steps) != 4 || tr.Server == nil || !tr.Server.Managed {
			t.Fatalf("%s: %s %s, %d steps", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
		}
		for _, s := range tr.Steps {
			if s.Ops != 200 || s.Verify.Checked != 200 || s.Metrics["failed"] != 0 || s.Facts["hist.total"] == "" {
				t.Errorf("%s %s c=%v: ops %d verify %+v", tr.Name, s.Phase, s.Metrics["concurrency"], s.Ops, s.Verify)
			}
		}
		if !strings.Contains(tr.Server.Settings["page"], "648 bytes") {
			t.Errorf("%s settings %v", tr.Name, tr.Server.Settings)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, w := range []string{"## HTTP (ab shaped)", "### Node.js, keep-alive (ab -k), concurrency 16", "Complete requests:      200", "Connection Times (ms)", " 100%"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
}

// A list of request counts runs a step per count (seed 003's ab -n 500
// and a longer run), each exact, labelled and in the report, at every
// level of the sweep.
func TestRunHTTPRequestCounts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "http-counts.yaml")
	os.WriteFile(p, []byte(`name: http-counts
ladder: [1]
concurrency: 4
targets: [nginx]
workloads:
  - name: http
    params:
      requests: [50, 130]
    sweep:
      concurrency: [8]
`), 0o644)
	out := t.TempDir()
	_ = os.Chmod(out, 0o755)
	stdout, stderr, code := runCLI(t, "run", p, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	got := map[string]int64{}
	for _, s := range tr.Steps {
		got[s.Labels["requests"]+"@"+s.Labels["concurrency"]] = s.Ops
		if want := s.Labels.Int("requests"); s.Ops != want || s.Verify.Checked != want {
			t.Errorf("step %s: %d ops, %d checked", s.Name(), s.Ops, s.Verify.Checked)
		}
	}
	if len(tr.Steps) != 4 || len(got) != 4 {
		t.Fatalf("steps %v", got)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, w := range []string{"concurrency 4, 50 requests", "concurrency 4, 130 requests", "concurrency 8, 130 requests", "Complete requests:      130"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	// A list with a duration is refused, naming the field.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: b\nladder: [1]\ntargets: [nginx]\nworkloads:\n  - name: http\n    params:\n      requests: [5, 6]\n      duration: 2s\n"), 0o644)
	if _, stderr, code := runCLI(t, "run", bad, "--out", t.TempDir()); code != 2 || !strings.Contains(stderr, "bad.yaml:7") || !strings.Contains(stderr, "workloads.http.params.requests") {
		t.Errorf("list with a duration: exit %d, %s", code, stderr)
	}
}
