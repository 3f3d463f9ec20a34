//go:build linux

// Package procstat samples the resource usage of a process (or a process
// tree) and of a directory, using Linux /proc and a few system calls. It is
// what each storage engine's worker process uses to measure itself, so
// sampling must be cheap and must never take the process down.
package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/prometheus/procfs"
)

// Snapshot is one sample of a process's (or a process tree's) resource
// counters. Counters are cumulative since process start; compare two
// snapshots to get rates (see CPUPercent).
type Snapshot struct {
	// At is when the sample was taken, used as the wall-clock base for rates.
	At time.Time `json:"at"`
	// RSSBytes is the current resident set size (VmRSS).
	RSSBytes int64 `json:"rss_bytes"`
	// PeakRSSBytes is the high-water mark of the resident set (VmHWM). For a
	// Tree it is the sum of each member's own peak, an upper bound of the
	// tree's true simultaneous peak.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// CPUUserNs and CPUSysNs are the CPU time spent in user and kernel mode,
	// at USER_HZ (10 ms) resolution.
	CPUUserNs int64 `json:"cpu_user_ns"`
	CPUSysNs  int64 `json:"cpu_sys_ns"`
	// ReadBytes and WriteBytes are the bytes the process caused to be fetched
	// from / sent to the storage layer (read_bytes, write_bytes of
	// /proc/<pid>/io); page-cache hits do not count. WriteBytes is charged when
	// a page is dirtied, not when it reaches the disk.
	ReadBytes  int64 `json:"read_bytes"`
	WriteBytes int64 `json:"write_bytes"`
	// ReadChars and WriteChars are the bytes passed to read- and write-like
	// system calls (rchar, wchar), whether or not they touched the disk.
	ReadChars  int64 `json:"read_chars"`
	WriteChars int64 `json:"write_chars"`
	// IOAvailable reports whether /proc/<pid>/io could be read. When false the
	// four I/O counters above are zero because they are unknown, not because
	// no I/O happened (the file is absent without CONFIG_TASK_IO_ACCOUNTING
	// and unreadable for other users' processes).
	IOAvailable bool `json:"io_available"`
	// Threads is the number of threads (summed over a Tree).
	Threads int `json:"threads"`
	// PSSBytes is the proportional set size summed over a process tree
	// (Tree only): pages shared by several processes of the tree — e.g.
	// PostgreSQL's shared_buffers, mapped by every backend — count once
	// in total, where summed RSS counts them once per process.
	PSSBytes int64 `json:"pss_bytes,omitempty"`
	// Processes is the number of processes the snapshot covers: 1 for Self
	// and Of, the size of the tree for Tree.
	Processes int `json:"processes"`
}

// Self samples the calling process.
func Self() (Snapshot, error) {
	pfs, err := defaultFS()
	if err != nil {
		return Snapshot{}, fmt.Errorf("procstat: %w", err)
	}
	p, err := pfs.Self()
	if err != nil {
		return Snapshot{}, fmt.Errorf("procstat: sampling self: %w", err)
	}
	s, _, err := sample(p)
	if err != nil {
		return Snapshot{}, fmt.Errorf("procstat: sampling self: %w", err)
	}
	return s, nil
}

// Of samples the process with the given pid.
func Of(pid int) (Snapshot, error) {
	if pid <= 0 {
		return Snapshot{}, fmt.Errorf("procstat: invalid pid %d", pid)
	}
	s, _, err := samplePID(pid)
	if err != nil {
		return Snapshot{}, fmt.Errorf("procstat: sampling pid %d: %w", pid, err)
	}
	return s, nil
}

