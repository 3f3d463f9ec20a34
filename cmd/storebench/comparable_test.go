package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyRun runs study (a file) with args on pebble alone and returns its
// run directory.
func tinyRun(t *testing.T, studyFile string, args ...string) string {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"run", studyFile, "--out", out, "--quiet", "--targets", "pebble"}, args...)
	if _, stderr, code := runCLI(t, args...); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	return onlyDir(t, out)
}

// editResults rewrites fields of a run directory's results.json, as a
// run on another machine or of another storebench would have written
// them.
func editResults(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// compare checks that the runs measured the same thing the same way: runs
// of different studies or workloads are refused (exit 2, naming the
// difference) unless forced, on either side of repeated runs too, and
// every other difference is listed above the verdicts, on the console and
// in the HTML page.
func TestCompareChecksTheRunsAreComparable(t *testing.T) {
	tiny := writeStudy(t, "1s")
	a := tinyRun(t, tiny)
	b := tinyRun(t, tiny, "--durability", "async", "--set", "ledger.stress.rate=100", "--concurrency", "3", "--ladder", "10,1e3")
	src, _ := os.ReadFile(tiny)
	other := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(other, []byte(strings.Replace(string(src), "name: tiny", "name: other", 1)), 0o644)
	c := tinyRun(t, other)
	// A study of the same name with another workload.
	ycsb := filepath.Join(t.TempDir(), "tiny-ycsb.yaml")
	os.WriteFile(ycsb, []byte("name: tiny\nladder: [300]\nconcurrency: 2\ntargets: [pebble]\nworkloads:\n  - name: ycsb\n    params: {workloads: [c], operations: 300}\n"), 0o644)
	d := tinyRun(t, ycsb)

	refused := func(want []string, args ...string) {
		t.Helper()
		stdout, stderr, code := runCLI(t, append([]string{"compare"}, args...)...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--force") {
			t.Errorf("compare %v: exit %d, want 2 with one line naming the difference and --force\nstdout: %.300s\nstderr: %s", args, code, stdout, stderr)
			return
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("compare %v: %q does not name %q", args, stderr, w)
			}
		}
	}
	refused([]string{`A is a run of study "tiny", B of study "other"`}, a, c)
	refused([]string{"A ran workloads ledger, B ran ycsb"}, a, d)
	// Repeated runs are checked within each side.
	refused([]string{`A1 is a run of study "tiny", A2 of study "other"`}, a+","+c, b)
	refused([]string{"A ran workloads ledger, B2 ran ycsb"}, a, b+","+d)
	refused([]string{`run1 is a run of study "tiny", run2 of study "other"`}, a+","+c, "--targets", "pebble,pebble")

	// Forced: the comparison, the study named as a difference above it.
	stdout, stderr, code := runCLI(t, "compare", a, c, "--force")
	if code != 0 || !strings.Contains(stdout, "| study | tiny | other |") || strings.Index(stdout, "# Runs compared") > strings.Index(stdout, "# Comparison") {
		t.Errorf("compare --force: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Runs of one study that differ in how they ran: compared, every
	// difference listed above the verdicts. The machine and storebench's
	// version are as another machine's run of another version records them.
	b2 := filepath.Join(t.TempDir(), "b2")
	if err := exec.Command("cp", "-a", b, b2).Run(); err != nil {
		t.Fatal(err)
	}
	editResults(t, b2, func(m map[string]any) {
		m["storebench_version"] = "v9.9.9"
		m["host"].(map[string]any)["cpu_model"] = "Other CPU"
		m["host"].(map[string]any)["logical_cpus"] = 64
	})
	page := filepath.Join(t.TempDir(), "cmp.html")
	stdout, stderr, code = runCLI(t, "compare", a, b2, "--html", page)
	html, _ := os.ReadFile(page)
	for _, want := range []string{
		"| durability | sync | async |",
		"| concurrency | 2 | 3 |",
		"| ladder | 10, 300 | 10, 1e3 |",
		"| ledger.stress.rate | 200 | 100 |",
		"| storebench version | dev | v9.9.9 |",
		"| machine: logical CPUs |",
		"| machine: CPU |",
		"| pebble: durability |",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("compare of runs that differ: no %q\nexit %d\n%s\n%s", want, code, stdout, stderr)
		}
	}
	if code != 0 || strings.Index(stdout, "**The runs differ**") > strings.Index(stdout, "# Comparison") {
		t.Errorf("compare of runs that differ: exit %d, differences not above the verdicts\n%s", code, stdout)
	}
	for _, want := range []string{"Runs compared", "ledger.stress.rate", "storebench version", "v9.9.9", "machine: CPU"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("compare --html: the page lacks %q", want)
		}
	}

	// Alike runs say so (a's copy, started at another time, stands for
	// another run of the same study the same way).
	a2 := filepath.Join(t.TempDir(), "a2")
	if err := exec.Command("cp", "-a", a, a2).Run(); err != nil {
		t.Fatal(err)
	}
	editResults(t, a2, func(m map[string]any) { m["started"] = "2020-01-02T03:04:05Z" })
	stdout, _, code = runCLI(t, "compare", a, a2)
	if code != 0 || !strings.Contains(stdout, "The runs are alike in study, workloads and their parameters") {
		t.Errorf("compare of alike runs: exit %d\n%.600s", code, stdout)
	}
	// A run with itself (named twice, or by its results.json) is
	// refused, saying so (issue 33); a copy is another file, which may
	// be an older schema's rendition of it (TestHdrOutputsReadByReferenceReaders).
	for _, other := range []string{a, filepath.Join(a, "results.json")} {
		stdout, stderr, code = runCLI(t, "compare", a, other)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "compare: "+a+" and "+other+" are the same run") {
			t.Errorf("compare %s %s: exit %d, stderr %q; want exit 2, the same run", a, other, code, stderr)
		}
	}
}

