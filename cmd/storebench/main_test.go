package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/cli"
	"storebench/internal/reexec"
	"storebench/internal/results"
)

// The test binary doubles as storebench: with STOREBENCH_AS_MAIN=1 it runs
// the CLI, so `run` starts real worker processes (of this same binary).
func TestMain(m *testing.M) {
	// The helper processes packages start of this binary (the durability
	// workload's engine) are this test binary too.
	if code, ran := reexec.Main(); ran {
		os.Exit(code)
	}
	// Servers that run inside storebench (FerretDB) are started as
	// `<binary> server-main NAME`: here the binary is this test binary.
	if os.Getenv("STOREBENCH_AS_MAIN") == "1" || len(os.Args) > 1 && os.Args[1] == "server-main" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func storebench(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "STOREBENCH_AS_MAIN=1")
	return cmd
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := storebench(t, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

const tinyStudy = `name: tiny
title: tiny ledger
ladder: [10, 300]
concurrency: 2
targets: [pebble, bbolt]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 50
      chains: {lengths: [10, 100], samples: 1}
      stress: {duration: %DUR%, rate: 200}
      balance: {addresses: 2000, reads: 100}
`

func writeStudy(t *testing.T, dur string) string {
	p := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(tinyStudy, "%DUR%", dur)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func onlyDir(t *testing.T, root string) string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one run directory in %s: %v %v", root, ents, err)
	}
	return filepath.Join(root, ents[0].Name())
}

// runOK runs storebench with args and --out (a fresh directory), wants
// exit 0 within limit and its first target ok with steps steps, and
// returns the run's directory, that target and the run's stderr.
func runOK(t *testing.T, limit time.Duration, steps int, args ...string) (string, *results.Target, string) {
	t.Helper()
	out := t.TempDir()
	stdout, stderr, code := runCLIWithin(t, limit, append(args, "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	if tr.Status != "ok" || len(tr.Steps) != steps {
		t.Fatalf("target %s: %s %s, %d steps", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
	}
	return dir, tr, stderr
}

func TestRunWritesResultsReportAndLogs(t *testing.T) {
	out := t.TempDir()
	studyFile := writeStudy(t, "1s")
	stdout, stderr, code := runCLI(t, "run", studyFile, "--out", out, "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	// The text as given, and the study as run (--seed applied) which
	// storebench reads back.
	original, _ := os.ReadFile(filepath.Join(dir, "study.original.yaml"))
	given, _ := os.ReadFile(studyFile)
	asRun, _ := os.ReadFile(filepath.Join(dir, "study.yaml"))
	if string(original) != string(given) || !strings.Contains(string(asRun), "\nseed: 5\n") || strings.Contains(string(given), "seed:") {
		t.Fatalf("study.original.yaml / study.yaml:\n%s\n---\n%s", original, asRun)
	}
	if _, stderr, code := runCLI(t, "run", filepath.Join(dir, "study.yaml"), "--ladder", "0"); code != 2 || !strings.Contains(stderr, "--ladder 0: ") {
		t.Fatalf("the study as run does not load back: exit %d: %s", code, stderr)
	}
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "complete" || len(run.Targets) != 2 {
		t.Fatalf("status %s, %d targets", run.Status, len(run.Targets))
	}
	for _, tr := range run.Targets {
		if tr.Status != "ok" || tr.Settings["durability"] == "" || tr.Version == "" {
			t.Fatalf("target %+v", tr)
		}
		var checked int64
		for _, s := range tr.Steps {
			checked += s.Verify.Checked
			if s.Verify.Failed != 0 {
				t.Fatalf("%s %s: verification failures", tr.Name, s.Phase)
			}
		}
		// 2×50 selects + 110 chain txns + stress reads + 100 balances.
		if checked < 310 {
			t.Fatalf("%s: only %d reads verified", tr.Name, checked)
		}
		ins := tr.Find("ledger", "insert", 300)
		if ins == nil || ins.Resources.DiskAllocated == 0 || ins.Resources.After.RSSBytes == 0 {
			t.Fatalf("%s: insert step lacks resources: %+v", tr.Name, ins)
		}
		// Synced inserts reach the device under the data directory.
		if ins.Resources.Device == "" || ins.Resources.DeviceWriteBytes <= 0 {
			t.Fatalf("%s: insert step lacks device I/O: %+v", tr.Name, ins.Resources)
		}
		if st := tr.Find("ledger", "stress", -1); st == nil || st.Intended == nil || len(st.Series) == 0 {
			t.Fatalf("%s: stress step lacks open-loop figures", tr.Name)
		}
	}
	if run.Host.LogicalCPUs == 0 || run.Host.Kernel == "" || run.Storage.Filesystem == "" || !strings.Contains(run.StudySource, "tiny") {
		t.Fatalf("hardware/software not captured: %+v %+v", run.Host, run.Storage)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"Insert of a txn chain of 300 txns", "Select one txn from a DB of 300 txns", "fsync per write batch", "me /", "From intended start"} {
		if !strings.Contains(string(md), want) || !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	hlogs, _ := filepath.Glob(filepath.Join(dir, "hdr", "pebble", "*.hlog"))
	if len(hlogs) < 5 {
		t.Fatalf("HDR logs: %v", hlogs)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatal("data directory left behind")
	}
	// report re-renders the same report from results.json, and prints
	// what run printed (the Markdown without the charts' picture links).
	again, _, code := runCLI(t, "report", dir)
	md2, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if code != 0 || string(md2) != string(md) || !strings.HasSuffix(stdout, again) {
		t.Fatalf("report re-render differs (exit %d)", code)
	}
	// The results.json path names the run as well as its directory.
	again, stderr, code = runCLI(t, "report", filepath.Join(dir, "results.json"))
	md2, _ = os.ReadFile(filepath.Join(dir, "report.md"))
	if code != 0 || string(md2) != string(md) || !strings.HasSuffix(stdout, again) {
		t.Fatalf("report RUN/results.json: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"report.html", "charts/ledger-insert-scaling.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run did not write %s: %v", f, err)
		}
	}
}

func TestBadInputIsOneLineAndExit2(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nladder: [10]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n    params:\n      selects: many\n"), 0o644)
	cases := [][]string{
		{"run", bad},
		{"run", "ledger", "--ladder", "10,1"},
		{"run", "ledger", "--targets", "nosuchdb"},
		{"run", "nosuchstudy"},
		{"run"},
		{"frobnicate"},
		{"report", t.TempDir()},
	}
	for _, args := range cases {
		_, stderr, code := runCLI(t, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || strings.Contains(stderr, "panic") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	_, stderr, _ := runCLI(t, "run", bad)
	if !strings.Contains(stderr, "bad.yaml:7: workloads.ledger.params.selects:") {
		t.Errorf("bad study error does not name file:line: field: %q", stderr)
	}
}

// Inputs that used to be silently reinterpreted (an empty --targets ran
// every default target, a duplicate ran twice into the same files,
// --concurrency 0 became 8, --seed -7 was ignored), unsafe names, files
// past the limits, and messages that blamed the wrong thing: each is one
// line, exit 2, saying what is wrong where.
func TestInputsAreNeverReinterpreted(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	body := "ladder: [10]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n"
	escape := file("escape.yaml", "name: ../../../x\n"+body)
	nul := file("nul.yaml", "name: \"a\\0b\"\n"+body)
	long := file("long.yaml", "name: "+strings.Repeat("n", 300)+"\n"+body)
	twoDocs := file("two.yaml", "name: x\n"+body+"---\nname: y\n")
	huge := file("huge.yaml", "name: x\n"+body+"description: "+strings.Repeat("z", 2<<20)+"\n")
	dupFile := file("dup.yaml", "name: x\nladder: [10]\ntargets:\n  - pebble\n  - pebble\nworkloads:\n  - name: ledger\n")
	option := file("option.yaml", "name: x\nladder: [10]\ntargets:\n  - name: pebble\n    options:\n      nosuch_option: \"1\"\nworkloads:\n  - name: ledger\n")
	var steps []string
	for i := 1; i <= 65; i++ {
		steps = append(steps, strconv.Itoa(i))
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "ledger", "--targets", ""}, "storebench: --targets '': empty"},
		{[]string{"run", "ledger", "--targets", "pebble,pebble"}, "storebench: --targets pebble,pebble: pebble is named twice"},
		{[]string{"run", "ledger", "--concurrency", "0"}, "storebench: --concurrency 0: want 1..4096"},
		{[]string{"run", "ledger", "--concurrency", "-2"}, "storebench: --concurrency -2: want 1..4096"},
		{[]string{"run", "ledger", "--seed", "-7"}, "storebench: --seed -7: want a whole number from 0"},
		{[]string{"run", "ledger", "--ladder", "-1"}, "from 1 to 1e9"},
		{[]string{"run", "ledger", "--ladder", strings.Join(steps, ",")}, "65 sizes: at most 64"},
		{[]string{"run", "ledger", "--set", "ledger.stress.rate=-5"}, "storebench: --set ledger.stress.rate=-5: -5 is out of range: want 0..1e8"},
		{[]string{"run", "ledger", "--set", "ledger.stress.duration=0s"}, "storebench: --set ledger.stress.duration=0s: leaves the study without phase ledger.stress"},
		{[]string{"run", escape}, "escape.yaml:1: name: "},
		{[]string{"run", nul}, "nul.yaml:1: name: "},
		{[]string{"run", long}, "long.yaml:1: name: 300 bytes"},
		{[]string{"run", twoDocs}, "two.yaml:6: a second YAML document is not allowed"},
		{[]string{"run", huge}, "huge.yaml: larger than 1024 KiB"},
		{[]string{"run", dupFile}, "dup.yaml:5: targets[1]: pebble is named twice"},
		{[]string{"run", option}, "option.yaml:6: targets[0].options.nosuch_option: pebble has no option"},
		{[]string{"server", "nosuch"}, "storebench: server nosuch: unknown server and unknown action (servers: "},
		{[]string{"server", "redis"}, "storebench: server redis: say what to do first"},
	} {
		args := append(c.args, "--out", out)
		if c.args[0] == "server" {
			args = c.args
		}
		_, stderr, code := runCLIWithin(t, 60*time.Second, args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%.80q: exit %d, stderr %q; want %q", c.args, code, stderr, c.want)
		}
		if strings.HasPrefix(stderr, "storebench: studies/ledger.yaml:") {
			t.Errorf("%.80q: a command-line error blamed on the study file: %q", c.args, stderr)
		}
	}
	// Nothing ran, and nothing was written outside --out.
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a study name escaped --out")
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("refused runs left results: %v", ents)
	}
}

// Help asked for goes to stdout with exit 0, top level and commands alike;
// a flag's value is named by its type, never by words of its usage.
func TestHelpTeachesWithExamples(t *testing.T) {
	for _, c := range []string{"run", "list", "report", "compare", "version", "overhead", "server"} {
		for _, h := range []string{"--help", "-h"} {
			stdout, stderr, code := runCLI(t, c, h)
			if code != 0 || !strings.Contains(stdout, "Usage: storebench "+c) || stderr != "" {
				t.Errorf("%s %s: exit %d: stdout %q, stderr %q", c, h, code, stdout, stderr)
			}
		}
	}
	stdout, _, _ := runCLI(t, "run", "--help")
	if !strings.Contains(stdout, "-targets string") || strings.Contains(stdout, "-targets storebench") {
		t.Errorf("run --help names --targets' value wrongly:\n%s", stdout)
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "Examples:") || strings.Contains(stdout, "worker") || stderr != "" {
			t.Errorf("%v: exit %d: %q %q", args, code, stdout, stderr)
		}
	}
	// "storebench help run" is "storebench run --help".
	if stdout, _, code := runCLI(t, "help", "run"); code != 0 || !strings.Contains(stdout, "Usage: storebench run") {
		t.Errorf("help run: exit %d: %q", code, stdout)
	}
	// A bad flag is a usage error: one line on stderr, exit 2.
	stdout, stderr, code := runCLI(t, "run", "ledger", "--nosuch")
	if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "-nosuch") {
		t.Errorf("bad flag: exit %d: %q %q", code, stdout, stderr)
	}
}

func TestInterruptKeepsPartialResults(t *testing.T) {
	out := t.TempDir()
	cmd := storebench(t, "run", writeStudy(t, "60s"), "--out", out, "--targets", "pebble")
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Chain summaries are printed just before the 60 s stress phase starts.
	waitFor(t, &e, "chain")
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if took := time.Since(t0); took > 2*time.Second {
		t.Fatalf("stopping took %v", took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, e.String())
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "interrupted" || run.Targets[0].Find("ledger", "insert", 300) == nil {
		t.Fatalf("partial result not kept: %s", run.Status)
	}
	// The user stopped it during the stress at 300: the stress keeps what
	// it measured, and the balance at 300, never begun, is listed.
	if tr := run.Targets[0]; tr.Status != "interrupted" || !strings.Contains(tr.Reason, "ledger balance N=300") || strings.Contains(tr.Reason, "ledger stress N=300") {
		t.Fatalf("pebble: %s: %s", tr.Status, tr.Reason)
	}
}

func TestWorkerCrashFailsOnlyThatTarget(t *testing.T) {
	out := t.TempDir()
	cmd := storebench(t, "run", writeStudy(t, "3s"), "--out", out)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first summary line of pebble's: its worker is running.
	waitFor(t, &e, "pebble     insert")
	// Kill the first target's worker, a child of the coordinator.
	killed := false
	for _, pid := range children(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		killed = true
	}
	if !killed {
		t.Fatal("no worker process found")
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v\n%s", err, e.String())
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, b := run.Targets[0], run.Targets[1]
	if p.Status != "failed" || !strings.Contains(p.Reason, "worker died") || b.Status != "ok" || b.Find("ledger", "balance", -1) == nil {
		t.Fatalf("pebble %s (%s), bbolt %s", p.Status, p.Reason, b.Status)
	}
}

// waitFor waits until the coordinator's stderr mentions s.
func waitFor(t *testing.T, buf *bytes.Buffer, s string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(buf.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %q in:\n%s", s, buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func children(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// A target that overruns its own time limit is cut short and the next
// target still runs: one pathological engine cannot starve the study.
func TestTargetTimeLimitStopsOnlyThatTarget(t *testing.T) {
	src := strings.ReplaceAll(tinyStudy, "%DUR%", "60s") + "limits:\n  target_time: 3s\n"
	p := filepath.Join(t.TempDir(), "limited.yaml")
	os.WriteFile(p, []byte(src), 0o644)
	out := t.TempDir()
	t0 := time.Now()
	_, stderr, code := runCLI(t, "run", p, "--out", out)
	if code != 3 || time.Since(t0) > 30*time.Second {
		t.Fatalf("exit %d after %v\n%s", code, time.Since(t0), stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "partial" {
		t.Fatalf("run status %s", run.Status)
	}
	for _, tr := range run.Targets {
		if tr.Status != "partial" || !strings.Contains(tr.Reason, "target time limit 3s reached") || tr.Find("ledger", "insert", 300) == nil {
			t.Fatalf("%s: %s (%s)", tr.Name, tr.Status, tr.Reason)
		}
	}
}

func TestCompareTwoRunsAndTwoTargets(t *testing.T) {
	study := writeStudy(t, "4s")
	outA, outB := t.TempDir(), t.TempDir()
	for _, out := range []string{outA, outB} {
		if _, stderr, code := runCLI(t, "run", study, "--out", out, "--quiet"); code != 0 {
			t.Fatalf("run: exit %d\n%s", code, stderr)
		}
	}
	a, b := onlyDir(t, outA), onlyDir(t, outB)
	// A run is named by its directory or its results.json.
	stdout, stderr, code := runCLI(t, "compare", filepath.Join(a, "results.json"), b)
	if code != 0 || strings.Count(stdout, "# Comparison") != 2 || !strings.Contains(stdout, "| ledger stress N=300 | throughput (ops/s) |") {
		t.Fatalf("compare runs: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The stress phase runs 4 s at a fixed rate on both sides: its
	// throughput is the same within noise, and the verdict must say so.
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "| ledger stress N=300 | throughput") && !strings.HasSuffix(line, "| no significant difference |") {
			t.Errorf("a fixed-rate phase judged different: %s", line)
		}
	}
	stdout, _, code = runCLI(t, "compare", a, "--targets", "pebble,bbolt")
	if code != 0 || !strings.Contains(stdout, "B/A") {
		t.Fatalf("compare targets: exit %d\n%s", code, stdout)
	}
	if _, _, code := runCLI(t, "compare", a, "--targets", "pebble,nosuch"); code != 2 {
		t.Fatalf("unknown target: exit %d", code)
	}
	// A finished run judged again under other constraints: an impossible
	// RAM bound rejects both targets, naming the measured peak.
	cons := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cons, []byte("ram: 1MiB\np99:\n  ledger.stress: 1s\n"), 0o644)
	stdout, stderr, code = runCLI(t, "report", a, "--constraints", cons)
	if code != 0 || !strings.Contains(stdout, "**No target meets them.**") || strings.Count(stdout, "| RAM: peak ") != 2 {
		t.Fatalf("report --constraints: exit %d\n%s\n%s", code, stdout, stderr)
	}
	os.WriteFile(cons, []byte("p99:\n  ledger.strss: 1ms\n"), 0o644)
	if _, stderr, code = runCLI(t, "report", a, "--constraints", cons); code != 2 || !strings.Contains(stderr, "c.yaml:2: ") || !strings.Contains(stderr, "no phase ledger.strss") {
		t.Fatalf("bad constraint: exit %d %s", code, stderr)
	}
	// Repeated runs per side: the spread between runs judges, and the
	// HTML page carries the same table.
	page := filepath.Join(t.TempDir(), "cmp.html")
	stdout, stderr, code = runCLI(t, "compare", a+","+b, b+","+a, "--html", page)
	if code != 0 || !strings.Contains(stdout, "(2 and 2 runs) |") {
		t.Fatalf("compare repeated runs: exit %d\n%s\n%s", code, stdout, stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(html), "ledger stress N=300") || !strings.Contains(string(html), "Comparison") {
		t.Fatalf("compare --html: %v\n%.500s", err, html)
	}
}

// runCLIWithin is runCLI with a way out: a command that does not end
// within limit is killed and the test fails, instead of hanging the suite.
func runCLIWithin(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "STOREBENCH_AS_MAIN=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after %v (killed)\nstderr: %s", args, limit, e.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// --out naming a file, or a path under a file, is refused at once with
// exit 2; it used to spin forever looking for a free directory name.
func TestOutThatIsNotADirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	afile := filepath.Join(dir, "afile")
	if err := os.WriteFile(afile, []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{afile, filepath.Join(afile, "sub")} {
		_, stderr, code := runCLIWithin(t, 60*time.Second, "run", "ledger", "--targets", "pebble", "--ladder", "10", "--out", out)
		if code != 2 || !strings.Contains(stderr, "--out "+out+": not a directory") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--out %s: exit %d, stderr %q", out, code, stderr)
		}
	}
	if b, _ := os.ReadFile(afile); string(b) != "hi\n" {
		t.Errorf("the file given as --out was changed: %q", b)
	}
}

// An --out that exists but cannot be written (/proc/self, a directory
// of a read-only kind, whatever the user's privileges) is refused with
// exit 2 before anything runs, as every other bad --out; a symbolic link
// loop and a dangling symbolic link are named as such, not "file exists".
func TestOutThatCannotBeWrittenIsRefused(t *testing.T) {
	dir := t.TempDir()
	loop, dangling := filepath.Join(dir, "loop"), filepath.Join(dir, "dangling")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{"/proc/self", "--out /proc/self: cannot create the results directory there: "},
		{"/proc/self/fd", "--out /proc/self/fd: cannot create the results directory there: "},
		{loop, "--out " + loop + ": a symbolic link loop"},
		{dangling, "--out " + dangling + ": a dangling symbolic link (it points to " + filepath.Join(dir, "nowhere") + ": no such file or directory)"},
		{filepath.Join(dangling, "sub"), "--out " + filepath.Join(dangling, "sub") + ": " + dangling + " is a dangling symbolic link (it points to " + filepath.Join(dir, "nowhere") + ": no such file or directory)"},
		{filepath.Join(loop, "sub"), "--out " + filepath.Join(loop, "sub") + ": " + loop + " is a symbolic link loop"},
	} {
		_, stderr, code := runCLIWithin(t, 60*time.Second, "run", "ledger", "--targets", "pebble", "--ladder", "10", "--out", c.out)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "file exists") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--out %s: exit %d, stderr %q; want exit 2 and %q", c.out, code, stderr, c.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Errorf("the dangling link's target was created")
	}
}

// Every numeric value the command line gives is checked against its
// documented range before anything runs (exit 2, one line naming the
// flag): a rate of 1e300 (it ran and printed a 300-digit rate), a rate
// search of 0 trials (it ran forever), a time limit of 0 (it silently
// removed the study's limit: "none" says that), a duration too long for
// one (it was "not a duration").
func TestNumericFlagsAreCheckedAgainstTheirRange(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "ledger", "--set", "ledger.stress.rate=1e300"}, "--set ledger.stress.rate=1e300: 1e300 is out of range: want 0..1e8"},
		{[]string{"run", "tripcache", "--set", "tripcache.sweep.rate.max_trials=0"}, "--set tripcache.sweep.rate.max_trials=0: 0 is out of range: want 1..64"},
		{[]string{"run", "ledger", "--time-limit", "0"}, "--time-limit 0: want a positive duration (e.g. 30m), or none to run without the study's limit"},
		{[]string{"run", "ledger", "--time-limit", "0s"}, "--time-limit 0s: want a positive duration"},
		{[]string{"run", "ledger", "--time-limit", "999999999h"}, `--time-limit: "999999999h" is too long: at most 2562047h (about 292 years)`},
		{[]string{"run", "ledger", "--time-limit", "-5m"}, `--time-limit: "-5m" is negative`},
		{[]string{"run", "ledger", "--set", "ledger.stress.duration=999999999h"}, `"999999999h" is too long: at most 2562047h`},
		{[]string{"run", "ledger", "--crash", "0"}, "--crash 0: want 1..10000 crashes of each kind"},
	} {
		out := t.TempDir()
		_, stderr, code := runCLIWithin(t, 60*time.Second, append(c.args, "--targets", "pebble", "--out", out)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q\nwant exit 2 and %q", c.args, code, stderr, c.want)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("%v: something ran: %v", c.args, ents)
		}
	}
	// The ranges are documented where a user looks: storebench list.
	list, _, code := runCLI(t, "list")
	for _, want := range []string{"PARAMETERS", "workloads.ledger.params: payload 0..16MiB, batch 1..100000", "stress.rate 0..1e8", "rate.max_trials 1..64"} {
		if code != 0 || !strings.Contains(list, want) {
			t.Errorf("storebench list (exit %d) lacks %q", code, want)
		}
	}
	// none runs without the study's limit, and says so in the study the
	// run records (limits.time absent from study.yaml).
	limited := filepath.Join(t.TempDir(), "limited.yaml")
	if err := os.WriteFile(limited, []byte(strings.ReplaceAll(tinyStudy, "%DUR%", "1s")+"limits:\n  time: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	_, stderr, code := runCLIWithin(t, 120*time.Second, "run", limited, "--targets", "pebble", "--ladder", "10", "--time-limit", "none", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("--time-limit none: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(onlyDir(t, out), "study.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "time: 1h") {
		t.Errorf("--time-limit none: study.yaml keeps a time limit:\n%s", b)
	}
}
