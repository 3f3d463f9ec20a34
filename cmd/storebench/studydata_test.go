package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A study whose one worker runs on an ssh host; %SSH% is replaced by the
// study's ssh section.
const remoteStudy = `name: remote-small
ladder: [100]
concurrency: 2
targets: [pebble]
hosts: [%HOST%]
%SSH%
workloads:
  - name: ycsb
    params: {workloads: [a], operations: 100, fields: 2, field_length: 20}
`

// closedSSHHost is an ssh:// host on a loopback port nothing listens on.
func closedSSHHost(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return fmt.Sprintf("ssh://nobody@127.0.0.3:%d", port)
}

func runDirs(t *testing.T, out string) []string {
	ents, _ := os.ReadDir(out)
	var dirs []string
	for _, e := range ents {
		dirs = append(dirs, filepath.Join(out, e.Name()))
	}
	return dirs
}

// Issue 20, item 1: a study file is data, it never executes anything. An
// ssh option that runs a command (ProxyCommand) is refused from a study
// file with exit 2 before anything starts, naming the file, the line, the
// field and the flag that may give it; the command never runs. The same
// option typed with --ssh-option is the user's and is honoured, and the
// results' study.yaml does not carry it: running that again runs no
// command.
func TestStudyFileSSHOptionCannotRunACommand(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	host := closedSSHHost(t)
	proxy := fmt.Sprintf("ProxyCommand=sh -c 'touch %s; exit 1'", marker)
	p := filepath.Join(dir, "proxy.yaml")
	text := strings.NewReplacer("%HOST%", host, "%SSH%", "ssh:\n  options: [ConnectTimeout=3, \""+proxy+"\"]").Replace(remoteStudy)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	_, stderr, code := runCLI(t, "run", p, "--out", out, "--quiet")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the study file's ProxyCommand ran (exit %d): %s", code, stderr)
	}
	want := p + ":7: ssh.options[1]: \"" + proxy + "\": a study file may carry only ssh options"
	if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--ssh-option") {
		t.Fatalf("exit %d, stderr %q: want 2 and %q naming --ssh-option", code, stderr, want)
	}
	if d := runDirs(t, out); len(d) != 0 {
		t.Fatalf("a refused study left %v", d)
	}

	// Typed on the command line, the option is the user's: it passes the
	// study's checks and ssh runs it (then fails to connect: exit 1,
	// naming the host).
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("ssh is missing: scripts/install-servers.sh sshd installs it")
	}
	plain := filepath.Join(dir, "plain.yaml")
	text = strings.NewReplacer("%HOST%", host, "%SSH%", "ssh:\n  options: [ConnectTimeout=3]").Replace(remoteStudy)
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, "run", plain, "--out", out, "--quiet", "--ssh-option", proxy)
	if code != 1 || !strings.Contains(stderr, "host "+host) {
		t.Fatalf("--ssh-option %s: exit %d, stderr %q: want 1, the host named", proxy, code, stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the command line's ProxyCommand was not passed to ssh: %v", err)
	}
	runs := runDirs(t, out)
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	asRun, err := os.ReadFile(filepath.Join(runs[0], "study.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(asRun), "touch") || !strings.Contains(string(asRun), "ProxyCommand, given with --ssh-option") {
		t.Fatalf("study.yaml carries the command line's ProxyCommand, or does not say it left it out:\n%s", asRun)
	}

	// Run again from the results, the study runs no command and is not
	// refused: it fails to reach the closed port (exit 1).
	os.Remove(marker)
	_, stderr, code = runCLI(t, "run", filepath.Join(runs[0], "study.yaml"), "--out", out, "--quiet")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("running the results' study.yaml again ran the ProxyCommand: %s", stderr)
	}
	if code != 1 || !strings.Contains(stderr, "host "+host) {
		t.Fatalf("study.yaml run again: exit %d, stderr %q: want 1, the host named", code, stderr)
	}
}

// Issue 20, item 9: --ssh-identity and a study's ssh.identity are checked
// before anything starts (exit 2, one line): a missing file, or one that
// is not an ssh key, never reaches ssh.
func TestSSHIdentityCheckedBeforeAnythingStarts(t *testing.T) {
	dir := t.TempDir()
	host := closedSSHHost(t)
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte(strings.NewReplacer("%HOST%", host, "%SSH%", "").Replace(remoteStudy)), 0o644)
	out := filepath.Join(dir, "results")
	missing := filepath.Join(dir, "nonexistent")
	_, stderr, code := runCLI(t, "run", p, "--out", out, "--quiet", "--ssh-identity", missing)
	want := "storebench: --ssh-identity " + missing + ": cannot read the key file: no such file or directory\n"
	if code != 2 || stderr != want {
		t.Fatalf("exit %d, stderr %q; want 2, %q", code, stderr, want)
	}
	if d := runDirs(t, out); len(d) != 0 {
		t.Fatalf("nothing may start, yet %v", d)
	}
	// A study naming a file that is not a key (a study may not make ssh
	// read any file it likes).
	notKey := filepath.Join(dir, "notes.txt")
	os.WriteFile(notKey, []byte("not a key\n"), 0o600)
	os.WriteFile(p, []byte(strings.NewReplacer("%HOST%", host, "%SSH%", "ssh:\n  identity: "+notKey).Replace(remoteStudy)), 0o644)
	_, stderr, code = runCLI(t, "run", p, "--out", out, "--quiet")
	if code != 2 || !strings.Contains(stderr, p+":7: ssh.identity: not an ssh key file") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if d := runDirs(t, out); len(d) != 0 {
		t.Fatalf("nothing may start, yet %v", d)
	}
}
