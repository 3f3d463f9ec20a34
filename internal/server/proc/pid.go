package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"storebench/internal/measure/procstat"
)

// Alive reports whether a process with that PID exists and is not a
// zombie (a server left by an earlier `storebench server start` is
// reparented to PID 1, which in a container may never reap it).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := procstat.StatOf(pid)
	if err != nil {
		// Gone between the two checks, or no /proc: trust kill(0).
		return !errors.Is(err, fs.ErrNotExist)
	}
	return st.State != "Z" && st.State != "X"
}

// StartTime is the process's start time in clock ticks since boot, which
// with its PID identifies it: a PID reused by another process has another
// start time.
func StartTime(pid int) (uint64, error) {
	st, err := procstat.StatOf(pid)
	return st.StartTicks, err
}

// StopPID stops a process we may not be the parent of (one started by an
// earlier storebench invocation): sig (SIGTERM when 0) to it, a poll every
// 50 ms until it is gone, and after timeout (or when ctx ends) SIGKILL to
// its process group if it leads one, else to it alone. A process already
// gone is not an error; one that had to be killed is.
func StopPID(ctx context.Context, pid int, sig syscall.Signal, timeout time.Duration) error {
	if pid <= 0 {
		return fmt.Errorf("stopping pid %d: not a process id", pid)
	}
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	if !Alive(pid) {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stopping pid %d: %w", pid, err)
	}
	if waitGone(ctx, pid, timeout) {
		return nil
	}
	why := fmt.Sprintf("pid %d did not stop within %s after %s", pid, timeout, signalName(sig))
	if ctx.Err() != nil {
		why = fmt.Sprintf("stopping pid %d interrupted (%v) after %s", pid, ctx.Err(), signalName(sig))
	}
	target := pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		target = -pid // it leads its group (proc.Start made it so): kill the tree
	}
	_ = syscall.Kill(target, syscall.SIGKILL)
	if !waitGone(context.Background(), pid, killWait) {
		return fmt.Errorf("%s, and it survived SIGKILL for %s", why, killWait)
	}
	return fmt.Errorf("%s: killed", why)
}

// waitGone polls until pid is dead; false if timeout or ctx ends first.
func waitGone(ctx context.Context, pid int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if !Alive(pid) {
			return true
		}
		select {
		case <-ctx.Done():
			return !Alive(pid)
		case <-deadline.C:
			return !Alive(pid)
		case <-tick.C:
		}
	}
}

// Listening returns nil when process pid holds a TCP socket listening on
// 127.0.0.1:port (or on any address). Readiness probes check it first so
// that another server already on the port, answering in its place, is not
// taken for ours.
func Listening(pid, port int) error {
	inodes, err := listenInodes(port)
	if err != nil {
		return err
	}
	if len(inodes) == 0 {
		return fmt.Errorf("nothing listens on port %d yet", port)
	}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return fmt.Errorf("reading the descriptors of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return nil
		}
	}
	return fmt.Errorf("port %d is held by another process, not by pid %d", port, pid)
}

// listenInodes returns the socket inodes listening on 127.0.0.1:port or
// 0.0.0.0:port, from /proc/net/tcp.
func listenInodes(port int) (map[string]bool, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("reading /proc/net/tcp: %w", err)
	}
	suffix := fmt.Sprintf(":%04X", port)
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
			continue
		}
		if local := f[1]; strings.HasSuffix(local, suffix) &&
			(strings.HasPrefix(local, "0100007F:") || strings.HasPrefix(local, "00000000:")) {
			out[f[9]] = true
		}
	}
	return out, nil
}
