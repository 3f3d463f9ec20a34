// Package proc holds the process helpers every server package uses: a
// free port, a server started as a foreground child in its own process
// group with its output appended to a log file (optionally as another
// user), readiness polling over the server's own protocol, a clean stop
// that falls back to killing the group, and the tail of the log for
// error messages. It depends on nothing in storebench so that any server
// package (and package server itself) can use it.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TailLines is how many log lines start-up and stop errors carry.
const TailLines = 10

// pollInterval is how often readiness and death are polled: short enough
// that a server ready in 100 ms is seen within ~50 ms, long enough not
// to load a 2-core machine while a JVM starts.
const pollInterval = 50 * time.Millisecond

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago
// (the kernel picks it; another process could take it before the server
// binds, in which case the server fails to start with a clear error).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Spec describes a process to start.
type Spec struct {
	// Name is used in messages ("redis-server").
	Name string
	// Path of the executable and its arguments (without argv[0]).
	Path string
	Args []string
	// Dir is the working directory ("" inherits ours).
	Dir string
	// Env entries (KEY=VALUE) added to our environment, overriding it.
	Env []string
	// LogPath receives standard output and error, appended.
	LogPath string
	// User runs the process as that user (uid, gid and groups from
	// os/user), with HOME, USER and LOGNAME set to match. Changing user
	// needs root; naming the user we already are is allowed and changes
	// nothing. Empty: run as ourselves. A server that must not run as
	// root is started this way rather than left to drop privileges
	// itself: the kernel clears the parent-death signal of a process
	// whose credentials change, so a server that switched users on its
	// own would outlive us.
	User string
	// Stdin is written to the process's standard input, which is then
	// closed (empty: /dev/null). Secrets go this way rather than on the
	// command line, which every local user can read in /proc.
	Stdin string
	// Detach lets the process outlive storebench (`storebench server
	// start`). Otherwise it gets SIGKILL when storebench dies, however it
	// dies (kill -9 included): a benchmark must not leave servers behind.
	Detach bool
}

// Handle is a started process.
type Handle struct {
	Name    string
	PID     int
	LogPath string

	done    chan struct{} // closed once the process has been reaped
	waitErr error         // its exit status, valid after done

	stopOnce sync.Once
	stopErr  error
}

// Done is closed when the process has exited (and been reaped).
func (h *Handle) Done() <-chan struct{} { return h.done }

// Exited reports whether the process has ended.
func (h *Handle) Exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// Err is the exit status once the process has exited: nil for exit 0,
// an *exec.ExitError otherwise; nil while it runs.
func (h *Handle) Err() error {
	if !h.Exited() {
		return nil
	}
	return h.waitErr
}

// Status describes the process state: "running", "exit status 0",
// "exit status 1", "signal: killed"...
func (h *Handle) Status() string {
	if !h.Exited() {
		return "running"
	}
	if h.waitErr == nil {
		return "exit status 0"
	}
	return h.waitErr.Error()
}

// Start runs spec as a foreground child in its own process group (so that
// a terminal's Ctrl-C reaches storebench, which then stops the server
// cleanly, and so that the whole tree can be killed at once), with
// standard input from /dev/null and output appended to spec.LogPath.
//
// ctx only guards the start itself: the process outlives it. Unless
// spec.Detach, it dies with storebench (see StartTied); a detached one
// outlives storebench too (`storebench server start` returns while the
// server runs). Stop it with Stop.
func Start(ctx context.Context, spec Spec) (*Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	if spec.LogPath == "" {
		return nil, fmt.Errorf("starting %s: no log path", spec.Name)
	}
	cmd, err := command(spec)
	if err != nil {
		return nil, err
	}
	// The child gets the descriptor itself (an *os.File is passed as is,
	// with no copying goroutine), so its output still lands in the log
	// after storebench has exited.
	f, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: opening its log: %w", spec.Name, err)
	}
	defer f.Close()
	cmd.Stdout = f
	cmd.Stderr = f
	if spec.Stdin != "" {
		cmd.Stdin = strings.NewReader(spec.Stdin)
	}
	release := func() {}
	if spec.Detach {
		err = cmd.Start()
	} else {
		release, err = StartTied(cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", spec.Name, spec.Path, err)
	}
	h := &Handle{Name: spec.Name, PID: cmd.Process.Pid, LogPath: spec.LogPath, done: make(chan struct{})}
	go func() {
		h.waitErr = cmd.Wait()
		release()
		close(h.done)
	}()
	if fn, ok := ctx.Value(startedKey{}).(func(*Handle)); ok {
		fn(h)
	}
	return h, nil
}

