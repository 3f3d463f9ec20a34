package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

// `storebench run documents`, small, on SQLite: every mode at the
// study's threads and at a swept level, and the report section with the
// tool's figures.
func TestRunDocumentsEndToEnd(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", "documents", "--targets", "sqlite", "--ladder", "200", "--out", out,
		"--set", "documents.duration=1s", "--set", "documents.operations=300", "--set", "documents.sweep.concurrency=2")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int{}
	for _, s := range run.Targets[0].Steps {
		if s.Error != "" {
			t.Fatalf("%s: %s", s.Phase, s.Error)
		}
		modes[s.Phase]++
		if s.Phase != "prepare" && (s.Metrics["count"] != float64(s.Ops) || s.Metrics["mean_rate"] <= 0) {
			t.Errorf("%s: timer figures %v", s.Phase, s.Metrics)
		}
	}
	for _, m := range []string{"insert", "iterate_one", "update_one", "delete_one"} {
		if modes[m] != 2 {
			t.Errorf("%s ran %d times, want the study's threads and the sweep's level", m, modes[m])
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ITERATE_ONE: find one document by its indexed _id", "15-minute rate", "99.9%", "HDR p99.9", "json_extract(doc, '$._id')"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
