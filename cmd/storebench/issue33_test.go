package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A ladder that limits.disk refuses at its first size would measure
// nothing: refused with exit 2 before any results directory is made (it
// used to exit 3 with an empty run's directory); and --out is not created
// when another flag (--metrics on an address in use) is refused.
func TestRefusedRunLeavesNoResultsDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "new", "results")
	_, stderr, code := runCLIWithin(t, 60*time.Second, "run", "ledger", "--targets", "pebble", "--ladder", "1e9", "--out", out)
	if code != 2 || !strings.Contains(stderr, "nothing would be measured") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("--ladder 1e9: exit %d, stderr %q; want exit 2 and one line", code, stderr)
	}
	if _, err := os.Stat(filepath.Dir(out)); err == nil {
		t.Errorf("--ladder 1e9: %s was created", filepath.Dir(out))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, stderr, code = runCLIWithin(t, 60*time.Second, "run", "ledger", "--targets", "pebble", "--ladder", "10", "--out", out, "--metrics", l.Addr().String())
	if code != 2 || !strings.Contains(stderr, "--metrics") {
		t.Errorf("--metrics in use: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Dir(out)); err == nil {
		t.Errorf("--metrics in use: --out %s was created", out)
	}
}

// A host with a fragment and a redis database that is not a number 0 or
// more are refused when the command line is read (exit 2), not when the
// run reaches them; a long URI is not echoed whole.
func TestHostAndRedisURIFormsCheckedUpFront(t *testing.T) {
	long := "redis://127.0.0.1:1/" + strings.Repeat("9", 100_000) + "x"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hosts", "ssh://h#frag"}, "want ssh://[user@]host[:port] and nothing after it"},
		{[]string{"--targets", "redis://127.0.0.1:1/-1"}, `redis database "-1": want a number 0 or more`},
		{[]string{"--targets", "redis://127.0.0.1:1/two"}, `redis database "two"`},
		{[]string{"--targets", long}, " bytes)"},
	} {
		out := t.TempDir()
		_, stderr, code := runCLIWithin(t, 60*time.Second, append([]string{"run", "ledger", "--ladder", "10", "--out", out}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || len(stderr) > 1000 {
			t.Errorf("%v: exit %d, stderr %.400q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("%v: a results directory was made", c.args)
		}
	}
}

// A run whose report cannot be printed (stdout on /dev/full) exits 1,
// saying so on stderr; the report files are written all the same.
func TestRunOnAFullStdoutFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("this test needs /dev/full (every Linux has it): %v", err)
	}
	defer full.Close()
	out := t.TempDir()
	cmd := storebench(t, "run", writeStudy(t, "1s"), "--targets", "pebble", "--ladder", "10", "--out", out)
	var e bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &e
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(e.String(), "cannot write the report on stdout") {
		t.Errorf("run > /dev/full: exit %d, want 1 and the write error\n%s", code, e.String())
	}
	if _, err := os.Stat(filepath.Join(onlyDir(t, out), "report.md")); err != nil {
		t.Errorf("report.md not written: %v", err)
	}
}

// An interrupted overhead (Ctrl-C while it loads, or while it measures,
// on either workload) exits 130 and leaves nothing in the temporary
// directory: the engine is closed first, then its data removed. It left
// 20 MB of Pebble files in /tmp per interrupt.
func TestInterruptedOverheadLeavesNothing(t *testing.T) {
	// Sizes: loading takes a moment (the first case interrupts it), and
	// every round is long enough that the interrupt lands in one; how
	// long either takes on a loaded machine does not matter.
	for _, c := range []struct{ name, workload, keys, until string }{
		{"loading", "get", "200000", ""},
		{"measuring", "get", "20000", "random gets on"},
		{"measuring ycsb-c", "ycsb-c", "5000", "YCSB C on"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := storebench(t, "overhead", "--workload", c.workload, "--keys", c.keys, "--gets", "500000", "--rounds", "1000")
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if c.until != "" {
				deadline := time.Now().Add(10 * time.Minute)
				for !strings.Contains(out.String(), c.until) {
					if time.Now().After(deadline) {
						t.Fatalf("never saw %q in:\n%s\n%s", c.until, out.String(), errb.String())
					}
					time.Sleep(20 * time.Millisecond)
				}
			} else {
				deadline := time.Now().Add(time.Minute)
				for ents, _ := os.ReadDir(tmp); len(ents) == 0; ents, _ = os.ReadDir(tmp) {
					if time.Now().After(deadline) {
						t.Fatalf("no data directory in %s after a minute", tmp)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatalf("still running a minute after SIGINT\n%s", errb.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit %d, want 130\n%s", code, errb.String())
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in the temporary directory: %v", ents)
			}
		})
	}
}