// A results.json that parses but holds no run is refused by report and
// compare, naming what it lacks, instead of rendering an empty report.
func TestReportAndCompareRefuseResultsWithoutARun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"schema_version":1}`), 0o644)
	stdout, stderr, code := runCLI(t, "report", dir)
	if code != 2 || !strings.Contains(stderr, "no study and no targets") || stdout != "" {
		t.Errorf("report of {\"schema_version\":1}: exit %d\nstdout: %.300s\nstderr: %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err == nil {
		t.Error("report wrote report.md for a results.json without a run")
	}
	_, stderr, code = runCLI(t, "compare", dir, filepath.Join(dir, "results.json"))
	if code != 2 || !strings.Contains(stderr, "no study and no targets") {
		t.Errorf("compare of {\"schema_version\":1}: exit %d\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"schema_version":2,"study":"tiny","targets":[]}`), 0o644)
	if _, stderr, code = runCLI(t, "report", dir); code != 2 || !strings.Contains(stderr, "has no targets") {
		t.Errorf("report of a results.json without targets: exit %d\n%s", code, stderr)
	}
}

// report on a run directory it cannot write says why in one line naming
// the directory, exits 2, and offers --out, which writes the report
// elsewhere. The tests run as root, whom permission bits do not stop:
// the run directory's report.md is made a directory (which stops anyone
// from replacing it with a file), and where chattr works, the directory is
// made immutable (which stops root too).
func TestReportOnAnUnwritableRunDirectory(t *testing.T) {
	dir := tinyRun(t, writeStudy(t, "1s"))
	check := func(how string) {
		t.Helper()
		stdout, stderr, code := runCLI(t, "report", dir)
		line := strings.TrimSpace(stderr)
		if code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "cannot write the report into the run directory "+dir) || !strings.Contains(line, "--out DIR") || stdout != "" {
			t.Errorf("report with %s: exit %d, want 2 and one line naming the directory and --out\nstdout: %.300s\nstderr: %s", how, code, stdout, stderr)
		}
		out := filepath.Join(t.TempDir(), "elsewhere")
		stdout, stderr, code = runCLI(t, "report", dir, "--out", out)
		if code != 0 || !strings.Contains(stdout, "tiny") {
			t.Fatalf("report --out with %s: exit %d\n%s", how, code, stderr)
		}
		md, _ := os.ReadFile(filepath.Join(out, "report.md"))
		html, _ := os.ReadFile(filepath.Join(out, "report.html"))
		charts, _ := filepath.Glob(filepath.Join(out, "charts", "*.png"))
		if !strings.Contains(string(md), "Pebble") || !strings.Contains(string(html), "Pebble") || len(charts) == 0 {
			t.Errorf("report --out with %s: report.md %d bytes, report.html %d bytes, %d charts", how, len(md), len(html), len(charts))
		}
	}

	md := filepath.Join(dir, "report.md")
	if err := os.Remove(md); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(md, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("report.md a directory")
	os.RemoveAll(md)

	if exec.Command("chattr", "+i", dir).Run() != nil {
		t.Log("chattr +i not available here: the immutable directory case is not tried")
		return
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	check("an immutable run directory")
}
