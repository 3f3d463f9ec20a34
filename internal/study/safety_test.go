package study

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sshStudySrc = `name: x
ladder: [10]
targets: [pebble]
workloads: [{name: ledger}]
hosts: [ssh://bench@127.0.0.1]
ssh:
  options:
    - ConnectTimeout=5
    - %OPT%
`

// A study file may carry only ssh options that tune the connection:
// anything that can run a command, load code, read or write a local file,
// forward or reach another address is refused at parse time, naming the
// file, the line, the field and the flag that may give it.
func TestStudyFileSSHOptionsAllowList(t *testing.T) {
	refused := []string{
		`"ProxyCommand=sh -c 'id > /tmp/x'"`,
		"ProxyCommand=nc", "proxycommand=nc", "ProxyJump=evil.example", "ProxyUseFdpass=yes",
		"LocalCommand=touch", "PermitLocalCommand=yes", "KnownHostsCommand=/bin/true",
		"Include=/etc/passwd", "Match=exec", "IdentityAgent=/tmp/agent", "IdentityFile=/etc/shadow",
		"CertificateFile=/x", "UserKnownHostsFile=/tmp/kh", "GlobalKnownHostsFile=/tmp/kh",
		"ControlPath=/tmp/c", "ControlMaster=auto", "ControlPersist=yes", "PKCS11Provider=/tmp/x.so",
		"SecurityKeyProvider=/tmp/x.so", "XAuthLocation=/tmp/x", "HostName=evil.example",
		"ForwardAgent=yes", "ForwardX11=yes", "LocalForward=8080:localhost:80", "RemoteForward=9000:localhost:22",
		"DynamicForward=1080", "SendEnv=AWS_SECRET_ACCESS_KEY", "SetEnv=A=B", "RevokedHostKeys=/x",
		"StrictHostKeyChecking=no", "StrictHostKeyChecking=accept-new", "UpdateHostKeys=yes",
		"EnableSSHKeysign=yes", "CanonicalizeHostname=yes", "Hostname=evil",
		`"Ciphers=aes128-ctr ProxyCommand=nc"`, "Ciphers=%h", "Ciphers=${HOME}", `"\"ProxyCommand\"=nc"`,
	}
	for _, opt := range refused {
		t.Run(opt, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(strings.Replace(sshStudySrc, "%OPT%", opt, 1)))
			if err == nil {
				t.Fatalf("%s accepted in a study file", opt)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "f.yaml:9: ssh.options[1]: ") || !strings.Contains(msg, "--ssh-option") {
				t.Fatalf("error %q: want f.yaml:9: ssh.options[1]: … naming --ssh-option", msg)
			}
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%T, want a *study.Error (exit 2)", err)
			}
		})
	}
	for _, opt := range []string{"ServerAliveInterval=10", "ServerAliveCountMax=2", "Compression=yes", "compression=no",
		"Ciphers=+aes128-cbc,aes256-gcm@openssh.com", "KexAlgorithms=^curve25519-sha256", "StrictHostKeyChecking=yes",
		"IdentitiesOnly=yes", "ConnectionAttempts=2", "AddressFamily=inet", "IPQoS=throughput", "RekeyLimit=1G"} {
		if _, err := Parse("f.yaml", []byte(strings.Replace(sshStudySrc, "%OPT%", opt, 1))); err != nil {
			t.Errorf("%s refused: %v", opt, err)
		}
	}
}

// The command line may give any ssh option (the user typed it), ahead of
// the file's so that it wins (ssh keeps an option's first value); one a
// study file may not carry is left out of the study as run, which then
// parses back and says in a comment what to give again.
func TestCommandLineSSHOptionsStayOutOfStudyAsRun(t *testing.T) {
	s, err := Parse("f.yaml", []byte(strings.Replace(sshStudySrc, "%OPT%", "Compression=yes", 1)))
	if err != nil {
		t.Fatal(err)
	}
	cli := []string{"ProxyCommand=sh -c 'touch /tmp/never'", "UserKnownHostsFile=/tmp/kh", "ServerAliveInterval=7"}
	if err := s.Apply(Override{SSHOptions: cli}); err != nil {
		t.Fatalf("--ssh-option refused: %v", err)
	}
	if got := strings.Join(s.SSH.Options, " | "); !strings.Contains(got, "ProxyCommand=sh -c 'touch /tmp/never'") {
		t.Fatalf("options %q: the command line's were not kept", got)
	}
	out, err := s.Effective(nil)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if strings.Contains(text, "touch") || strings.Contains(text, "/tmp/kh") {
		t.Fatalf("a command-line-only option reached the study as run:\n%s", text)
	}
	if !strings.Contains(text, "ProxyCommand, UserKnownHostsFile, given with --ssh-option") {
		t.Fatalf("the study as run does not say what was left out:\n%s", text)
	}
	back, err := Parse("study.yaml", out)
	if err != nil {
		t.Fatalf("the study as run does not parse back: %v\n%s", err, text)
	}
	if got := strings.Join(back.SSH.Options, ","); got != "ServerAliveInterval=7,ConnectTimeout=5,Compression=yes" {
		t.Fatalf("options read back %q", got)
	}
}