type startedKey struct{}

// WithStarted returns a context under which Start calls fn with every
// process it starts, as soon as it runs: `storebench server start`
// records a detached server before it is ready, so that no failure,
// interruption or kill leaves it running unknown to any storebench.
func WithStarted(ctx context.Context, fn func(h *Handle)) context.Context {
	return context.WithValue(ctx, startedKey{}, fn)
}

// StartTied starts cmd so that the kernel sends it SIGKILL when storebench
// dies, however it dies: kill -9 included, which no handler of ours can
// see. The parent-death signal fires when the *thread* that forked the
// child exits, not the process, and the Go runtime may end an idle
// thread; so the child is forked from a goroutine locked to its OS thread,
// and that goroutine keeps the thread (parked, costing nothing) until
// release is called. Call release once the child has been reaped
// (after cmd.Wait). SIGKILL rather than SIGTERM: a clean shutdown is for
// a storebench that is alive to wait for it; this is the last resort, and
// a server killed this way has only disposable benchmark data.
func StartTied(cmd *exec.Cmd) (release func(), err error) {
	return StartTiedSignal(cmd, syscall.SIGKILL)
}

// StartTiedSignal is StartTied with another parent-death signal: a FUSE
// daemon (package powerfs) given SIGTERM unmounts its file system before it exits,
// where SIGKILL would leave a dead mount behind.
func StartTiedSignal(cmd *exec.Cmd, sig syscall.Signal) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Started or not, the thread is released only by done: exiting
		// while locked would end the thread, and the child with it.
		defer runtime.UnlockOSThread()
		started <- cmd.Start()
		<-done
	}()
	if err := <-started; err != nil {
		close(done)
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, nil
}

// command builds the exec.Cmd of spec: own process group, credentials.
func command(spec Spec) (*exec.Cmd, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	env := os.Environ()
	if spec.User != "" {
		cred, userEnv, err := credential(spec.User)
		if err != nil {
			return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
		}
		cmd.SysProcAttr.Credential = cred
		env = append(env, userEnv...)
	}
	// exec keeps the last of duplicate keys, so these override ours.
	cmd.Env = append(env, spec.Env...)
	return cmd, nil
}

// credential returns what runs a process as the named user, or nil when
// we are that user already.
func credential(name string) (*syscall.Credential, []string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, nil, fmt.Errorf("looking up user %s: %w", name, err)
	}
	uid, gid, err := ids(u)
	if err != nil {
		return nil, nil, err
	}
	env := []string{"HOME=" + u.HomeDir, "USER=" + u.Username, "LOGNAME=" + u.Username}
	if uid == os.Geteuid() {
		return nil, env, nil
	}
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("running as user %s needs root (we are uid %d)", name, os.Geteuid())
	}
	var groups []uint32
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				groups = append(groups, uint32(n))
			}
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, env, nil
}

// ids parses a user's numeric uid and gid.
func ids(u *user.User) (uid, gid int, err error) {
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, fmt.Errorf("user %s: uid %q: %w", u.Username, u.Uid, err)
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		return 0, 0, fmt.Errorf("user %s: gid %q: %w", u.Username, u.Gid, err)
	}
	return uid, gid, nil
}

