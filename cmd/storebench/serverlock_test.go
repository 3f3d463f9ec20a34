package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"storebench/internal/server"
)

// memcachedsOf lists the live memcached processes whose log (standard
// output) is under home: the instances of that STOREBENCH_HOME.
func memcachedsOf(t *testing.T, home string) []int {
	t.Helper()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !server.Alive(pid) || !strings.Contains(cmdline(pid), "memcached") {
			continue
		}
		if log, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", "1")); err == nil && strings.HasPrefix(log, home+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// Concurrent `server start` of one server is serialised: one instance
// runs, every start reports it, and `server stop` leaves nothing behind.
func TestServerStartConcurrent(t *testing.T) {
	if _, err := exec.LookPath("memcached"); err != nil {
		t.Fatalf("memcached is not installed (storebench server install memcached): %v", err)
	}
	home := t.TempDir()
	// Traversable, so that the instances live under it (memcachedsOf
	// finds them by their log there): serverHome.
	for _, d := range []string{filepath.Dir(home), home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb := func(args ...string) (stdout, stderr string, code int) {
		cmd := storebench(t, args...)
		cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	defer func() {
		for _, pid := range memcachedsOf(t, home) {
			_ = server.StopPID(t.Context(), pid, 0, 5*time.Second)
		}
	}()
	const n = 3
	uris := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdout, stderr, code := sb("server", "start", "memcached", "--uri-only")
			if code != 0 {
				t.Errorf("start %d: exit %d\n%s%s", i, code, stdout, stderr)
			}
			uris[i] = strings.TrimSpace(stdout)
		}()
	}
	wg.Wait()
	running := memcachedsOf(t, home)
	if len(running) != 1 {
		t.Errorf("%d memcached processes after %d concurrent starts (pids %v); want 1", len(running), n, running)
	}
	for i, u := range uris {
		if !strings.HasPrefix(u, "memcached://127.0.0.1:") || u != uris[0] {
			t.Errorf("start %d printed %q; want the one instance's URI (%q)", i, u, uris[0])
		}
	}
	stdout, stderr, code := sb("server", "status", "memcached")
	if code != 0 || !strings.Contains(stdout, "running, pid") {
		t.Errorf("status: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := sb("server", "stop", "memcached"); code != 0 || !strings.Contains(stdout, "stopped") {
		t.Errorf("stop: exit %d\n%s%s", code, stdout, stderr)
	}
	if left := memcachedsOf(t, home); len(left) != 0 {
		t.Errorf("memcached left running after server stop: %v", left)
	}
	if stdout, _, _ := sb("server", "status", "memcached"); !strings.Contains(stdout, "not running") {
		t.Errorf("status after stop:\n%s", stdout)
	}
}

// A port outside 1..65535 is refused by storebench itself (exit 2),
// before any server starts or any target is dialled.
func TestPortRange(t *testing.T) {
	home := t.TempDir()
	multiHost := filepath.Join(t.TempDir(), "multi.yaml")
	study := strings.ReplaceAll(tinyStudy, "%DUR%", "1s")
	study = strings.Replace(study, "targets: [pebble, bbolt]", `targets: ["mongodb://127.0.0.1:27017,127.0.0.1:99999/db"]`, 1)
	if err := os.WriteFile(multiHost, []byte(study), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"server", "start", "memcached", "--port", "70000"},
		{"server", "start", "memcached", "--port", "-5"},
		{"run", "ledger", "--targets", "redis://127.0.0.1:70000", "--out", t.TempDir()},
		{"run", "ledger", "--targets", "mysql://u@127.0.0.1:0/db", "--out", t.TempDir()},
		{"run", multiHost, "--out", t.TempDir()},
	} {
		cmd := storebench(t, args...)
		cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
		out, err := cmd.CombinedOutput()
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 2 || !strings.Contains(string(out), "1..65535") {
			t.Errorf("%v: %v\n%s\nwant exit 2 naming the range 1..65535", args, err, out)
		}
	}
	if left := memcachedsOf(t, home); len(left) != 0 {
		t.Errorf("memcached started: %v", left)
		for _, pid := range left {
			_ = server.StopPID(t.Context(), pid, 0, 5*time.Second)
		}
	}
}

// `storebench server --help` names every server of the registry, and
// nothing else.
func TestServerHelpListsRegistry(t *testing.T) {
	stdout, stderr, code := runCLI(t, "server", "--help")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	_, list, ok := strings.Cut(stdout, "\nServers:")
	if !ok {
		t.Fatalf("no Servers: in\n%s", stdout)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	listed := map[string]bool{}
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '.' || r == ' ' || r == '\n' }) {
		listed[f] = true
	}
	var want []string
	for _, s := range server.All() {
		want = append(want, s.Name())
		if !listed[s.Name()] {
			t.Errorf("server --help does not list %s", s.Name())
		}
		delete(listed, s.Name())
	}
	if len(listed) > 0 {
		t.Errorf("server --help lists %v, which are not servers (want %v)", listed, want)
	}
}

