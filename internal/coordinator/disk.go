package coordinator

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"storebench/internal/study"
)

// fsSpace is the free space of the filesystem holding path and where that
// filesystem is mounted.
type fsSpace struct {
	Free  int64 // bytes available to an unprivileged writer
	Size  int64
	Mount string
}

func statSpace(path string) (fsSpace, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return fsSpace{}, err
	}
	return fsSpace{Free: int64(st.Bavail) * st.Bsize, Size: int64(st.Blocks) * st.Bsize, Mount: mountOf(path)}, nil
}

// mountOf walks up from path while the device stays the same: the last
// directory on path's device is its mount point.
func mountOf(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	dev := func(p string) (uint64, bool) {
		fi, err := os.Stat(p)
		if err != nil {
			return 0, false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return 0, false
		}
		return st.Dev, true
	}
	d, ok := dev(p)
	if !ok {
		return p
	}
	for p != "/" {
		up := filepath.Dir(p)
		if ud, ok := dev(up); !ok || ud != d {
			return p
		}
		p = up
	}
	return "/"
}

// NoSpaceError is why a step was stopped: its filesystem is full.
type NoSpaceError struct {
	Free  int64
	Mount string
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("no space left on device (%d bytes free on %s)", e.Free, e.Mount)
}

// Disk-full detection: a step is stopped when the data filesystem has less
// than diskFullBelow bytes free and its progress counter has not moved for
// diskStallAfter. Engines that hit a full disk tend to stall in a write
// stall rather than fail, and would otherwise hang the run.
var (
	diskFullBelow  int64 = 1 << 20
	diskStallAfter       = 3 * time.Second
	diskPoll             = 250 * time.Millisecond
)

// watchDisk runs beside one step: it cancels the step with a
// *NoSpaceError when space() says the filesystem is full and progress
// has not moved for diskStallAfter. stop ends the watch; it returns when
// the watching goroutine has.
func watchDisk(ctx context.Context, cancel context.CancelCauseFunc, space func() (fsSpace, error), progress *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(diskPoll)
		defer t.Stop()
		last, since := progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if p := progress.Load(); p != last {
				last, since = p, time.Now()
				continue
			}
			sp, err := space()
			if err != nil || sp.Free >= diskFullBelow {
				continue
			}
			if time.Since(since) >= diskStallAfter {
				cancel(&NoSpaceError{Free: sp.Free, Mount: sp.Mount})
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// estimateDisk is the disk a fresh step of n items will take: the last
// measured footprint (lastUsed bytes at lastN items) scaled to n, or, with
// nothing measured yet, n times the workload's least bytes per item
// (0: unknown). It is a float64 so that large ladders (1e9 items of
// kilobytes) cannot overflow; callers compare it with float64 bounds.
func estimateDisk(lastUsed, lastN, n, itemBytes int64) float64 {
	if lastUsed > 0 && lastN > 0 {
		return float64(lastUsed) / float64(lastN) * float64(n)
	}
	if itemBytes > 0 {
		return float64(itemBytes) * float64(n)
	}
	return 0
}

// checkFits refuses a fresh step whose estimated disk exceeds the study's
// disk limit or the free space of the data filesystem (plus what the
// current data, dropped before a fresh step, frees). It says why, or
// returns "".
func checkFits(est float64, limit int64, sp *fsSpace, current, n int64) string {
	if est <= 0 {
		return ""
	}
	if limit > 0 && est > float64(limit) {
		return fmt.Sprintf("disk limit %s: N=%s would need ~%s", human(limit), study.FormatCount(n), humanF(est))
	}
	if sp != nil && est > float64(sp.Free)+float64(current) {
		return fmt.Sprintf("not enough disk: N=%s would need ~%s, %s free on %s (not started)", study.FormatCount(n), humanF(est), human(sp.Free+current), sp.Mount)
	}
	return ""
}

// humanF is human for estimates that may exceed int64.
func humanF(b float64) string {
	if b >= math.MaxInt64/2 {
		return fmt.Sprintf("%.3g B", b)
	}
	return human(int64(b))
}
