package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/results"
)

// A closed terminal or ssh session (SIGHUP) interrupts a run as Ctrl-C
// does: it stops, keeps what was measured, writes results.json and the
// report as "interrupted", removes its data, stops its servers and exits
// 130; its workers, which a hangup may reach too, live until the
// coordinator has taken what they measured. Not killed outright (exit
// 129) with results.json left "running" and the data left behind.
func TestHangupInterruptsLikeCtrlC(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { hangup(t, "pebble     insert", writeStudy(t, "60s"), "--targets", "pebble") })
	t.Run("server", func(t *testing.T) {
		installed(t, "redis")
		hangup(t, "ready at", writeRedisLedger(t, "60s"))
	})
}

func hangup(t *testing.T, until string, args ...string) {
	home, out := t.TempDir(), t.TempDir()
	cmd := storebench(t, append([]string{"run", "--out", out}, args...)...)
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, &e, until)
	time.Sleep(300 * time.Millisecond)
	// The hangup reaches the workers first: they must outlive it.
	workers := 0
	for _, pid := range children(cmd.Process.Pid) {
		if strings.Contains(cmdline(pid), " worker") {
			syscall.Kill(pid, syscall.SIGHUP)
			workers++
		}
	}
	if workers == 0 {
		t.Fatal("no worker process found")
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGHUP)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after SIGHUP\n%s", e.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130 (interrupted)\n%s", code, err, e.String())
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusInterrupted {
		t.Fatalf("results.json: status %q (%s), want interrupted", run.Status, run.Reason)
	}
	if tr := run.Targets[0]; tr.Status != results.StatusInterrupted || len(tr.Steps) == 0 || !strings.Contains(tr.Reason, "SIGHUP") {
		t.Errorf("%s: %s (%s), %d steps kept; want interrupted by SIGHUP with what was measured", tr.Name, tr.Status, tr.Reason, len(tr.Steps))
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Errorf("no report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("data/ left behind: %v", err)
	}
	if l := leasedPIDs(t, home); len(l) != 0 {
		t.Errorf("servers left behind: %v", l)
	}
}
