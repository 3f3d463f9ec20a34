// Package powerfs is storebench's power-loss file system: a FUSE mount
// (github.com/hanwen/go-fuse) over a target's data directory whose
// reads and writes pass through to a backing directory, and which puts
// back, on a simulated power failure, every write that was not made
// durable (fsync, fdatasync, msync, O_SYNC/O_DSYNC). See FS for the
// crash model.
//
// The file system runs in a process of its own (this binary, started
// again with ServeEnv set: a page fault on a mapped file of the mount
// must never wait on the process that serves it). A mount never outlives
// its storebench: the server gets SIGTERM when its parent dies (it
// unmounts, then exits), Close unmounts and stops it (a lazy unmount as
// the fallback), and every mount is recorded in a lease; Reap, run
// before each new mount, unmounts and stops what a dead storebench left.
package powerfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// The crash models.
const (
	// ModelData: what was not synced is lost; the namespace persists.
	ModelData = "data"
	// ModelMetadata: ModelData, and a namespace operation (create,
	// mknod, mkdir, symlink, link, unlink, rmdir, rename) is lost too
	// unless its directory (a rename: both) was fsynced after it.
	ModelMetadata = "metadata"
)

// Models are the crash models served.
var Models = []string{ModelData, ModelMetadata}

// MountTimeout bounds the wait for a mount to appear and for the server
// to answer.
const MountTimeout = 30 * time.Second

// OffEnv set to "off" turns power failures off on a machine that must
// not mount FUSE file systems: they are refused with that reason.
const OffEnv = "STOREBENCH_POWERFS"

// Unavailable says why power failures cannot run here ("": they can).
func Unavailable() string {
	if os.Getenv(OffEnv) == "off" {
		return "turned off (" + OffEnv + "=off)"
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse (FUSE is not available in this kernel or container)"
	}
	if os.Geteuid() != 0 {
		return "not root: mounting the power-loss file system over an engine's data (allow_other) needs root"
	}
	return ""
}

// Mount is one mount: Dir is where the engine reads and writes; Root
// is the backing directory below it.
type Mount struct {
	Dir, Root string
	base      string
	log       string
	model     string
	// ctl is our end of the socket pair the server answers on; ctlMu
	// keeps one command at a time on it.
	ctl     net.Conn
	ctlMu   sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	release func()
	unlease func()
	// stopping: we are unmounting or killing it; crashed: it exited
	// while neither.
	stopping, crashed atomic.Bool
}

// New mounts a fresh file system in base (created; root/ holds the
// data, mnt/ is the mount point; the metadata model keeps files in
// stash/) in the crash model model (Models; "" is ModelData) and waits
// until the mount is there. Leftover mounts of dead storebench
// processes are cleaned up first.
func New(ctx context.Context, base, model string) (*Mount, error) {
	if model == "" {
		model = ModelData
	}
	if !slices.Contains(Models, model) {
		return nil, fmt.Errorf("powerfs: unknown crash model %q (want one of %s)", model, strings.Join(Models, ", "))
	}
	_ = Reap(ctx, io.Discard)
	base, err := filepath.Abs(base)
	if err != nil {
		return nil, err
	}
	m := &Mount{Dir: filepath.Join(base, "mnt"), Root: filepath.Join(base, "root"), base: base,
		log: filepath.Join(base, "powerfs.log"), model: model}
	for _, d := range []string{m.Dir, m.Root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("powerfs: %w", err)
		}
	}
	if err := m.mount(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// config is what the server process is told (ServeEnv, JSON); its
// control socket is its file descriptor 3.
type config struct {
	Dir, Root string
	Model     string
}

func (m *Mount) mount(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	defer logf.Close()
	ours, theirs, err := socketPair()
	if err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	defer theirs.Close()
	cfg, _ := json.Marshal(config{Dir: m.Dir, Root: m.Root, Model: m.model})
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), ServeEnv+"="+string(cfg))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := proc.StartTiedSignal(cmd, syscall.SIGTERM)
	if err != nil {
		ours.Close()
		return fmt.Errorf("starting the power-loss file system: %w", err)
	}
	if m.ctl != nil {
		m.ctl.Close()
	}
	m.ctl = ours
	m.cmd, m.release, m.exited = cmd, release, make(chan struct{})
	m.stopping.Store(false)
	m.crashed.Store(false)
	exited := m.exited
	go func() {
		_ = cmd.Wait()
		release()
		if !m.stopping.Load() {
			m.crashed.Store(true)
		}
		close(exited)
	}()
	m.unlease, err = lease(m.Dir, cmd.Process.Pid)
	if err != nil {
		m.kill()
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, MountTimeout)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if mounted(m.Dir) {
			if _, err := m.ask(ctx, "stats"); err == nil {
				return nil
			}
		}
		select {
		case <-m.exited:
			m.kill()
			return fmt.Errorf("the power-loss file system exited before mounting %s: %s", m.Dir, proc.LogTail(m.log, proc.TailLines))
		case <-ctx.Done():
			m.kill()
			return fmt.Errorf("powerfs: %s not mounted after %s: %w", m.Dir, MountTimeout, ctx.Err())
		case <-t.C:
		}
	}
}

