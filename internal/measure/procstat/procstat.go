//go:build linux

// Package procstat samples the resource usage of a process (or a process
// tree) and of a directory, using Linux /proc and a few system calls. It is
// what each storage engine's worker process uses to measure itself, so
// sampling must be cheap and must never take the process down.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// nsPerTick converts the clock-tick counters of /proc/<pid>/stat to
// nanoseconds. The kernel always reports those counters in USER_HZ, which is
// fixed at 100 on Linux regardless of the kernel's internal CONFIG_HZ (the
// kernel rescales for the /proc ABI), so a constant is correct here and avoids
// depending on sysconf(_SC_CLK_TCK), which Go cannot call without cgo.
const nsPerTick = int64(time.Second) / 100

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
	s, _, err := sample("/proc/self")
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
	s, _, err := sample(procDir(pid))
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
		s, st, err := sample(procDir(p))
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
		total.PSSBytes += pss(procDir(p))
		total.CPUUserNs += s.CPUUserNs + st.childUserNs
		total.CPUSysNs += s.CPUSysNs + st.childSysNs
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

func procDir(pid int) string {
	return "/proc/" + strconv.Itoa(pid)
}

// statFields holds what sample reads from /proc/<pid>/stat beyond the
// Snapshot itself.
type statFields struct {
	ppid        int
	userNs      int64
	sysNs       int64
	childUserNs int64
	childSysNs  int64
	threads     int
}

// sample reads one process's status, stat and io files under dir (a
// /proc/<pid> or /proc/self directory).
func sample(dir string) (Snapshot, statFields, error) {
	s := Snapshot{At: time.Now(), Processes: 1}

	statBuf, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return Snapshot{}, statFields{}, fmt.Errorf("reading stat: %w", err)
	}
	st, err := parseStat(statBuf)
	if err != nil {
		return Snapshot{}, statFields{}, fmt.Errorf("parsing %s/stat: %w", dir, err)
	}
	s.CPUUserNs, s.CPUSysNs, s.Threads = st.userNs, st.sysNs, st.threads

	statusBuf, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Snapshot{}, statFields{}, fmt.Errorf("reading status: %w", err)
	}
	if err := parseStatus(statusBuf, &s); err != nil {
		return Snapshot{}, statFields{}, fmt.Errorf("parsing %s/status: %w", dir, err)
	}

	// I/O accounting is optional: the file may be missing from the kernel or
	// unreadable (ptrace access check), and memory/CPU figures are still
	// worth having, so failure here only clears IOAvailable.
	if ioBuf, err := os.ReadFile(dir + "/io"); err == nil {
		if parseIO(ioBuf, &s) == nil {
			s.IOAvailable = true
		}
	}
	return s, st, nil
}

// parseStat extracts the fields of /proc/<pid>/stat that procstat needs. The
// command name (field 2) is in parentheses and may itself contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (statFields, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return statFields{}, errors.New("no ')' after command name")
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	const (
		ppidField    = 4
		utimeField   = 14
		stimeField   = 15
		cutimeField  = 16
		cstimeField  = 17
		threadsField = 20
	)
	if len(f) < threadsField-2 {
		return statFields{}, fmt.Errorf("only %d fields after command name", len(f))
	}
	num := func(field int) (int64, error) {
		v, err := strconv.ParseInt(string(f[field-3]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d: %w", field, err)
		}
		return v, nil
	}
	var st statFields
	var v [6]int64
	for i, field := range []int{ppidField, utimeField, stimeField, cutimeField, cstimeField, threadsField} {
		n, err := num(field)
		if err != nil {
			return statFields{}, err
		}
		v[i] = n
	}
	st.ppid = int(v[0])
	st.userNs = v[1] * nsPerTick
	st.sysNs = v[2] * nsPerTick
	st.childUserNs = v[3] * nsPerTick
	st.childSysNs = v[4] * nsPerTick
	st.threads = int(v[5])
	return st, nil
}

// parseStatus fills RSSBytes, PeakRSSBytes and Threads from
// /proc/<pid>/status. Kernel threads and zombies have no Vm* lines; their
// memory figures stay zero, which is accurate.
func parseStatus(b []byte, s *Snapshot) error {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		switch string(key) {
		case "VmRSS", "VmHWM":
			kb, err := parseKB(val)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if string(key) == "VmRSS" {
				s.RSSBytes = kb
			} else {
				s.PeakRSSBytes = kb
			}
		case "Threads":
			n, err := strconv.Atoi(string(bytes.TrimSpace(val)))
			if err != nil {
				return fmt.Errorf("Threads: %w", err)
			}
			s.Threads = n
		}
	}
	return nil
}

// parseKB parses a status value such as "   1234 kB" into bytes.
func parseKB(val []byte) (int64, error) {
	f := bytes.Fields(val)
	if len(f) == 0 {
		return 0, errors.New("empty value")
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, err
	}
	if len(f) > 1 && string(f[1]) != "kB" {
		return 0, fmt.Errorf("unexpected unit %q", f[1])
	}
	return n * 1024, nil
}

// parseIO fills the I/O counters from /proc/<pid>/io.
func parseIO(b []byte, s *Snapshot) error {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "rchar":
			dst = &s.ReadChars
		case "wchar":
			dst = &s.WriteChars
		case "read_bytes":
			dst = &s.ReadBytes
		case "write_bytes":
			dst = &s.WriteBytes
		default:
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(val)), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		*dst = n
	}
	return nil
}

// descendants returns root followed by every live process whose parent chain
// leads to root, found by reading the ppid of every process in /proc (the
// kernel offers no cheaper child enumeration that covers all threads'
// children).
func descendants(root int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue // not a process directory
		}
		b, err := os.ReadFile(procDir(pid) + "/stat")
		if err != nil {
			continue // exited since the directory was listed
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		children[st.ppid] = append(children[st.ppid], pid)
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

// pss reads the proportional set size of a process from smaps_rollup
// (0 if unreadable).
func pss(dir string) int64 {
	b, err := os.ReadFile(dir + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Pss:")); ok {
			kb, err := parseKB(rest)
			if err != nil {
				return 0
			}
			return kb
		}
	}
	return 0
}
