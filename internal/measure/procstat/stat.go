package procstat

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// nsPerTick converts the clock-tick counters of /proc/<pid>/stat to
// nanoseconds. The kernel always reports those counters in USER_HZ, which is
// fixed at 100 on Linux regardless of the kernel's internal CONFIG_HZ (the
// kernel rescales for the /proc ABI), so a constant is correct here and avoids
// depending on sysconf(_SC_CLK_TCK), which Go cannot call without cgo.
// (procfs's CPUTime assumes the same 100.)
const nsPerTick = int64(time.Second) / 100

// Stat is what /proc/<pid>/stat says of one process: the figures the
// samplers here, the server manager (liveness, start time) and the
// workloads that time a server's CPU need. It is read through
// github.com/prometheus/procfs, the one reader of /proc/<pid> files in
// storebench.
type Stat struct {
	// State is the state letter (R, S, D, Z, X, ...).
	State string
	// PPID is the parent's pid.
	PPID int
	// UserNs and SysNs are the process's own CPU time in user and kernel
	// mode; ChildUserNs and ChildSysNs those of its reaped children. All
	// at USER_HZ (10 ms) resolution.
	UserNs, SysNs           int64
	ChildUserNs, ChildSysNs int64
	// Threads is the number of threads.
	Threads int
	// StartTicks is the start time in clock ticks since boot: with the pid
	// it identifies a process, since a reused pid has another start time.
	StartTicks uint64
}

// CPU is the process's own user and system CPU time so far.
func (s Stat) CPU() time.Duration { return time.Duration(s.UserNs + s.SysNs) }

// defaultFS is /proc, opened once.
var defaultFS = sync.OnceValues(procfs.NewDefaultFS)

// StatOf reads /proc/<pid>/stat. A process that does not exist gives an
// error that matches fs.ErrNotExist.
func StatOf(pid int) (Stat, error) {
	pfs, err := defaultFS()
	if err != nil {
		return Stat{}, fmt.Errorf("procstat: %w", err)
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return Stat{}, fmt.Errorf("procstat: pid %d: %w", pid, err)
	}
	st, err := readStat(p)
	if err != nil {
		return Stat{}, fmt.Errorf("procstat: pid %d: %w", pid, err)
	}
	return st, nil
}

// readStat reads and converts one process's stat file.
func readStat(p procfs.Proc) (Stat, error) {
	ps, err := p.Stat()
	if err != nil {
		return Stat{}, fmt.Errorf("reading stat: %w", err)
	}
	return Stat{
		State:       ps.State,
		PPID:        ps.PPID,
		UserNs:      int64(ps.UTime) * nsPerTick,
		SysNs:       int64(ps.STime) * nsPerTick,
		ChildUserNs: int64(ps.CUTime) * nsPerTick,
		ChildSysNs:  int64(ps.CSTime) * nsPerTick,
		Threads:     ps.NumThreads,
		StartTicks:  ps.Starttime,
	}, nil
}
