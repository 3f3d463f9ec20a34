// Package lazyfs mounts LazyFS (a FUSE file system whose own page cache
// keeps what was not fsynced, and drops it when told) over a directory,
// so that a crash test can cut the power without rebooting: the writes an
// engine acknowledged without fsyncing them vanish on ClearCache.
//
// A mount never outlives its storebench: LazyFS is started with SIGTERM
// as its parent-death signal (on it, the daemon unmounts before it
// exits), Close unmounts and stops it (lazy unmount as the fallback), and
// every mount is recorded in a lease; Reap, run before each new mount,
// unmounts and stops what a dead storebench left (a daemon that died hard
// leaves a dead mount: "transport endpoint is not connected").
package lazyfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/home"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Install is the command that installs LazyFS.
const Install = "scripts/install-lazyfs.sh"

// MountTimeout bounds the wait for a mount to appear and for a cache
// clear to be confirmed.
const MountTimeout = 30 * time.Second

// Home is where install-lazyfs.sh caches its builds, one folder per
// source tarball's sha256.
func Home() string { return home.Sub("lazyfs") }

// Binary is the installed lazyfs executable ($STOREBENCH_LAZYFS, else the
// newest complete build under Home).
func Binary() (string, error) {
	if p := os.Getenv("STOREBENCH_LAZYFS"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("STOREBENCH_LAZYFS: %w", err)
		}
		return p, nil
	}
	ents, _ := os.ReadDir(Home())
	var best string
	var bestT time.Time
	for _, e := range ents {
		if !e.IsDir() || strings.Contains(e.Name(), ".tmp.") {
			continue
		}
		p := filepath.Join(Home(), e.Name(), "lazyfs")
		fi, err := os.Stat(p)
		if err != nil || fi.Mode()&0o111 == 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(Home(), e.Name(), "libpcache.so.0")); err != nil {
			continue
		}
		if best == "" || fi.ModTime().After(bestT) {
			best, bestT = p, fi.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("LazyFS is not installed under %s (run %s)", Home(), Install)
	}
	return best, nil
}

// Unavailable says why crash tests with power loss cannot run here ("":
// they can): no /dev/fuse, no fusermount3, not root, LazyFS not built.
func Unavailable() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse (FUSE is not available in this kernel or container)"
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return "fusermount3 not found (apt-get install fuse3, or run " + Install + ")"
	}
	if os.Geteuid() != 0 {
		return "not root: mounting LazyFS with allow_other over an engine's data needs root"
	}
	if _, err := Binary(); err != nil {
		return err.Error()
	}
	return ""
}

// Mount is one LazyFS mount: Dir is where the engine reads and writes;
// what was fsynced lands in Root.
type Mount struct {
	// Dir is the mount point, Root the directory below it.
	Dir, Root string
	base      string
	bin       string
	cfg       string
	fifo      string
	done      *os.File // the completion FIFO, open for reading
	cmd       *exec.Cmd
	exited    chan struct{}
	release   func()
	unlease   func()
	log       string
	// stopping: we are unmounting or killing it; crashed: it exited
	// while neither.
	stopping, crashed atomic.Bool
}

// DefaultCacheMiB sizes LazyFS's page cache, which holds every write not
// yet fsynced (it allocates it at mount: 1 GiB takes seconds to mount on
// 2 cores).
const DefaultCacheMiB = 256

// New mounts a fresh LazyFS in base (created; root/ holds the data,
// mnt/ is the mount point) with a page cache of cacheMiB (0: the
// default) and waits until the mount is there. Leftover mounts of dead
// storebench processes are cleaned up first.
func New(ctx context.Context, base string, cacheMiB int) (*Mount, error) {
	if cacheMiB <= 0 {
		cacheMiB = DefaultCacheMiB
	}
	cacheSize := fmt.Sprintf("%dmb", cacheMiB)
	_ = Reap(ctx, io.Discard)
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	base, err = filepath.Abs(base)
	if err != nil {
		return nil, err
	}
	m := &Mount{Dir: filepath.Join(base, "mnt"), Root: filepath.Join(base, "root"), base: base, bin: bin,
		cfg: filepath.Join(base, "lazyfs.toml"), fifo: filepath.Join(base, "faults.fifo"), log: filepath.Join(base, "lazyfs.log")}
	for _, d := range []string{m.Dir, m.Root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("lazyfs: %w", err)
		}
	}
	doneFIFO := filepath.Join(base, "done.fifo")
	cfg := fmt.Sprintf("[faults]\nfifo_path=%q\nfifo_path_completed=%q\n[cache]\napply_eviction=false\n[cache.simple]\ncustom_size=%q\nblocks_per_page=1\n[filesystem]\nlog_all_operations=false\nlogfile=\"\"\n",
		m.fifo, doneFIFO, cacheSize)
	if err := os.WriteFile(m.cfg, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	for _, f := range []string{m.fifo, doneFIFO} {
		if err := unix.Mkfifo(f, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lazyfs: fifo %s: %w", f, err)
		}
	}
	// Read-write so that the open does not wait for LazyFS to open its
	// end; LazyFS's fault thread waits until a reader has it open.
	if m.done, err = os.OpenFile(doneFIFO, os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	if err := m.mount(ctx); err != nil {
		m.done.Close()
		return nil, err
	}
	return m, nil
}

func (m *Mount) mount(ctx context.Context) error {
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(m.bin, m.Dir, "--config-path", m.cfg,
		"-o", "allow_other", "-o", "modules=subdir", "-o", "subdir="+m.Root, "-f")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Dir(m.bin))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := proc.StartTiedSignal(cmd, syscall.SIGTERM)
	if err != nil {
		return fmt.Errorf("starting lazyfs: %w", err)
	}
	m.cmd, m.release, m.exited = cmd, release, make(chan struct{})
	m.stopping.Store(false)
	exited := m.exited
	go func() {
		_ = cmd.Wait()
		release()
		// (Its exit status tells nothing: LazyFS 0.3.0 aborts, SIGABRT,
		// even after a clean unmount.)
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
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if mounted(m.Dir) {
			return nil
		}
		select {
		case <-m.exited:
			m.kill()
			return fmt.Errorf("lazyfs exited before mounting %s: %s", m.Dir, proc.LogTail(m.log, proc.TailLines))
		case <-ctx.Done():
			m.kill()
			return fmt.Errorf("lazyfs: %s not mounted after %s: %w", m.Dir, MountTimeout, ctx.Err())
		case <-t.C:
		}
	}
}