// socketPair is a connected pair of unix stream sockets: ours, and the
// server's as a file to pass on.
func socketPair() (net.Conn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fds[0]), "powerfs-ctl")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c, os.NewFile(uintptr(fds[1]), "powerfs-ctl"), nil
}

// ask sends one command to the server and reads its one-line answer.
func (m *Mount) ask(ctx context.Context, cmd string) ([]byte, error) {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	c := m.ctl
	if c == nil {
		return nil, errors.New("powerfs: not mounted")
	}
	deadline := time.Now().Add(MountTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		return nil, fmt.Errorf("powerfs: %s: %w", cmd, err)
	}
	// One answer per command: nothing is left buffered for the next.
	line, err := readLine(c)
	if err != nil {
		return nil, fmt.Errorf("powerfs: %s: %w", cmd, err)
	}
	var a answer
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, fmt.Errorf("powerfs: %s: %w", cmd, err)
	}
	if a.Error != "" {
		return nil, fmt.Errorf("powerfs: %s: %s", cmd, a.Error)
	}
	return a.Result, nil
}

type answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Died says whether the server exited while mounted, with its log's
// tail.
func (m *Mount) Died() (bool, string) {
	died := m.crashed.Load()
	if !died && m.cmd != nil {
		_, err := os.Stat(m.Dir)
		died = errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED)
	}
	if !died {
		return false, ""
	}
	return true, proc.LogTail(m.log, proc.TailLines)
}

// Fail is the power failure: every write not made durable is dropped
// (the engine must be dead already). Remount next, as a reboot would,
// so that nothing of the kernel's page cache of the mount survives.
func (m *Mount) Fail(ctx context.Context) (Failure, error) {
	var f Failure
	b, err := m.ask(ctx, "fail")
	if err != nil {
		return f, err
	}
	return f, json.Unmarshal(b, &f)
}

// Stats asks the server for its counters.
func (m *Mount) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	b, err := m.ask(ctx, "stats")
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// PowerFail is Fail then Remount.
func (m *Mount) PowerFail(ctx context.Context) (Failure, error) {
	f, err := m.Fail(ctx)
	if err != nil {
		return f, err
	}
	return f, m.Remount(ctx)
}

// Remount unmounts and mounts again (a reboot: nothing of the old
// mount's page cache survives).
func (m *Mount) Remount(ctx context.Context) error {
	if err := m.unmount(); err != nil {
		return err
	}
	return m.mount(ctx)
}

// Close unmounts and stops the server; the directories stay.
func (m *Mount) Close() error { return m.unmount() }

func (m *Mount) unmount() error {
	if m.cmd == nil {
		return nil
	}
	m.stopping.Store(true)
	var err error
	if mounted(m.Dir) {
		err = Unmount(m.Dir)
	}
	// Once unmounted the server exits; a lazy unmount (a file still
	// open on the mount) keeps it serving until it is killed, which
	// loses nothing (every write is in the backing directory already)
	// and ends the old mount's connection.
	select {
	case <-m.exited:
	case <-time.After(2 * time.Second):
		m.kill()
	}
	if m.unlease != nil {
		m.unlease()
		m.unlease = nil
	}
	m.cmd = nil
	if m.ctl != nil {
		m.ctl.Close()
		m.ctl = nil
	}
	return err
}