// LookupIDs returns the numeric uid and gid of a user.
func LookupIDs(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("looking up user %s: %w", name, err)
	}
	return ids(u)
}

// Run runs spec to completion (an initdb, a mariadb-install-db), its
// output appended to spec.LogPath. A failure, or ctx ending first (the
// process group is then killed), yields an error with the log's tail.
func Run(ctx context.Context, spec Spec) error {
	h, err := Start(ctx, spec)
	if err != nil {
		return err
	}
	select {
	case <-h.done:
		if h.waitErr != nil {
			return fmt.Errorf("%s failed: %s%s; log:%s", spec.Name, causeOf(spec.LogPath), h.Status(), indent(LogTail(spec.LogPath, TailLines)))
		}
		return nil
	case <-ctx.Done():
		_ = syscall.Kill(-h.PID, syscall.SIGKILL)
		<-h.done
		return fmt.Errorf("%s interrupted: %w; log:%s", spec.Name, ctx.Err(), indent(LogTail(spec.LogPath, TailLines)))
	}
}

// permanent marks a probe error that no amount of waiting will fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps a probe error so that WaitReady gives up at once (a
// server that answers "access denied" will not change its mind).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// probeTimeout bounds one probe so that a server that accepts the
// connection but never answers does not hold the poll loop.
const probeTimeout = 2 * time.Second

// WaitReady calls probe every 50 ms until it succeeds, the process exits
// (the server failed: its log says why), timeout passes, or ctx ends.
// Errors carry the last probe error and the tail of the log. It does not
// stop the process: the caller does, with Stop.
func WaitReady(ctx context.Context, h *Handle, timeout time.Duration, probe func(ctx context.Context) error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		// A dead process cannot be ready, even if something else answers
		// on its port.
		if h.Exited() {
			return startupExit(h)
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := probe(pctx)
		cancel()
		if err == nil {
			if h.Exited() {
				return startupExit(h)
			}
			return nil
		}
		last = err
		var p permanent
		if errors.As(err, &p) {
			return fmt.Errorf("%s started but cannot be used: %s%v; log:%s", h.Name, causeOf(h.LogPath), p.err, indent(LogTail(h.LogPath, TailLines)))
		}
		select {
		case <-h.done:
			return startupExit(h)
		case <-ctx.Done():
			return fmt.Errorf("%s start-up interrupted: %w (last probe error: %v); log:%s", h.Name, ctx.Err(), last, indent(LogTail(h.LogPath, TailLines)))
		case <-deadline.C:
			return fmt.Errorf("%s did not become ready within %s (%slast probe error: %v); log:%s", h.Name, timeout, causeOf(h.LogPath), last, indent(LogTail(h.LogPath, TailLines)))
		case <-tick.C:
		}
	}
}

// WaitServing is WaitReady with a probe that first checks that h itself
// listens on port (Listening): another server already on the port,
// answering in its place, is not taken for it.
func WaitServing(ctx context.Context, h *Handle, port int, timeout time.Duration, probe func(ctx context.Context) error) error {
	return WaitReady(ctx, h, timeout, func(ctx context.Context) error {
		if err := Listening(h.PID, port); err != nil {
			return err
		}
		return probe(ctx)
	})
}

// WaitServingOrStop is WaitServing that stops h (sig, then SIGKILL to its
// group after 5 s) when it fails, so that a server that does not serve in
// time is not left running.
func WaitServingOrStop(ctx context.Context, h *Handle, port int, timeout time.Duration, sig syscall.Signal, probe func(ctx context.Context) error) error {
	if err := WaitServing(ctx, h, port, timeout, probe); err != nil {
		_ = Stop(context.Background(), h, sig, 5*time.Second)
		return err
	}
	return nil
}

func startupExit(h *Handle) error {
	return fmt.Errorf("%s exited during start-up: %s%s; log:%s", h.Name, causeOf(h.LogPath), h.Status(), indent(LogTail(h.LogPath, TailLines)))
}