// A `server start` killed with -9 before its server is ready leaves that
// server recorded: status names it as left over, and the next start of
// any server stops it.
func TestServerStartKilled(t *testing.T) {
	home := t.TempDir()
	// PostgreSQL runs as its own user, which must reach the directory.
	for _, d := range []string{home, filepath.Dir(home)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := "STOREBENCH_HOME=" + home
	// Should the start get to save its state after all, its server is
	// stopped (cleanups run before the directory's removal).
	t.Cleanup(func() {
		stop := storebench(t, "server", "stop", "postgres")
		stop.Env = append(stop.Env, env)
		_ = stop.Run()
	})
	cmd := storebench(t, "server", "start", "postgres")
	cmd.Env = append(cmd.Env, env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// Killed as soon as the postgres it spawns is recorded: PostgreSQL
	// takes far longer than that to be ready.
	var pids []int
	defer func() {
		for _, pid := range pids {
			if server.Alive(pid) {
				_ = server.StopPID(t.Context(), pid, 0, 5*time.Second)
			}
		}
	}()
	for len(pids) == 0 {
		// The server itself, not initdb: a fresh home has no template
		// of an initialised cluster, so initdb runs (and is leased) first.
		for _, pid := range leasedPIDs(t, home) {
			if strings.Contains(cmdline(pid), "bin/postgres ") {
				pids = append(pids, pid)
			}
		}
		select {
		case <-exited:
			t.Fatalf("server start ended and no process of it was ever recorded in %s/managed:\n%s", home, out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	<-exited
	if len(pids) != 1 || !strings.Contains(cmdline(pids[0]), "postgres") {
		t.Fatalf("after kill -9 of server start, %v recorded (want the postgres being started)", pids)
	}
	status := storebench(t, "server", "status", "postgres")
	status.Env = append(status.Env, env)
	if out, _ := status.CombinedOutput(); !strings.Contains(string(out), "LEFT OVER") {
		t.Errorf("status does not name the left-over postgres:\n%s", out)
	}
	start := storebench(t, "server", "start", "memcached")
	start.Env = append(start.Env, env)
	if out, err := start.CombinedOutput(); err != nil {
		t.Errorf("next start: %v\n%s", err, out)
	}
	stop := storebench(t, "server", "stop", "memcached")
	stop.Env = append(stop.Env, env)
	_ = stop.Run()
	if server.Alive(pids[0]) {
		t.Errorf("postgres pid %d still running after the next start", pids[0])
	}
}

// Without STOREBENCH_HOME, `server start` keeps its instance under
// ~/.cache/storebench/servers whatever the current directory (nothing
// in ./.storebench), and a second start that asks for another --port
// or --durability than the running instance's is refused (exit 2)
// rather than handed that instance.
func TestServerInstanceUnderHomeAndMismatchRefused(t *testing.T) {
	if _, err := exec.LookPath("memcached"); err != nil {
		t.Fatalf("memcached is not installed (storebench server install memcached): %v", err)
	}
	userHome, cwd := t.TempDir(), t.TempDir()
	// A home other users can traverse (PostgreSQL's user must reach a
	// server's data): instances live under it. (Under a 0700 one they
	// go to the temporary directory: TestServerHomeOutsideAPrivateHome.)
	for _, d := range []string{filepath.Dir(userHome), userHome} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sbHome := filepath.Join(userHome, ".cache", "storebench")
	sb := func(args ...string) (stdout, stderr string, code int) {
		cmd := storebench(t, args...)
		var env []string
		for _, kv := range cmd.Env {
			if !strings.HasPrefix(kv, "STOREBENCH_HOME=") && !strings.HasPrefix(kv, "HOME=") {
				env = append(env, kv)
			}
		}
		cmd.Env, cmd.Dir = append(env, "HOME="+userHome), cwd
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	defer func() {
		for _, pid := range memcachedsOf(t, sbHome) {
			_ = server.StopPID(t.Context(), pid, 0, 5*time.Second)
		}
	}()
	stdout, stderr, code := sb("server", "start", "memcached", "--uri-only", "--durability", "async")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, stdout, stderr)
	}
	uri := strings.TrimSpace(stdout)
	if _, err := os.Stat(filepath.Join(cwd, ".storebench")); err == nil {
		t.Errorf("server start made .storebench in its current directory")
	}
	if _, err := os.Stat(filepath.Join(sbHome, "servers", "memcached", "instance.json")); err != nil {
		t.Errorf("no instance under the home: %v", err)
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(uri, "memcached://"), ":")
	port = strings.TrimRight(port, "/")
	other := "1"
	if port == "1" {
		other = "2"
	}
	for _, args := range [][]string{
		{"--port", other},
		{"--durability", "sync"},
	} {
		stdout, stderr, code := sb(append([]string{"server", "start", "memcached"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "already running") {
			t.Errorf("start %v while running on %s: exit %d\n%s%s\nwant exit 2 saying it runs otherwise", args, uri, code, stdout, stderr)
		}
	}
	if stdout, stderr, code := sb("server", "start", "memcached", "--uri-only", "--port", port, "--durability", "async"); code != 0 || strings.TrimSpace(stdout) != uri {
		t.Errorf("start as running: exit %d, printed %q (want %q)\n%s", code, stdout, uri, stderr)
	}
	if stdout, stderr, code := sb("server", "stop", "memcached"); code != 0 {
		t.Errorf("stop: exit %d\n%s%s", code, stdout, stderr)
	}
}
