package runner

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep sleeps d on a high-resolution kernel timer.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil) // EINTR just ends the sleep early: the caller loops
}