// causes are log lines that say why a server would not start, whatever
// else its log says around them (a JVM's stack trace, its shutdown).
var causes = []string{"Address already in use", "BindException", "No space left on device"}

// LogCause is the last line of the log at path (its last 64 KiB) that
// names a known cause of a failed start (causes), "" if none does: a
// Kafka's or Cassandra's "Address already in use" sits under ten lines
// of shutdown messages, past a log tail's reach.
func LogCause(path string) string {
	lines := strings.Split(LogTail(path, 1<<30), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		for _, c := range causes {
			if strings.Contains(lines[i], c) {
				l := strings.TrimSpace(lines[i])
				if len(l) > 300 {
					l = l[:300] + "..."
				}
				return l
			}
		}
	}
	return ""
}

// causeOf is LogCause(path) and "; " to put first in an error, or "".
func causeOf(path string) string {
	if c := LogCause(path); c != "" {
		return c + "; "
	}
	return ""
}

// Stop shuts the process down: sig (SIGTERM when 0; PostgreSQL's fast
// shutdown is SIGINT) to the process, then, if it has not exited within
// timeout or ctx ends first, SIGKILL to its whole process group. The
// result is an error when the process had to be killed, or had died on
// its own with a failure before Stop; calling Stop again returns the
// first result.
func Stop(ctx context.Context, h *Handle, sig syscall.Signal, timeout time.Duration) error {
	h.stopOnce.Do(func() { h.stopErr = stop(ctx, h, sig, timeout) })
	return h.stopErr
}

func stop(ctx context.Context, h *Handle, sig syscall.Signal, timeout time.Duration) error {
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	if h.Exited() {
		if h.waitErr != nil {
			return fmt.Errorf("%s had already exited: %s; log:%s", h.Name, h.Status(), indent(LogTail(h.LogPath, TailLines)))
		}
		return nil
	}
	if err := syscall.Kill(h.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (pid %d): %w", h.Name, h.PID, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var why string
	select {
	case <-h.done:
		// Exited on its own after our signal: any status is a clean stop
		// (some servers exit non-zero on a signal).
		return nil
	case <-timer.C:
		why = fmt.Sprintf("did not stop within %s after %s", timeout, signalName(sig))
	case <-ctx.Done():
		why = fmt.Sprintf("stop interrupted (%v) after %s", ctx.Err(), signalName(sig))
	}
	// The process is still running (not reaped), so the group id is still
	// ours: killing it cannot hit an unrelated process.
	_ = syscall.Kill(-h.PID, syscall.SIGKILL)
	select {
	case <-h.done:
	case <-time.After(killWait):
		return fmt.Errorf("%s (pid %d) %s, and survived SIGKILL for %s", h.Name, h.PID, why, killWait)
	}
	return fmt.Errorf("%s (pid %d) %s: killed; log:%s", h.Name, h.PID, why, indent(LogTail(h.LogPath, TailLines)))
}

// killWait is how long a SIGKILLed process may take to disappear (a
// process in uninterruptible disk sleep dies only when the I/O returns).
const killWait = 10 * time.Second

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}

// tailBytes bounds how much of a log LogTail reads.
const tailBytes = 64 << 10

// LogTail returns the last n lines of the file at path (blank lines
// dropped), or a note saying why there are none. It never fails: it only
// decorates error messages.
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	off := st.Size() - tailBytes
	if off < 0 {
		off = 0
	}
	buf, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	if off > 0 {
		// Drop the partial first line.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	var lines []string
	for _, l := range strings.Split(string(buf), "\n") {
		if l = strings.TrimRight(l, "\r \t"); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(log " + path + " is empty)"
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// indent puts a multi-line log tail on lines of its own under an error.
func indent(tail string) string {
	return "\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
}

// Logf writes one progress line to w (nil: nowhere).
func Logf(w io.Writer, format string, args ...any) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, strings.TrimRight(format, "\n")+"\n", args...)
}
