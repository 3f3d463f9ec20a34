package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"storebench/internal/measure/procstat"
)

// Alive reports whether a process with that PID exists and is not a
// zombie: procstat.Alive, which package results uses too.
func Alive(pid int) bool { return procstat.Alive(pid) }

// StartTime is the process's start time in clock ticks since boot
// (procstat.StartTime), which with its PID identifies it.
func StartTime(pid int) (uint64, error) { return procstat.StartTime(pid) }

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
	pfs, err := procfs.NewDefaultFS()
	if err != nil {
		return fmt.Errorf("reading /proc: %w", err)
	}
	tcp, err := pfs.NetTCP()
	if err != nil {
		return fmt.Errorf("reading /proc/net/tcp: %w", err)
	}
	// The sockets listening on 127.0.0.1:port or 0.0.0.0:port, as the
	// targets of the descriptors that hold them.
	inodes := map[string]bool{}
	for _, l := range tcp {
		const listen = 0x0A
		if l.St == listen && l.LocalPort == uint64(port) && (l.LocalAddr.Equal(net.IPv4(127, 0, 0, 1)) || l.LocalAddr.Equal(net.IPv4zero)) {
			inodes["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return fmt.Errorf("nothing listens on port %d yet", port)
	}
	p, err := pfs.Proc(pid)
	var fds []string
	if err == nil {
		fds, err = p.FileDescriptorTargets()
	}
	if err != nil {
		return fmt.Errorf("reading the descriptors of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		if inodes[fd] {
			return nil
		}
	}
	return fmt.Errorf("port %d is held by another process, not by pid %d", port, pid)
}
