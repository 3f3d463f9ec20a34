package procstat

import (
	"errors"
	"io/fs"
	"syscall"
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
	st, err := StatOf(pid)
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
	st, err := StatOf(pid)
	return st.StartTicks, err
}
