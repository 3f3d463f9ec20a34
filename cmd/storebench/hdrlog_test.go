package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/results"
)

// The reference HdrHistogram readers, installed by
// scripts/install-hdr-readers.sh (which scripts/test.sh runs).
const installReaders = "scripts/install-hdr-readers.sh"

// hdrPython is the Python of the venv that holds HdrHistogram_py.
func hdrPython(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("STOREBENCH_HDR_VENV")
	if venv == "" {
		home, _ := os.UserHomeDir()
		venv = filepath.Join(home, ".cache", "storebench", "hdr-venv")
	}
	py := filepath.Join(venv, "bin", "python")
	if out, err := exec.Command(py, "-c", "import hdrh.log").CombinedOutput(); err != nil {
		t.Fatalf("the reference HdrHistogram reader (PyPI hdrhistogram 0.10.8) is missing in %s: %v %s\ninstall it with: %s", venv, err, out, installReaders)
	}
	return py
}

// hdrJar is HdrHistogram's Java jar, for its HistogramLogProcessor.
func hdrJar(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	jar := filepath.Join(home, ".m2", "repository", "org", "hdrhistogram", "HdrHistogram", "2.2.2", "HdrHistogram-2.2.2.jar")
	_, errJar := os.Stat(jar)
	_, errJava := exec.LookPath("java")
	if errJar != nil || errJava != nil {
		t.Fatalf("the reference HdrHistogram reader (Maven org.hdrhistogram:HdrHistogram:2.2.2 and java) is missing: %v %v\ninstall it with: %s", errJar, errJava, installReaders)
	}
	return jar
}

