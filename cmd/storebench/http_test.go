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
