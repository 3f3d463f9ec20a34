package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/server/proc"
)

// LockWait bounds how long `storebench server start|stop` waits for
// another storebench that is starting or stopping the same instance: the
// slowest start (a Cassandra cluster, Kafka's first start) fits in it.
const LockWait = 5 * time.Minute

// ErrBusy is returned by LockInstance when another process held the
// instance's lock for the whole wait.
var ErrBusy = errors.New("busy")

// LockInstance takes the lock of the instance name kept under dir: an
// exclusive flock on its directory dir/name (created if missing), which
// serialises every start and stop of that instance, across processes. It
// waits up to wait for another holder (saying so on log once), and gives
// up when ctx ends (Ctrl-C). The lock is released by unlock, or by the
// kernel when this process dies, however it dies. The directory itself
// must not be removed while locked (a new one would have a lock of its
// own): clear it with ClearInstanceDir.
func LockInstance(ctx context.Context, dir, name string, wait time.Duration, log io.Writer) (unlock func(), err error) {
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Opened close-on-exec (as Go opens every file): a server spawned
	// while we hold it does not inherit the lock.
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("%s: locking %s: %w", name, path, err)
		}
		holder := lockHolder(f)
		if !told {
			proc.Logf(log, "%s: %s is starting or stopping it; waiting up to %s (Ctrl-C to give up)", name, holder, wait)
			told = true
		}
		if !time.Now().Before(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s: %w: %s held %s for more than %s, starting or stopping it; try again once it is done", name, ErrBusy, holder, path, wait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%s: gave up waiting for %s, which holds %s: %w", name, holder, path, ctx.Err())
		case <-time.After(min(100*time.Millisecond, time.Until(deadline))):
		}
	}
}

// InstanceBusy reports whether another process holds the lock of the
// instance name under dir (it is being started or stopped), and by whom.
func InstanceBusy(dir, name string) (holder string, busy bool) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return "", false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return lockHolder(f), errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return "", false
}

// ClearInstanceDir empties the instance directory dir/name, keeping the
// directory (and so its lock).
func ClearInstanceDir(dir, name string) error {
	path := filepath.Join(dir, name)
	ents, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(path, e.Name())); err != nil {
			return fmt.Errorf("%s: clearing %s: %w", name, path, err)
		}
	}
	return nil
}

// lockHolder names the process holding a flock on f, from /proc/locks
// ("another storebench" when it cannot tell).
func lockHolder(f *os.File) string {
	const unknown = "another storebench"
	st, err := f.Stat()
	if err != nil {
		return unknown
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return unknown
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return unknown
	}
	defer locks.Close()
	// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fields[5], ":")
		if len(id) != 3 || id[2] != strconv.FormatUint(sys.Ino, 10) {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 && pid != os.Getpid() {
			return fmt.Sprintf("storebench pid %d", pid)
		}
	}
	return unknown
}