// pyTotals runs testdata/hdr_totals.py with HdrHistogram_py.
func pyTotals(t *testing.T, py string, v any, args ...string) {
	t.Helper()
	out, err := exec.Command(py, append([]string{filepath.Join("testdata", "hdr_totals.py")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("HdrHistogram_py cannot read %.80v: %v\n%s", args, err, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("hdr_totals.py: %v\n%s", err, out)
	}
}

var javaTotal = regexp.MustCompile(`Total count\s*=\s*(\d+)`)

// javaTotal is the total count HdrHistogram's HistogramLogProcessor finds
// in a log: the untagged intervals, or those of tag.
func javaTotalCount(t *testing.T, jar, log, tag string) int64 {
	t.Helper()
	args := []string{"-cp", jar, "org.HdrHistogram.HistogramLogProcessor", "-i", log}
	if tag != "" {
		args = append(args, "-tag", tag)
	}
	out, err := exec.Command("java", args...).CombinedOutput()
	m := javaTotal.FindAllSubmatch(out, -1)
	if err != nil || len(m) == 0 {
		t.Fatalf("HistogramLogProcessor cannot read %s (tag %q): %v\n%.2000s", log, tag, err, out)
	}
	n, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
	return n
}

func hlogPath(dir, target string, s *results.Step) string {
	// Named by the step's labels, e.g. ledger-chain-n1e3-len10.
	return filepath.Join(dir, "hdr", target, s.Name()+".hlog")
}

const hdrStudy = `name: hdr
title: HDR logs
ladder: [10, 300]
concurrency: 2
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 50
      chains: {lengths: [10], samples: 1}
      stress: {duration: 4s, rate: 300}
      balance: {addresses: 2000, reads: 200}
`

// A real run's HDR outputs are read by the reference readers, which
// nobody here wrote: every .hlog by HdrHistogram's Java
// HistogramLogProcessor and by HdrHistogram_py's HistogramLogReader, every
// hist field of results.json by HdrHistogram_py; their totals are the
// operation counts of results.json, for the service time (untagged
// intervals) and, in the open-loop stress phase, for the latency from the
// intended start (Tag=intended). An open-loop phase also has its
// intended-start p99 per tick, drawn and named apart from the service time.
// Then the old, doubly encoded results.json still reports and compares.
func TestHdrOutputsReadByReferenceReaders(t *testing.T) {
	py, jar := hdrPython(t), hdrJar(t)
	out := t.TempDir()
	studyFile := filepath.Join(t.TempDir(), "hdr.yaml")
	if err := os.WriteFile(studyFile, []byte(hdrStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI(t, "run", studyFile, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	var hists []string
	var counts []int64
	openLoop := 0
	for _, s := range tr.Steps {
		log := hlogPath(dir, tr.Name, s)
		what := fmt.Sprintf("%s N=%d", s.Phase, s.N)
		if s.Ops == 0 || s.Latency.Count != s.Ops {
			t.Fatalf("%s: %d ops, latency count %d", what, s.Ops, s.Latency.Count)
		}
		var byTag map[string]int64
		pyTotals(t, py, &byTag, "log", log)
		want := map[string]int64{"": s.Latency.Count}
		if s.Intended != nil {
			openLoop++
			want["intended"] = s.Intended.Count
		}
		if fmt.Sprint(byTag) != fmt.Sprint(want) {
			t.Errorf("%s: HdrHistogram_py reads %s as %v, results.json says %v", what, filepath.Base(log), byTag, want)
		}
		if n := javaTotalCount(t, jar, log, ""); n != s.Latency.Count {
			t.Errorf("%s: HistogramLogProcessor counts %d in %s, results.json %d", what, n, filepath.Base(log), s.Latency.Count)
		}
		hists, counts = append(hists, s.Hist), append(counts, s.Latency.Count)
		if s.Intended != nil {
			if n := javaTotalCount(t, jar, log, "intended"); n != s.Intended.Count {
				t.Errorf("%s: HistogramLogProcessor counts %d intended-start values, results.json %d", what, n, s.Intended.Count)
			}
			hists, counts = append(hists, s.HistIntended), append(counts, s.Intended.Count)
			checkIntendedTicks(t, what, s)
		}
	}
	if openLoop == 0 {
		t.Fatal("no open-loop phase in the run")
	}
	var got []int64
	pyTotals(t, py, &got, append([]string{"hist"}, hists...)...)
	if fmt.Sprint(got) != fmt.Sprint(counts) {
		t.Errorf("HdrHistogram_py decodes results.json's hist fields to counts %v, want %v", got, counts)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, want := range []string{"service time p99", "latency from intended start p99"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html has no time series named %q", want)
		}
	}

	// A results.json of an older storebench, hist fields base64-encoded
	// twice, still draws its percentile charts and judges short phases
	// from its histograms.
	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	writeDoubleEncoded(t, filepath.Join(dir, "results.json"), filepath.Join(old, "results.json"))
	if stdout, stderr, code := runCLI(t, "report", old); code != 0 {
		t.Fatalf("report of an old results.json: exit %d\n%s\n%s", code, stdout, stderr)
	}
	oldPage, _ := os.ReadFile(filepath.Join(old, "report.html"))
	for _, want := range []string{"ledger stress: service time distribution", "ledger stress: latency from intended start distribution", "ledger balance: service time distribution"} {
		if !strings.Contains(string(oldPage), want) {
			t.Errorf("report of an old results.json lacks the chart %q", want)
		}
	}
	if strings.Contains(string(oldPage), "unreadable") {
		t.Error("report of an old results.json says a histogram is unreadable")
	}
	stdout, stderr, code := runCLI(t, "compare", old, dir)
	if code != 0 || strings.Contains(stdout, "unreadable") || !strings.Contains(stdout, "| ledger balance N=300 | p99 service time |") {
		t.Fatalf("compare old and new: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "| ledger balance N=300 | p99 service time") && !strings.Contains(line, "(percentile confidence intervals)") {
			t.Errorf("a short phase of an old results.json not judged from its histograms: %s", line)
		}
	}
}

// checkIntendedTicks: every tick with operations of an open-loop phase has
// its latency-from-intended-start p99, which can never be below the
// service time p99 of the same operations.
func checkIntendedTicks(t *testing.T, what string, s *results.Step) {
	t.Helper()
	ticks := 0
	for _, k := range s.Series {
		if k.Ops == 0 {
			continue
		}
		ticks++
		if k.IntendedP99 <= 0 || k.IntendedP99 < k.P99 || k.IntendedMax < k.Max {
			t.Errorf("%s tick %.3fs: intended p99 %d max %d, service p99 %d max %d", what, k.T, k.IntendedP99, k.IntendedMax, k.P99, k.Max)
		}
	}
	if ticks < 3 {
		t.Errorf("%s: %d ticks with operations", what, ticks)
	}
}

// writeDoubleEncoded copies a results.json with its hist fields in the old
// double base64 encoding.
func writeDoubleEncoded(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tg := range r["targets"].([]any) {
		for _, st := range tg.(map[string]any)["steps"].([]any) {
			m := st.(map[string]any)
			for _, k := range []string{"hist", "hist_intended"} {
				if s, ok := m[k].(string); ok && s != "" {
					m[k] = base64.StdEncoding.EncodeToString([]byte(s))
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no hist field to rewrite")
	}
	if b, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