// Tree samples the process pid and all of its live descendants and returns
// the sum; Processes says how many were found.
//
// Unlike Self and Of, Tree's CPU times also include the CPU time of
// descendants that have already exited and been reaped (cutime/cstime of
// each member). Without that, a server that forks short-lived workers would
// see its tree's CPU counters go backwards whenever a worker exits. The
// kernel already folds reaped children's I/O into the parent's
// /proc/<pid>/io, so the I/O counters are consistent with this as well.
func Tree(pid int) (Snapshot, error) {
	if pid <= 0 {
		return Snapshot{}, fmt.Errorf("procstat: invalid pid %d", pid)
	}
	members, err := descendants(pid)
	if err != nil {
		return Snapshot{}, fmt.Errorf("procstat: listing process tree of pid %d: %w", pid, err)
	}
	var total Snapshot
	total.IOAvailable = true
	for _, p := range members {
		s, st, err := samplePID(p)
		if err != nil {
			if p != pid && errors.Is(err, fs.ErrNotExist) {
				// A descendant exited between listing and sampling; its
				// counters have moved (or will move) to its parent.
				continue
			}
			return Snapshot{}, fmt.Errorf("procstat: sampling pid %d in tree of %d: %w", p, pid, err)
		}
		if total.At.IsZero() {
			total.At = s.At
		}
		total.RSSBytes += s.RSSBytes
		total.PeakRSSBytes += s.PeakRSSBytes
		total.PSSBytes += pss(p)
		total.CPUUserNs += s.CPUUserNs + st.ChildUserNs
		total.CPUSysNs += s.CPUSysNs + st.ChildSysNs
		total.ReadBytes += s.ReadBytes
		total.WriteBytes += s.WriteBytes
		total.ReadChars += s.ReadChars
		total.WriteChars += s.WriteChars
		// One unreadable member makes the I/O sum incomplete, so the sum is
		// only marked available when every member's counters were read.
		total.IOAvailable = total.IOAvailable && s.IOAvailable
		total.Threads += s.Threads
		total.Processes++
	}
	return total, nil
}

// CPUPercent returns the CPU utilisation between two snapshots of the same
// process (or tree): (user+sys delta) / wall delta × 100, so 100 means one
// core fully busy and 200 two cores. It returns 0 when b is not later than a,
// because no meaningful rate exists then.
func CPUPercent(a, b Snapshot) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	cpu := (b.CPUUserNs - a.CPUUserNs) + (b.CPUSysNs - a.CPUSysNs)
	return float64(cpu) / float64(wall.Nanoseconds()) * 100
}

// samplePID samples the process pid.
func samplePID(pid int) (Snapshot, Stat, error) {
	pfs, err := defaultFS()
	if err != nil {
		return Snapshot{}, Stat{}, err
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return Snapshot{}, Stat{}, err
	}
	return sample(p)
}

// sample reads one process's stat, status and io files.
func sample(p procfs.Proc) (Snapshot, Stat, error) {
	s := Snapshot{At: time.Now(), Processes: 1}

	st, err := readStat(p)
	if err != nil {
		return Snapshot{}, Stat{}, err
	}
	s.CPUUserNs, s.CPUSysNs, s.Threads = st.UserNs, st.SysNs, st.Threads

	// Kernel threads and zombies have no Vm* lines; their memory figures
	// stay zero, which is accurate.
	status, err := p.NewStatus()
	if err != nil {
		return Snapshot{}, Stat{}, fmt.Errorf("reading status: %w", err)
	}
	s.RSSBytes, s.PeakRSSBytes = int64(status.VmRSS), int64(status.VmHWM)

	// I/O accounting is optional: the file may be missing from the kernel or
	// unreadable (ptrace access check), and memory/CPU figures are still
	// worth having, so failure here only clears IOAvailable.
	if io, err := p.IO(); err == nil {
		s.ReadChars, s.WriteChars = int64(io.RChar), int64(io.WChar)
		s.ReadBytes, s.WriteBytes = int64(io.ReadBytes), int64(io.WriteBytes)
		s.IOAvailable = true
	}
	return s, st, nil
}

// descendants returns root followed by every live process whose parent chain
// leads to root, found by reading the ppid of every process in /proc (the
// kernel offers no cheaper child enumeration that covers all threads'
// children).
func descendants(root int) ([]int, error) {
	pfs, err := defaultFS()
	if err != nil {
		return nil, err
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	children := make(map[int][]int)
	for _, p := range procs {
		st, err := readStat(p)
		if err != nil {
			continue // exited since the directory was listed
		}
		children[st.PPID] = append(children[st.PPID], p.PID)
	}
	// The visited set guards against a ppid cycle, which a pid reused while
	// /proc was being read could in principle fake.
	out := []int{root}
	seen := map[int]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// Descendants returns every live process whose parent chain leads to
// root (root itself left out), from one reading of /proc.
func Descendants(root int) ([]int, error) {
	all, err := descendants(root)
	if err != nil {
		return nil, err
	}
	return all[1:], nil
}

// pss reads the proportional set size of a process from smaps_rollup
// (0 if unreadable).
func pss(pid int) int64 {
	pfs, err := defaultFS()
	if err != nil {
		return 0
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return 0
	}
	r, err := p.ProcSMapsRollup()
	if err != nil {
		return 0
	}
	return int64(r.Pss)
}
