package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
	"storebench/internal/workload/roots"
)

// results.json is on disk from the start ("running"), and after each
// target (and step); the report is rendered once, when the run is over.
func TestResultsAfterEachTargetReportOnceAtTheEnd(t *testing.T) {
	out := t.TempDir()
	cmd := storebench(t, "run", writeStudy(t, "4s"), "--out", out, "--ladder", "10")
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var dir string
	deadline := time.After(60 * time.Second)
	for dir == "" {
		select {
		case err := <-done:
			t.Fatalf("run ended before results.json of the first target appeared: %v\n%s", err, e.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no results.json after 60 s\n%s", e.String())
		case <-time.After(50 * time.Millisecond):
		}
		ents, _ := os.ReadDir(out)
		if len(ents) == 1 {
			r, err := results.Read(filepath.Join(out, ents[0].Name(), "results.json"))
			if err == nil && r.Targets[0].Status == "ok" {
				dir = filepath.Join(out, ents[0].Name())
			}
		}
	}
	// The second target's 4 s stress phase is still running: a report
	// rendered after the first target would be there by now.
	time.Sleep(time.Second)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "running" || len(run.Targets) != 2 || run.Targets[0].Find("ledger", "stress", -1) == nil || run.Targets[1].Status != "running" {
		t.Fatalf("results.json after the first target: %s, %d targets", run.Status, len(run.Targets))
	}
	for _, f := range []string{"report.md", "report.html", "charts"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s written before the run ended (%v)", f, err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, e.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("run did not end\n%s", e.String())
	}
	for _, f := range []string{"report.md", "report.html", "charts"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s missing at the end: %v", f, err)
		}
	}
}

// A results.json of schema version 1, written by storebench before
// workloads owned their results (an ads-rw run on MPT and GoLevelDB), is
// read, upgraded (its roots move into the workload's facts), reported and
// compared.
func TestSchema1ResultsStillReportAndCompare(t *testing.T) {
	old := filepath.Join("testdata", "schema1-ads-rw", "results.json")
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"schema_version": 1,`)) || !bytes.Contains(b, []byte(`"root": "3fa2d67d`)) {
		t.Fatal("the fixture is not a version 1 file with roots")
	}
	run, err := results.Read(old)
	if err != nil {
		t.Fatal(err)
	}
	create := run.Targets[0].Find("ads-rw", "create", -1)
	if run.SchemaVersion != results.SchemaVersion || create == nil || !strings.HasPrefix(create.Facts[roots.Root], "3fa2d67d") || create.Facts[roots.Digest] == "" {
		t.Fatalf("not upgraded: version %d, create %+v", run.SchemaVersion, create)
	}
	// `report` renders into the run's directory: work on a copy.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "report", dir)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"## Basic read & write", "`3fa2d67dbbd1a562`", "none (plain engine)", "## Recommendation"} {
		if !strings.Contains(string(md), want) || !strings.Contains(stdout, want) {
			t.Errorf("report of a version 1 run lacks %q:\n%s", want, md)
		}
	}
	stdout, stderr, code = runCLI(t, "compare", dir, "--targets", "mpt,goleveldb")
	if code != 0 || !strings.Contains(stdout, "ads-rw create") {
		t.Fatalf("compare: exit %d: %s\n%s", code, stderr, stdout)
	}
}
