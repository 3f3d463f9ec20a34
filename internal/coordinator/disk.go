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

// footprint is the disk a target took at one data size.
type footprint struct{ n, bytes int64 }

// estimateDisk is the disk a fresh step of n items will take: least, n
// times the workload's least bytes per item (0: unknown), which the data
// cannot take less of; scaled, the last footprint scaled to n by the
// bytes per item between the last two sizes measured (a single size
// cannot tell an engine's fixed overhead, its preallocated log and
// manifest, from per-item bytes), never below least. Both are float64 so
// that large ladders (1e9 items of kilobytes) cannot overflow int64.
func estimateDisk(measured []footprint, n, itemBytes int64) (least, scaled float64) {
	least = float64(itemBytes) * float64(n)
	scaled = least
	if k := len(measured); k >= 2 {
		a, b := measured[k-2], measured[k-1]
		if b.n > a.n && b.bytes > a.bytes && n > b.n {
			perItem := (float64(b.bytes) - float64(a.bytes)) / (float64(b.n) - float64(a.n))
			scaled = max(scaled, float64(b.bytes)+perItem*(float64(n)-float64(b.n)))
		}
	}
	return least, scaled
}

// record adds a step's footprint at size n: the largest at each size.
func record(measured []footprint, n, bytes int64) []footprint {
	if k := len(measured); k > 0 && measured[k-1].n == n {
		measured[k-1].bytes = max(measured[k-1].bytes, bytes)
		return measured
	}
	return append(measured, footprint{n, bytes})
}

// checkFits decides on a fresh step of n items before it starts. refuse
// says why it is not started: the scaled estimate exceeds the study's
// disk limit, or even the least it needs exceeds the free space of the
// data filesystem (plus what the current data, dropped before a fresh
// step, frees). warn says that the scaled estimate may not fit: the step
// starts, and the disk watch stops it if the disk fills.
func checkFits(least, scaled float64, limit int64, sp *fsSpace, current, n int64) (refuse, warn string) {
	if limit > 0 && scaled > float64(limit) {
		return fmt.Sprintf("disk limit %s: N=%s would need ~%s", human(limit), study.FormatCount(n), humanF(scaled)), ""
	}
	if sp == nil {
		return "", ""
	}
	room := float64(sp.Free) + float64(current)
	if least > room {
		return fmt.Sprintf("not enough disk: N=%s needs at least %s, %s free on %s (not started)", study.FormatCount(n), humanF(least), human(sp.Free+current), sp.Mount), ""
	}
	if scaled > room {
		return "", fmt.Sprintf("N=%s may need ~%s (scaled from the sizes before), %s free on %s: a full disk will stop it", study.FormatCount(n), humanF(scaled), human(sp.Free+current), sp.Mount)
	}
	return "", ""
}

// humanF is human for estimates that may exceed int64.
func humanF(b float64) string {
	if b >= math.MaxInt64/2 {
		return fmt.Sprintf("%.3g B", b)
	}
	return human(int64(b))
}

// Unstartable says why a plan would measure nothing at all ("" when it
// would measure something): its first fresh step needs, at the least,
// more disk than the study's limits.disk, and the fits check before each
// fresh step would stop every target there. Such a run is the command
// line's (or the study's) to fix before any results directory is made.
func (p *Plan) Unstartable(s *study.Study) string {
	limit := int64(s.Limits.Disk)
	if limit <= 0 {
		return ""
	}
	for _, st := range p.Steps {
		if !st.Fresh {
			continue
		}
		least, _ := estimateDisk(nil, st.N, st.ItemBytes)
		if refuse, _ := checkFits(least, least, limit, nil, 0, st.N); refuse != "" {
			return refuse + ", at its first step: nothing would be measured"
		}
		return ""
	}
	return ""
}