// ssh.identity and --ssh-identity are checked before anything starts: a
// readable regular file holding an ssh key, nothing else.
func TestSSHIdentityChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	priv := write("id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
	pem := write("id_rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n")
	pub := write("id.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG me@host\n")
	notKey := write("passwd", "root:x:0:0:root:/root:/bin/bash\n")
	big := write("big", "-----BEGIN OPENSSH PRIVATE KEY-----\n"+strings.Repeat("A", MaxKeyFileBytes))
	unreadable := write("locked", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	os.Chmod(unreadable, 0)
	src := func(id string) string {
		return "name: x\nladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\nhosts: [ssh://bench@127.0.0.1]\nssh:\n  identity: " + id + "\n"
	}
	for _, ok := range []string{priv, pem, pub} {
		s, err := Parse("f.yaml", []byte(src(ok)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckFiles(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	bad := map[string]string{
		filepath.Join(dir, "missing"): "cannot read the key file: no such file or directory",
		dir:                           "not a regular file",
		"/dev/zero":                   "not a regular file",
		notKey:                        "not an ssh key file",
		big:                           "larger than any ssh key file",
	}
	if os.Getuid() != 0 {
		bad[unreadable] = "cannot read the key file: permission denied"
	}
	for path, want := range bad {
		s, err := Parse("f.yaml", []byte(src(path)))
		if err != nil {
			t.Fatal(err)
		}
		err = s.CheckFiles()
		if err == nil || !strings.HasPrefix(err.Error(), "f.yaml:7: ssh.identity: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want f.yaml:7: ssh.identity: …%s", path, err, want)
		}
		// The same path from the command line names the flag.
		s, _ = Parse("f.yaml", []byte(src(priv)))
		if err := s.Apply(Override{SSHIdentity: &path}); err != nil {
			t.Fatal(err)
		}
		err = s.CheckFiles()
		if err == nil || !strings.HasPrefix(err.Error(), "--ssh-identity "+path+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("--ssh-identity %s: got %v", path, err)
		}
	}
	// ssh expands % and ${} in an identity path: the file checked would
	// not be the one read.
	if _, err := Parse("f.yaml", []byte(src("${HOME}/.ssh/id"))); err == nil || !strings.Contains(err.Error(), "f.yaml:7: ssh.identity: ") {
		t.Errorf("${HOME} in ssh.identity: %v", err)
	}
}

// The other study fields that reach a shell word, a path or an address.
func TestStudyFieldsThatReachAShellOrAPath(t *testing.T) {
	base := "name: x\nladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n"
	for src, want := range map[string]string{
		base + "hosts: [ssh://bench@127.0.0.1]\nssh:\n  cache_dir: -rf\n": "f.yaml:7: ssh.cache_dir: \"-rf\": may not start with '-'",
		base + "hosts: [\"ssh://be%0Ach@127.0.0.1\"]\n":                   "f.yaml:5: hosts[0]: ",
		base + "hosts: [ssh://-oProxyCommand=x@127.0.0.1]\n":              "hosts[0]: ",
		base + "title: \"a\\nb\"\n":                                       "f.yaml:5: title: ",
		base + "title: \"![x](http://tracker.example/p.png)\"\n":          "f.yaml:5: title: ",
	} {
		_, err := Parse("f.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

// A target URI whose query makes the client read a local file (or take
// its server from one) is refused from a study file; the command line
// may give it.
func TestTargetURIReadsNoLocalFile(t *testing.T) {
	for _, q := range []string{"passfile=/home/me/.pgpass", "sslkey=/home/me/.ssh/id_rsa", "sslrootcert=/etc/shadow",
		"service=prod", "servicefile=/tmp/s", "tlsCAFile=/etc/shadow", "tlsCertificateKeyFile=/k", "allowAllFiles=true"} {
		src := "name: x\nladder: [10]\ntargets:\n  - pebble\n  - postgres://bench@db.example:5432/bench?sslmode=disable&" + q + "\nworkloads: [{name: ledger}]\n"
		_, err := Parse("f.yaml", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), "f.yaml:5: targets[1]: query parameter") || !strings.Contains(err.Error(), "--targets") {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"sslmode=disable", "directConnection=true", "tlsAllowInvalidCertificates=true", "pool_max_conns=8"} {
		src := "name: x\nladder: [10]\ntargets: [\"mongodb://db.example:27017/bench?" + q + "\"]\nworkloads: [{name: ledger}]\n"
		if _, err := Parse("f.yaml", []byte(src)); err != nil {
			t.Errorf("%s refused: %v", q, err)
		}
	}
	s, err := Parse("f.yaml", []byte("name: x\nladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	list := "postgres://bench@127.0.0.1:5432/bench?sslrootcert=/etc/ssl/ca.pem"
	if err := s.Apply(Override{Targets: &list}); err != nil {
		t.Fatalf("--targets with sslrootcert: %v", err)
	}
}

// A value only the user may give (an address) is told apart from one the
// file or one of its scales gives.
func TestSetOnCommandLine(t *testing.T) {
	src := "name: x\nladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger, params: {payload: 10}}]\nscales:\n  s: {ledger.payload: 20}\n"
	s, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	const f = "workloads.ledger.params.payload"
	if s.SetOnCommandLine(f) {
		t.Fatal("the file's value counted as the command line's")
	}
	if err := s.Apply(Override{Scale: "s"}); err != nil || s.SetOnCommandLine(f) {
		t.Fatalf("a scale's value counted as the command line's (%v)", err)
	}
	if err := s.Apply(Override{Set: []string{"ledger.payload=30"}}); err != nil || !s.SetOnCommandLine(f) {
		t.Fatalf("--set not seen (%v)", err)
	}
}
