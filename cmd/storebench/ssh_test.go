package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
)

// sshd is an sshd of the test's own on 127.0.0.2 (never the system
// service): a generated host key, a generated user key authorized for the
// current user, and its own config.
type sshd struct {
	dir, key, knownHosts, host string
	port                       int
}

func startSSHD(t *testing.T) *sshd {
	t.Helper()
	for _, bin := range []string{"/usr/sbin/sshd", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is missing: scripts/install-servers.sh sshd installs it", bin)
		}
	}
	dir := t.TempDir()
	for _, k := range []string{"host_key", "user_key"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	// sshd insists on its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := fmt.Sprintf(`ListenAddress 127.0.0.2:%d
HostKey %s/host_key
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
# The test binary is storebench when this is set (see TestMain).
SetEnv STOREBENCH_AS_MAIN=1
LogLevel ERROR
`, port, dir, dir, dir)
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf), 0o600)
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	logf, _ := os.Create(filepath.Join(dir, "sshd.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.2:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			t.Fatalf("sshd did not listen: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return &sshd{dir: dir, key: filepath.Join(dir, "user_key"), knownHosts: filepath.Join(dir, "known_hosts"),
		host: fmt.Sprintf("ssh://%s@127.0.0.2:%d", u.Username, port), port: port}
}

const sshStudy = `name: ycsb-ssh
ladder: [1000]
concurrency: 2
targets: [%URI%]
hosts: [local, %HOST%]
ssh:
  identity: %KEY%
  options: [Compression=no]
  cache_dir: %CACHE%
workloads:
  - name: ycsb
    params: {workloads: [a], operations: 1000, fields: 4, field_length: 50}
`

// One local and one remote worker (through an sshd of our own on
// 127.0.0.2) drive one Redis; the remote host's cache starts empty, so
// storebench copies itself there on first use, and finds it there the
// second time.
func TestRemoteWorkerOverSSH(t *testing.T) {
	uri := ownRedisDB(t, 12)
	d := startSSHD(t)
	cache := filepath.Join(d.dir, "remote-cache")
	text := strings.NewReplacer("%URI%", uri, "%HOST%", d.host, "%KEY%", d.key, "%CACHE%", cache).Replace(sshStudy)
	p := filepath.Join(t.TempDir(), "ssh.yaml")
	os.WriteFile(p, []byte(text), 0o644)

	var copied string
	var copiedAt time.Time
	for round := 1; round <= 2; round++ {
		out := t.TempDir()
		// Where to keep the host key, and trusting it on first use, are
		// the user's to say: a study file may not (ssh.options only tune
		// the connection).
		stdout, stderr, code := runCLI(t, "run", p, "--out", out, "--quiet",
			"--ssh-option", "UserKnownHostsFile="+d.knownHosts, "--ssh-option", "StrictHostKeyChecking=accept-new")
		if code != 0 {
			t.Fatalf("round %d: exit %d\n%s\n%s", round, code, stdout, stderr)
		}
		dir := onlyDir(t, out)
		run, err := results.Read(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		tr := run.Targets[0]
		if run.Status != "complete" || len(tr.Workers) != 2 || tr.Workers[0].Host != "local" || tr.Workers[1].Host != d.host {
			t.Fatalf("round %d: run %s (%s), workers %+v", round, run.Status, run.Reason, tr.Workers)
		}
		for _, st := range tr.Steps {
			if len(st.Workers) != 2 || st.Workers[1].Host != d.host || st.Workers[1].Ops == 0 || st.Workers[0].Ops+st.Workers[1].Ops != st.Ops {
				t.Fatalf("round %d: %s: %d ops, parts %+v", round, st.Phase, st.Ops, st.Workers)
			}
			// Measured means a snapshot of the remote process was taken:
			// its memory and its CPU (user and system together: /proc
			// counts in 10 ms ticks, and a short step may spend all of
			// its few ticks in the kernel).
			after := st.Workers[1].Resources.After
			if after.At.IsZero() || after.RSSBytes == 0 || after.CPUUserNs+after.CPUSysNs == 0 || st.Workers[1].PID == st.Workers[0].PID {
				t.Fatalf("round %d: %s: the remote worker's resources were not measured: %+v", round, st.Phase, st.Workers[1])
			}
		}
		// The remote worker's stderr came back over the session.
		if _, err := os.Stat(filepath.Join(dir, "logs", tr.Name+".w1.log")); err != nil {
			t.Fatal(err)
		}
		bins, _ := filepath.Glob(filepath.Join(cache, "*", "storebench"))
		if len(bins) != 1 {
			t.Fatalf("round %d: remote cache holds %v, want our binary once", round, bins)
		}
		fi, err := os.Stat(bins[0])
		if err != nil || fi.Mode()&0o100 == 0 {
			t.Fatalf("round %d: %v %v", round, fi, err)
		}
		if round == 1 {
			copied, copiedAt = bins[0], fi.ModTime()
		} else if bins[0] != copied || !fi.ModTime().Equal(copiedAt) {
			t.Fatalf("the binary was copied again although the remote one is ours")
		}
	}
}

// A host that cannot be reached fails its target within 10 s, naming the
// host, in one line.
func TestUnreachableHostFailsFastNamingIt(t *testing.T) {
	uri := ownRedisDB(t, 13)
	l, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // closed: nothing listens there now
	host := fmt.Sprintf("ssh://nobody@127.0.0.3:%d", port)
	p := filepath.Join(t.TempDir(), "ycsb-small.yaml")
	os.WriteFile(p, []byte(strings.Replace(ycsbSmall, "targets: [pebble]", "targets: ["+uri+"]", 1)), 0o644)
	t0 := time.Now()
	_, stderr, code := runCLI(t, "run", p, "--out", t.TempDir(), "--quiet", "--hosts", host)
	took := time.Since(t0)
	if code != 1 || !strings.Contains(stderr, "host "+host) || took > 10*time.Second {
		t.Fatalf("exit %d after %v: %s", code, took, stderr)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "FAILED") {
			t.Logf("failed after %v: %s", took.Round(time.Millisecond), line)
		}
	}
}

// A host that cannot be reached is found before a managed server starts
// (issue 33, 13): the run fails naming the host, and no server was
// started for nothing (no "starting" line, no lease, no server event).
func TestUnreachableHostCheckedBeforeTheServerStarts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // closed: nothing listens there now
	host := fmt.Sprintf("ssh://nobody@127.0.0.3:%d", port)
	p := filepath.Join(t.TempDir(), "ycsb-small.yaml")
	os.WriteFile(p, []byte(strings.Replace(ycsbSmall, "targets: [pebble]", "targets: [redis]", 1)), 0o644)
	home := t.TempDir()
	cmd := storebench(t, "run", p, "--out", t.TempDir(), "--hosts", "local,"+host)
	cmd.Env = append(cmd.Env, "STOREBENCH_HOME="+home)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 1 || !strings.Contains(e.String(), "host "+host) {
		t.Fatalf("exit %d: %s%s", code, o.String(), e.String())
	}
	if strings.Contains(o.String()+e.String(), "starting") {
		t.Errorf("a server was started before the host was checked:\n%s%s", o.String(), e.String())
	}
	if ents, _ := os.ReadDir(filepath.Join(home, "managed")); len(ents) != 0 {
		t.Errorf("a server was leased: %v", ents)
	}
}