// readLine reads up to and including a newline, a byte at a time (the
// answers are short).
func readLine(r io.Reader) ([]byte, error) {
	var out []byte
	b := make([]byte, 1)
	for {
		if _, err := io.ReadFull(r, b); err != nil {
			return out, err
		}
		out = append(out, b[0])
		if b[0] == '\n' {
			return out, nil
		}
	}
}

func (m *Mount) kill() {
	m.stopping.Store(true)
	_ = m.cmd.Process.Kill()
	<-m.exited
	if mounted(m.Dir) {
		_ = Unmount(m.Dir)
	}
	if m.unlease != nil {
		m.unlease()
		m.unlease = nil
	}
}

// Unmount unmounts dir, lazily when it is busy (the mount leaves the
// namespace now, the kernel lets go once nobody uses it).
func Unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if err == nil || !mounted(dir) {
		return nil
	}
	if err2 := unix.Unmount(dir, unix.MNT_DETACH); err2 == nil || !mounted(dir) {
		return nil
	}
	if out, err3 := exec.Command("fusermount3", "-uz", dir).CombinedOutput(); err3 == nil || !mounted(dir) {
		return nil
	} else if len(out) > 0 {
		return fmt.Errorf("unmounting %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return fmt.Errorf("unmounting %s: %w", dir, err)
}

// Mounts lists the FUSE mount points of this mount namespace.
func Mounts() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// id parent maj:min root mountpoint opts ... - fstype source opts
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || len(f) < 5 {
			continue
		}
		if strings.HasPrefix(f[sep+1], "fuse") {
			out = append(out, unescape(f[4]))
		}
	}
	return out
}

func mounted(dir string) bool {
	for _, m := range Mounts() {
		if m == dir {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// A mountLease records a mount this process made, like the servers'
// leases (package server): should the process die without unmounting,
// the next Reap finds the lease of a dead owner and cleans up.
type mountLease struct {
	Dir        string `json:"dir"`
	PID        int    `json:"pid"`
	PIDStart   uint64 `json:"pid_start_time"`
	Owner      int    `json:"owner_pid"`
	OwnerStart uint64 `json:"owner_start_time"`
}

// LeaseDir is where mount leases live, beside the servers'.
func LeaseDir() string { return filepath.Join(filepath.Dir(server.LeaseDir()), "powerfs-mounts") }

func lease(dir string, pid int) (func(), error) {
	l := mountLease{Dir: dir, PID: pid, Owner: os.Getpid()}
	var err error
	if l.PIDStart, err = proc.StartTime(pid); err != nil {
		return nil, fmt.Errorf("leasing the powerfs mount: %w", err)
	}
	if l.OwnerStart, err = proc.StartTime(l.Owner); err != nil {
		return nil, fmt.Errorf("leasing the powerfs mount: %w", err)
	}
	b, _ := json.Marshal(l)
	if err := os.MkdirAll(LeaseDir(), 0o700); err != nil {
		return nil, fmt.Errorf("leasing the powerfs mount: %w", err)
	}
	path := filepath.Join(LeaseDir(), fmt.Sprintf("%d-%d.json", l.Owner, pid))
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("leasing the powerfs mount: %w", err)
	}
	return func() { _ = os.Remove(path) }, nil
}

func same(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s, err := proc.StartTime(pid)
	return err == nil && s == start
}

// Reap unmounts and stops the mounts whose storebench is gone, saying
// so on log, and removes their leases. Mounts of live processes are left
// alone.
func Reap(ctx context.Context, log io.Writer) error {
	ents, err := os.ReadDir(LeaseDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		path := filepath.Join(LeaseDir(), n)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var l mountLease
		if json.Unmarshal(b, &l) != nil {
			_ = os.Remove(path)
			continue
		}
		if same(l.Owner, l.OwnerStart) {
			continue
		}
		if mounted(l.Dir) {
			proc.Logf(log, "powerfs: unmounting %s, left by storebench pid %d, which is gone", l.Dir, l.Owner)
			if err := Unmount(l.Dir); err != nil {
				errs = append(errs, err)
			}
		}
		if same(l.PID, l.PIDStart) {
			if err := proc.StopPID(ctx, l.PID, syscall.SIGTERM, 5*time.Second); err != nil && same(l.PID, l.PIDStart) {
				errs = append(errs, fmt.Errorf("stopping the leftover powerfs server (pid %d): %w", l.PID, err))
				continue
			}
		}
		_ = os.Remove(path)
	}
	return errors.Join(errs...)
}
