package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/powerfs"
	"storebench/internal/powerfs/powerfstest"
	"storebench/internal/server/proc"
)

const durabilityStudy = `name: dur
title: durability, tiny
seed: 3
ladder: [100]
targets: [sqlite]
workloads:
  - name: durability
    params: {trials: %K%, writers: 2, after_ops: %OPS%, random: true, batch_every: 3, batch_size: 4, value_size: 32, classes: [sync], crashes: [%CRASHES%]}
`

func writeDurabilityStudy(t *testing.T, k, ops, crashes string) string {
	p := filepath.Join(t.TempDir(), "dur.yaml")
	s := strings.NewReplacer("%K%", k, "%OPS%", ops, "%CRASHES%", crashes).Replace(durabilityStudy)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// storebench run durability: a power failure and a kill -9 of the
// engine's process, and the report's table of acknowledged writes lost.
func TestDurabilityRunReportsLostAcknowledgedWrites(t *testing.T) {
	powerfstest.Need(t)
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", writeDurabilityStudy(t, "2", "100", "power-loss, kill-9"), "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(onlyDir(t, out), "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Acknowledged writes lost after power failure / after kill -9",
		"| SQLite | sync | power failure | 2 | none lost | 0 / ", "| SQLite | sync | kill -9 | 2 | none lost | 0 / ",
		// The file system and its crash model are named.
		`storebench's power-loss file system`, `crash model "data"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", b)
	}
}

// descendants are every process below pid.
func descendants(pid int) []int {
	var out []int
	for _, c := range children(pid) {
		out = append(out, c)
		out = append(out, descendants(c)...)
	}
	return out
}

// A run killed (kill -9) or interrupted (Ctrl-C) during a power-loss
// trial leaves no power-loss mount, no file system server and no engine process behind.
func TestKilledDurabilityRunLeavesNoMount(t *testing.T) {
	powerfstest.Need(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			// A crash point never reached: the writers write until the
			// run is stopped.
			stoppedRunLeavesNoMount(t, writeDurabilityStudy(t, "1", "1e9", "power-loss"), sig, "", 500*time.Millisecond)
		})
	}
}

// stoppedRunLeavesNoMount runs study until a power-loss mount is up under
// storebench (and its stderr says after, when set), lets it work for a
// while, stops it with sig and checks that nothing it started outlives
// it: no process (those seen just before the signal), no mount. Ctrl-C
// exits 130.
func stoppedRunLeavesNoMount(t *testing.T, study string, sig syscall.Signal, after string, working time.Duration) {
	t.Helper()
	cmd := storebench(t, "run", study, "--out", t.TempDir())
	var e lockedBuffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sb := cmd.Process.Pid
	var fs, mnt string
	var all []int
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && (fs == "" || len(all) < 3 || !strings.Contains(e.String(), after)) {
		time.Sleep(100 * time.Millisecond)
		all = descendants(sb)
		for _, pid := range all {
			if d := powerfstest.ServerMount(pid); d != "" {
				fs, mnt = cmdline(pid), d
			}
		}
	}
	if fs == "" || !isMounted(mnt) {
		t.Fatalf("no powerfs mount seen under storebench pid %d (%v)\n%s", sb, all, e.String())
	}
	time.Sleep(working)
	all = append(all, descendants(sb)...)
	if err := syscall.Kill(sb, sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if sig == syscall.SIGINT {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("Ctrl-C: %v, want exit 130\n%s", err, e.String())
		}
	}
	t0 := time.Now()
	for _, pid := range all {
		for proc.Alive(pid) && time.Since(t0) < 30*time.Second {
			time.Sleep(50 * time.Millisecond)
		}
		if proc.Alive(pid) {
			t.Errorf("pid %d (%s) outlived storebench (%s) by %s", pid, cmdline(pid), sig, time.Since(t0))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for isMounted(mnt) && time.Since(t0) < 30*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	if isMounted(mnt) {
		t.Errorf("%s still mounted after storebench was stopped (%s)", mnt, sig)
		_ = powerfs.Unmount(mnt)
	}
}

func isMounted(dir string) bool {
	for _, m := range powerfs.Mounts() {
		if m == dir {
			return true
		}
	}
	return false
}
