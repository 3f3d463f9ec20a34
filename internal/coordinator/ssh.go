package coordinator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"storebench/internal/study"
)

// Remote workers run through OpenSSH: `ssh host storebench worker` carries
// the same protocol over the session's stdin and stdout as the pipes of a
// local worker, and its stderr (the worker's log) comes back to the
// worker's log file here. Nothing of our own does what ssh does: keys come
// from ssh-agent, ~/.ssh or the study's ssh.identity, host keys are
// checked as ssh checks them, and BatchMode forbids any password prompt.

// sshConnectTimeout bounds connecting to a host: one that cannot be
// reached fails within it, named.
const sshConnectTimeout = 10 * time.Second

// sshCopyTimeout bounds copying our binary to a host.
const sshCopyTimeout = 5 * time.Minute

// defaultRemoteCache is where the binary is kept on a remote host,
// relative to the login directory.
const defaultRemoteCache = ".cache/storebench"

// sshArgs are ssh's options and destination for host h.
func sshArgs(o study.SSH, h study.Host) []string {
	args := []string{
		"-o", "BatchMode=yes",
		// A second under our own bound, so that ssh's reason (refused,
		// no route, timed out) is what the user reads.
		"-o", fmt.Sprintf("ConnectTimeout=%d", int(sshConnectTimeout/time.Second)-1),
		// A host that goes away mid-run is noticed by ssh itself; the
		// protocol's silence bound is the coordinator's own.
		"-o", "ServerAliveInterval=5",
		"-o", "ServerAliveCountMax=3",
		"-T",
	}
	if h.Port > 0 {
		args = append(args, "-p", strconv.Itoa(h.Port))
	}
	if o.Identity != "" {
		args = append(args, "-i", o.Identity, "-o", "IdentitiesOnly=yes")
	}
	for _, opt := range o.Options {
		args = append(args, "-o", opt)
	}
	return append(args, h.Dest())
}

// shellQuote quotes s for the remote login shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// binaryID names our binary in the remote cache: its version and a digest
// of its bytes, so that two builds that call themselves alike ("dev") are
// still told apart.
var binaryID = struct {
	once sync.Once
	id   string
	err  error
}{}

func ourBinaryID(exe, version string) (string, error) {
	binaryID.once.Do(func() {
		f, err := os.Open(exe)
		if err != nil {
			binaryID.err = err
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			binaryID.err = err
			return
		}
		v := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, version)
		binaryID.id = v + "-" + hex.EncodeToString(h.Sum(nil))[:16]
	})
	return binaryID.id, binaryID.err
}

// versionLine is the first line `storebench version` prints: what a
// remote binary must print to be ours.
func versionLine(version string) string {
	return fmt.Sprintf("storebench %s (%s, %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// sshRun runs command on host h with stdin, within d; its error names the
// host and carries ssh's last line of stderr.
func sshRun(ctx context.Context, o study.SSH, h study.Host, command string, stdin io.Reader, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ssh", append(sshArgs(o, h), command)...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("host %s: no answer within %v", h.Raw, d)
	}
	if err != nil {
		msg := lastLine(errb.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 255 {
			return out.String(), fmt.Errorf("host %s: cannot reach it over ssh: %s", h.Raw, msg)
		}
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), &remoteError{host: h.Raw, msg: msg}
	}
	return out.String(), nil
}

// remoteError is a command that ran on the host and failed (ssh itself
// worked).
type remoteError struct{ host, msg string }

func (e *remoteError) Error() string { return fmt.Sprintf("host %s: %s", e.host, e.msg) }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ensureRemote makes sure host h has our binary in its cache and returns
// its path there: it asks the cached binary for its version (the
// handshake), copies ours over ssh when it is missing or answers with
// another version, and asks again. A binary that still does not answer
// with our version (another architecture, a cache that is not writable)
// is refused in one line.
func ensureRemote(ctx context.Context, o Options, ssh study.SSH, h study.Host) (string, error) {
	id, err := ourBinaryID(o.Exe, o.Version)
	if err != nil {
		return "", fmt.Errorf("reading my own binary to copy it to %s: %w", h.Raw, err)
	}
	cache := ssh.CacheDir
	if cache == "" {
		cache = defaultRemoteCache
	}
	dir := strings.TrimSuffix(cache, "/") + "/" + id
	path := dir + "/storebench"
	want := versionLine(o.Version)
	check := func() (string, error) {
		out, err := sshRun(ctx, ssh, h, shellQuote(path)+" version", nil, sshConnectTimeout)
		var re *remoteError
		if errors.As(err, &re) {
			return "", nil // missing or not runnable: copy it
		}
		if err != nil {
			return "", err
		}
		return strings.SplitN(out, "\n", 2)[0], nil
	}
	got, err := check()
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(got) == want {
		return path, nil
	}
	f, err := os.Open(o.Exe)
	if err != nil {
		return "", fmt.Errorf("reading my own binary to copy it to %s: %w", h.Raw, err)
	}
	defer f.Close()
	// Written beside its place and renamed, so that a copy cut short never
	// leaves a truncated binary where the next run would find it.
	tmp := path + ".tmp"
	cp := fmt.Sprintf("mkdir -p %s && cat > %s && chmod +x %s && mv -f %s %s",
		shellQuote(dir), shellQuote(tmp), shellQuote(tmp), shellQuote(tmp), shellQuote(path))
	if _, err := sshRun(ctx, ssh, h, cp, f, sshCopyTimeout); err != nil {
		return "", fmt.Errorf("copying storebench to %s:%s: %w", h.Raw, path, err)
	}
	if got, err = check(); err != nil {
		return "", err
	}
	if strings.TrimSpace(got) != want {
		if got == "" {
			got = "does not run there"
		}
		return "", fmt.Errorf("host %s: storebench copied to %s answers %q, not %q: refusing a worker of another version", h.Raw, path, strings.TrimSpace(got), want)
	}
	return path, nil
}

// startRemote starts a worker on host h through ssh, after the version
// handshake (copying our binary there when needed).
func startRemote(ctx context.Context, o Options, ssh study.SSH, h study.Host, logPath string) (*proc, string, error) {
	path, err := ensureRemote(ctx, o, ssh, h)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command("ssh", append(sshArgs(ssh, h), "exec "+shellQuote(path)+" worker")...)
	p, err := startCmd(cmd, logPath)
	if err != nil {
		return nil, "", fmt.Errorf("host %s: %w", h.Raw, err)
	}
	if p.hello.Version != o.Version {
		p.kill()
		return nil, "", fmt.Errorf("host %s: worker says version %q, coordinator %q: refusing it", h.Raw, p.hello.Version, o.Version)
	}
	p.host = h.Raw
	return p, path, nil
}