// Died says whether the LazyFS process exited while mounted (it is a
// research prototype: it has crashed under load), with its log's tail.
func (m *Mount) Died() (bool, string) {
	died := m.crashed.Load()
	if !died && m.cmd != nil {
		// Gone, not yet reaped: the mount answers "not connected".
		_, err := os.Stat(m.Dir)
		died = errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED)
	}
	if !died {
		return false, ""
	}
	return true, proc.LogTail(m.log, proc.TailLines)
}

// ClearCache drops every write LazyFS holds that was not fsynced (the
// power failure) and waits until LazyFS says it is done.
func (m *Mount) ClearCache(ctx context.Context) error {
	f, err := os.OpenFile(m.fifo, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	_, err = f.WriteString("lazyfs::clear-cache\n")
	f.Close()
	if err != nil {
		return fmt.Errorf("lazyfs: clear-cache: %w", err)
	}
	_ = m.done.SetReadDeadline(time.Now().Add(MountTimeout))
	line, err := bufio.NewReader(m.done).ReadString('\n')
	if err != nil {
		return fmt.Errorf("lazyfs: waiting for clear-cache: %w", err)
	}
	if !strings.Contains(line, "clear-cache") {
		return fmt.Errorf("lazyfs: unexpected answer %q to clear-cache", line)
	}
	return nil
}

// Remount unmounts and mounts again (a reboot after the power failure:
// nothing of the old mount's cache survives).
func (m *Mount) Remount(ctx context.Context) error {
	if err := m.unmount(); err != nil {
		return err
	}
	return m.mount(ctx)
}

// Close unmounts and stops LazyFS; the directories stay.
func (m *Mount) Close() error {
	err := m.unmount()
	if m.done != nil {
		m.done.Close()
	}
	return err
}

// unmount unmounts (lazily when busy), waits for LazyFS to exit (killing
// it after a while) and drops the lease.
func (m *Mount) unmount() error {
	if m.cmd == nil {
		return nil
	}
	m.stopping.Store(true)
	var err error
	if mounted(m.Dir) {
		err = Unmount(m.Dir)
	}
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(5 * time.Second):
			m.kill()
		}
	}
	if m.unlease != nil {
		m.unlease()
	}
	m.cmd = nil
	return err
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

// Unmount unmounts dir: fusermount3 -u, else a lazy unmount (the mount
// leaves the namespace now, the kernel lets go once nobody uses it).
func Unmount(dir string) error {
	out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput()
	if err == nil || !mounted(dir) {
		return nil
	}
	if out2, err2 := exec.Command("fusermount3", "-uz", dir).CombinedOutput(); err2 == nil || !mounted(dir) {
		return nil
	} else {
		out = append(out, out2...)
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err == nil || !mounted(dir) {
		return nil
	}
	return fmt.Errorf("unmounting %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
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
func LeaseDir() string { return filepath.Join(filepath.Dir(server.LeaseDir()), "lazyfs-mounts") }

func lease(dir string, pid int) (func(), error) {
	l := mountLease{Dir: dir, PID: pid, Owner: os.Getpid()}
	var err error
	if l.PIDStart, err = proc.StartTime(pid); err != nil {
		return nil, fmt.Errorf("leasing the lazyfs mount: %w", err)
	}
	if l.OwnerStart, err = proc.StartTime(l.Owner); err != nil {
		return nil, fmt.Errorf("leasing the lazyfs mount: %w", err)
	}
	b, _ := json.Marshal(l)
	if err := os.MkdirAll(LeaseDir(), 0o700); err != nil {
		return nil, fmt.Errorf("leasing the lazyfs mount: %w", err)
	}
	path := filepath.Join(LeaseDir(), fmt.Sprintf("%d-%d.json", l.Owner, pid))
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("leasing the lazyfs mount: %w", err)
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

// Reap unmounts and stops the LazyFS mounts whose storebench is gone,
// saying so on log, and removes their leases. Mounts of live processes
// are left alone.
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
			proc.Logf(log, "lazyfs: unmounting %s, left by storebench pid %d, which is gone", l.Dir, l.Owner)
			if err := Unmount(l.Dir); err != nil {
				errs = append(errs, err)
			}
		}
		if same(l.PID, l.PIDStart) {
			if err := proc.StopPID(ctx, l.PID, syscall.SIGTERM, 5*time.Second); err != nil && same(l.PID, l.PIDStart) {
				errs = append(errs, fmt.Errorf("stopping the leftover lazyfs (pid %d): %w", l.PID, err))
				continue
			}
		}
		_ = os.Remove(path)
	}
	return errors.Join(errs...)
}
