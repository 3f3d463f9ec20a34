package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/results"
	"storebench/internal/server"
)

// A run killed with -9 during its second target is never "complete":
// results.json says "running" (no finish time), and `storebench report`
// and `compare` read it as interrupted, the target under way interrupted
// with the steps it did not finish named.
func TestKilledRunIsReportedInterrupted(t *testing.T) {
	out := t.TempDir()
	// bbolt's stress at 300 takes 5 s: the kill lands before it ends.
	cmd := storebench(t, "run", writeStudy(t, "5s"), "--out", out)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// bbolt's first step is done: pebble, the first target, is finished,
	// and bbolt's steps reach results.json as they end.
	waitFor(t, &e, "bbolt      insert   N=10")
	dir := onlyDir(t, out)
	raw := func() map[string]any {
		b, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The file of a run under way says so.
	if m := raw(); m["status"] != "running" || m["finished"] != nil {
		t.Fatalf("results.json of a run under way: status %v, finished %v", m["status"], m["finished"])
	}
	// bbolt's first step reaches it (written after every step).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := results.Decode(mustRead(t, filepath.Join(dir, "results.json")))
		if err == nil && len(r.Targets) == 2 && len(r.Targets[1].Steps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bbolt's first step never reached results.json: %v", err)
		}
	}
	// A run under way is reported so, not as interrupted.
	if stdout, stderr, code := runCLI(t, "report", dir); code != 0 || !strings.Contains(stdout, "Status: **running**") {
		t.Fatalf("report of a run under way: exit %d: %s\n%s", code, stderr, stdout)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if m := raw(); m["status"] == "complete" || m["finished"] != nil {
		t.Fatalf("results.json of a killed run: status %v, finished %v", m["status"], m["finished"])
	}

	stdout, stderr, code := runCLI(t, "report", dir)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Status: **interrupted**") || strings.Contains(stdout, "Status: **complete**") || !strings.Contains(stdout, "never finished") {
		t.Errorf("report of a killed run:\n%s", stdout)
	}
	var bboltRow string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "| bbolt |") {
			bboltRow = l
			break
		}
	}
	// bbolt's stress at 300 and balance at 300 never ran or never finished.
	if !strings.Contains(bboltRow, "interrupted") || !strings.Contains(bboltRow, "ledger balance N=300") {
		t.Errorf("bbolt's row in the targets table: %q\n%s", bboltRow, stdout)
	}
	if html, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !bytes.Contains(html, []byte("interrupted")) {
		t.Errorf("report.html: %v", err)
	}
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "interrupted" || len(run.Targets) != 2 || run.Targets[0].Status != "ok" {
		t.Fatalf("run %s, targets %d", run.Status, len(run.Targets))
	}
	bb := run.Targets[1]
	if bb.Name != "bbolt" || bb.Status != "interrupted" || bb.Find("ledger", "insert", 10) == nil || !strings.Contains(bb.Reason, "ledger balance N=300") {
		t.Fatalf("bbolt: %s: %s (%d steps)", bb.Status, bb.Reason, len(bb.Steps))
	}

	// compare says so above its verdicts.
	stdout, stderr, code = runCLI(t, "compare", dir, "--targets", "pebble,bbolt")
	if code != 0 || !strings.Contains(stdout, "was interrupted") {
		t.Errorf("compare: exit %d: %s\n%s", code, stderr, stdout)
	}
}

// Ctrl-C while a managed server starts stops the run as interrupted
// (exit 130), not as the target's failure ("context canceled").
func TestInterruptDuringServerStart(t *testing.T) {
	installed(t, "postgres")
	p := filepath.Join(t.TempDir(), "pg.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(strings.ReplaceAll(tinyStudy, "%DUR%", "1s"), "targets: [pebble, bbolt]", "targets: [postgres, bbolt]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	home, out := t.TempDir(), t.TempDir()
	cmd := storebench(t, "run", p, "--out", out)
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, &e, "postgres   starting")
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, e.String())
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	pg := run.Targets[0]
	if run.Status != "interrupted" || pg.Status != "interrupted" || strings.Contains(pg.Reason, "context canceled") || run.Targets[1].Status != "skipped" {
		t.Fatalf("run %s (%s); postgres %s: %s; bbolt %s", run.Status, run.Reason, pg.Status, pg.Reason, run.Targets[1].Status)
	}
	if l := leasedPIDs(t, home); len(l) != 0 {
		t.Errorf("servers left running: %v", l)
	}
}

// `storebench run … 2>&1 | head -1`: the reader goes away, and the run
// stops as interrupted, removing its data and stopping its server, instead
// of dying of SIGPIPE with both left behind.
func TestClosedOutputLeavesNothingBehind(t *testing.T) {
	// The reader goes once the data (and the server) are there.
	t.Run("embedded", func(t *testing.T) { closedOutput(t, "pebble     insert", writeStudy(t, "60s"), "--targets", "pebble") })
	t.Run("server", func(t *testing.T) {
		installed(t, "redis")
		closedOutput(t, "ready at", writeRedisLedger(t, "60s"))
	})
}

// closedOutput runs storebench with its stdout and stderr a pipe, closed
// once a line holds until.
func closedOutput(t *testing.T, until string, args ...string) {
	home, out := t.TempDir(), t.TempDir()
	cmd := storebench(t, append([]string{"run", "--out", out}, args...)...)
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	w.Close()
	br := bufio.NewReader(r)
	var seen, line string
	for !strings.Contains(line, until) {
		if line, err = br.ReadString('\n'); err != nil {
			t.Fatalf("never saw %q: %v\n%s", until, err, seen)
		}
		seen += line
	}
	r.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("storebench still running 2 minutes after its output closed (first line %q)", line)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v (want 130, interrupted)", err)
	}
	dir := onlyDir(t, out)
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("data/ left behind: %v", err)
	}
	if l := leasedPIDs(t, home); len(l) != 0 {
		t.Errorf("servers left behind: %v", l)
	}
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil || run.Status != "interrupted" {
		t.Fatalf("results: %v %v", run, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// installed fails the test when server name is not installed: make test
// installs every server (scripts/install-servers.sh), so a missing one is
// a broken install step, never a reason to skip.
func installed(t *testing.T, name string) {
	t.Helper()
	s, err := server.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("%s is not installed (scripts/install-servers.sh): %v", name, err)
	}
}
