package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/results"
	"storebench/internal/server/proc"
)

const redisLedger = `name: redis-ledger
ladder: [10]
concurrency: 2
targets: [redis]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 20
      chains: {lengths: [10], samples: 1}
      stress: {duration: %DUR%, rate: 100}
      balance: {addresses: 200, reads: 20}
`

func writeRedisLedger(t *testing.T, dur string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "redis-ledger.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(redisLedger, "%DUR%", dur)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// leasedPIDs reads the server PIDs recorded in home's leases.
func leasedPIDs(t *testing.T, home string) map[string]int {
	t.Helper()
	out := map[string]int{}
	ents, _ := os.ReadDir(filepath.Join(home, "managed"))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(home, "managed", e.Name()))
		if err != nil {
			continue
		}
		var l struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(b, &l) == nil && l.PID > 0 {
			out[e.Name()] = l.PID
		}
	}
	return out
}

// kill -9 of a run leaves neither its server nor its worker behind, and
// the next run clears what the dead one recorded.
func TestKilledRunLeavesNoProcess(t *testing.T) {
	home := t.TempDir()
	killRunWithServer(t, home, writeRedisLedger(t, "60s"), "redis-server")

	status := storebench(t, "server", "status", "redis")
	status.Env = append(status.Env, "STOREBENCH_HOME="+home)
	out, _ := status.CombinedOutput()
	if strings.Contains(string(out), "running,") {
		t.Errorf("server status after the kill:\n%s", out)
	}
	if len(leasedPIDs(t, home)) != 1 {
		t.Fatalf("the killed run's lease: %v", leasedPIDs(t, home))
	}
	// The next run clears the dead run's record, and its own.
	next := storebench(t, "run", writeRedisLedger(t, "1s"), "--out", t.TempDir())
	next.Env = append(next.Env, "STOREBENCH_HOME="+home)
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, out)
	}
	if l := leasedPIDs(t, home); len(l) != 0 {
		t.Errorf("leases left after the next run: %v", l)
	}
}

// killRunWithServer starts a run of studyPath with STOREBENCH_HOME home,
// waits for its managed server (process, from the run's lease) and its
// worker, kills storebench with -9 and fails if either outlives it.
func killRunWithServer(t *testing.T, home, studyPath, process string) {
	t.Helper()
	cmd := storebench(t, "run", studyPath, "--out", t.TempDir())
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sb := cmd.Process.Pid

	// Wait for the server (its PID from the run's lease) and the worker.
	var server, worker int
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) && (server == 0 || worker == 0) {
		time.Sleep(100 * time.Millisecond)
		for _, pid := range leasedPIDs(t, home) {
			server = pid
		}
		for _, c := range children(sb) {
			if strings.Contains(cmdline(c), " worker") {
				worker = c
			}
		}
	}
	if server == 0 || worker == 0 || !strings.Contains(cmdline(server), process) {
		t.Fatalf("no %s (%d: %q) and worker (%d) seen under storebench pid %d", process, server, cmdline(server), worker, sb)
	}
	all := append(children(sb), server, worker)

	if err := syscall.Kill(sb, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t0 := time.Now()
	for _, pid := range all {
		for proc.Alive(pid) && time.Since(t0) < 5*time.Second {
			time.Sleep(50 * time.Millisecond)
		}
		if proc.Alive(pid) {
			t.Errorf("pid %d (%s) outlived storebench killed with -9 by %s", pid, cmdline(pid), time.Since(t0))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

const cachedServers = `name: cached-servers
ladder: [10]
concurrency: 2
targets:
  - {name: redis, cache: 48MiB}
  - {name: postgres, cache: 48MiB}
  - {name: mariadb, cache: 64MiB}
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 20
      chains: {lengths: [10], samples: 1}
      stress: {duration: 1s, rate: 100}
      balance: {addresses: 200, reads: 20}
`

// A URI that carries a password in clear (a redacted one says xxxxx).
var clearPassword = regexp.MustCompile(`[a-z]+://[^\s"'/@:]*:([^\s"'/@]+)@`)

// targets[].cache sizes each managed server's own cache, the report says
// so, and no file of the run (data kept) holds a server's password.
func TestManagedServersCacheAndSecrets(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cached.yaml")
	if err := os.WriteFile(p, []byte(cachedServers), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	// Data kept: the servers' directories stay in the run for the grep.
	cmd := storebench(t, "run", p, "--out", out, "--keep-data")
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+t.TempDir())
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"redis":    {"maxmemory", "48 MiB"},
		"postgres": {"shared_buffers", "48 MiB (the target's cache)"},
		"mariadb":  {"innodb_buffer_pool_size", "64 MiB (the target's cache"},
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, tr := range run.Targets {
		w := want[tr.Name]
		if tr.Server == nil || !strings.HasPrefix(tr.Server.Settings[w[0]], w[1]) {
			t.Errorf("%s (%s): server %s = %q; want %q...", tr.Name, tr.Status, w[0], settingOf(tr.Server, w[0]), w[1])
			continue
		}
		if !strings.Contains(string(report), tr.Server.Settings[w[0]]) {
			t.Errorf("report.md does not state %s's %s (%s)", tr.Name, w[0], tr.Server.Settings[w[0]])
		}
	}
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		n++
		for _, m := range clearPassword.FindAllSubmatch(b, -1) {
			if string(m[1]) != "xxxxx" {
				t.Errorf("%s holds a URI with its password in clear", path)
			}
		}
		if strings.Contains(string(b), "storebench:storebench@") {
			t.Errorf("%s holds the old fixed password", path)
		}
		return nil
	})
	if n < 10 {
		t.Fatalf("only %d files in %s", n, dir)
	}
}

func settingOf(s *results.Server, k string) string {
	if s == nil {
		return "(no server)"
	}
	return s.Settings[k]
}

// `server start` keeps the URI (with its password) in a state file only
// we can read, prints it only when asked (--uri-only), and masks it in
// every other line.
func TestServerStartCredentials(t *testing.T) {
	home := t.TempDir()
	// Traversable by other users, so that instances live under it (under
	// a 0700 one they go to the temporary directory: serverHome).
	for _, d := range []string{filepath.Dir(home), home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb := func(args ...string) (string, int) {
		cmd := storebench(t, args...)
		cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
		b, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = -1
		}
		return string(b), code
	}
	uri, code := sb("server", "start", "redis", "--uri-only")
	uri = strings.TrimSpace(uri)
	defer sb("server", "stop", "redis")
	m := clearPassword.FindStringSubmatch(uri)
	if code != 0 || m == nil || len(m[1]) < 32 {
		t.Fatalf("server start --uri-only: %q (exit %d); want a URI with a generated password", uri, code)
	}
	st, err := os.Stat(filepath.Join(home, "servers", "redis", "instance.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("instance.json: %v, mode %v; want 0600", err, st.Mode())
	}
	for _, args := range [][]string{{"server", "start", "redis"}, {"server", "status", "redis"}} {
		out, _ := sb(args...)
		if strings.Contains(out, m[1]) || !strings.Contains(out, "xxxxx") {
			t.Errorf("%v printed:\n%s", args, out)
		}
	}
}
