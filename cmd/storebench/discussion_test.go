package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"storebench/internal/results"
)

// Two workloads, each at its own concurrency with a sweep above it, on
// two managed web servers and an embedded engine (each n/a for the
// other's workload).
const discussionSmall = `name: discussion-small
ladder: [1000]
concurrency: 2
targets: [nginx, node, sqlite]
workloads:
  - name: http
    concurrency: 4
    params:
      requests: 400
      keep_alive: false
    sweep:
      concurrency: [16]
  - name: ycsb
    params: {workloads: [c], operations: 4000}
    sweep:
      concurrency: [8]
`

// A real run's report ends with the discussion, built from its
// results.json: each step's level (the entry's own concurrency for the
// phase's own step), the throughput ratio between levels, and the leader
// at each level with the runner-up's ratio.
func TestDiscussionOfARealRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "discussion-small.yaml")
	os.WriteFile(p, []byte(discussionSmall), 0o644)
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
	if run.WorkloadConcurrency["http"] != 4 || run.Concurrency != 2 {
		t.Fatalf("concurrency %d, per workload %v", run.Concurrency, run.WorkloadConcurrency)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	i := strings.Index(string(md), "## Discussion")
	if i < 0 {
		t.Fatalf("report.md has no discussion:\n%s", md)
	}
	d := string(md[i:])
	rate := func(s *results.Step) float64 { return float64(s.Ops) / s.Seconds }
	type got struct {
		title string
		v     float64
	}
	for _, c := range []struct {
		workload, phase string
		lo, hi          string
		targets         []string
	}{{"http", "close", "4", "16", []string{"nginx", "node"}}, {"ycsb", "c", "2", "8", []string{"sqlite"}}} {
		var at []got
		for _, tr := range run.Targets {
			if !contains(c.targets, tr.Name) {
				continue
			}
			var own, swept *results.Step
			for _, s := range tr.Steps {
				if s.Workload == c.workload && s.Phase == c.phase {
					if s.Labels[results.LConcurrency] == c.hi {
						swept = s
					} else if s.Labels[results.LConcurrency] == "" {
						own = s
					}
				}
			}
			if own == nil || swept == nil {
				t.Fatalf("%s %s %s: steps missing", tr.Name, c.workload, c.phase)
			}
			for _, lv := range []string{c.lo, c.hi} {
				if row := fmt.Sprintf("| %s | %s | %s | ", tr.Title, c.phase, lv); !strings.Contains(d, row) {
					t.Errorf("no bottleneck row %q", row)
				}
			}
			r := fmt.Sprintf("| %s → %s | %.0f/s → %.0f/s | ×%.2f |", c.lo, c.hi, rate(own), rate(swept), rate(swept)/rate(own))
			if !strings.Contains(d, r) {
				t.Errorf("%s: no reaction %q", tr.Title, r)
			}
			at = append(at, got{tr.Title, rate(own)})
		}
		if len(at) > 1 {
			sort.Slice(at, func(i, j int) bool { return at[i].v > at[j].v })
			row := fmt.Sprintf("| %s | %s | %s: %.0f/s, ", c.phase, c.lo, at[0].title, at[0].v)
			ratio := fmt.Sprintf("| ×%.2f |", at[1].v/at[0].v)
			if !strings.Contains(d, row) || !strings.Contains(d, ratio) {
				t.Errorf("no pick %q with %q", row, ratio)
			}
		}
	}
	for _, w := range []string{"### http", "### ycsb", "Not applicable: SQLite (no HTTP)"} {
		if !strings.Contains(d, w) {
			t.Errorf("discussion lacks %q:\n%s", w, d)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
