//go:build linux

package machine

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"storebench/internal/measure/procstat"
)

// ErrNotEnforceable is matched (errors.Is) by New's error when a limit of
// the shape cannot be enforced on this machine: the step is "n/a", not
// failed.
var ErrNotEnforceable = errors.New("cannot be enforced here")

type notEnforceable struct{ why error }

func (e notEnforceable) Error() string        { return e.why.Error() }
func (e notEnforceable) Is(target error) bool { return target == ErrNotEnforceable }

// A Group is a shape applied: one cgroup in each hierarchy it uses,
// named <mount>/storebench/<runID>-<shape>, holding the processes Add
// and AddTree put there. Its methods are safe for concurrent use.
type Group struct {
	shape Shape
	run   string
	name  string
	dirs  []cgDir
	// disk is the device throttled ("254:0"), "" when no disk limit is set.
	disk string
	// leasePath is the lease file, "" once released.
	leasePath string
	// own is storebench's own memory, added to the memory limit
	// (AddOwnMemory).
	own OwnMemory

	mu     sync.Mutex
	closed bool
}

// cgDir is one of a group's cgroups: the controllers of its hierarchy
// this group uses, the hierarchy's mount point (the root group, where
// Close moves leftover processes) and the group's directory.
type cgDir struct {
	Ctrls []string `json:"controllers"`
	Mount string   `json:"mount"`
	Dir   string   `json:"dir"`
}

// New creates the groups of shape for the run runID (one per hierarchy
// of a controller it uses: cpu when it sets cpus, cpuset when it sets a
// cpuset, and memory, blkio and cpuacct whenever they are mounted, for
// Stats) and sets its limits; the disk limits are set on the device that
// holds dataDir. It leases the groups first (see Reap). A limit this
// machine cannot enforce is an error matching ErrNotEnforceable, and
// nothing is left behind. Each group of a run needs its own runID and
// shape title: a directory that already exists is an error.
//
// Add the processes with Add or AddTree, read their use with Stats, and
// Close the group once they have stopped.
func New(shape Shape, runID, dataDir string) (*Group, error) {
	if err := shape.Validate(); err != nil {
		return nil, err
	}
	if !validRunID(runID) {
		return nil, fmt.Errorf("machine group: run id %q: want 1–128 letters, digits, '.', '_', '=', ',' or '-'", runID)
	}
	if err := shape.Check(dataDir); err != nil {
		return nil, notEnforceable{fmt.Errorf("machine %s: %w", shape.Title(), err)}
	}
	v1, _, err := hierarchies()
	if err != nil {
		return nil, err
	}
	g := &Group{shape: shape, run: runID, name: runID + "-" + dirName(shape)}

	// The hierarchies used, each once (cpu and cpuacct may share one).
	want := []string{ctrlCPUAcct, ctrlMemory, ctrlBlkio}
	if shape.CPUs != 0 {
		want = append(want, ctrlCPU)
	}
	if shape.CPUSet != "" {
		want = append(want, ctrlCPUSet)
	}
	byMount := map[string]*cgDir{}
	for _, c := range want {
		mp := v1[c]
		if mp == "" {
			continue // a statistics controller that is not mounted
		}
		d, ok := byMount[mp]
		if !ok {
			d = &cgDir{Mount: mp, Dir: filepath.Join(mp, ParentName, g.name)}
			byMount[mp] = d
		}
		d.Ctrls = append(d.Ctrls, c)
	}
	for _, d := range byMount {
		g.dirs = append(g.dirs, *d)
	}
	slices.SortFunc(g.dirs, func(a, b cgDir) int { return strings.Compare(a.Dir, b.Dir) })

	// The lease first, so that a storebench killed from here on leaves
	// nothing Reap does not find.
	if err := g.writeLease(); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("machine %s: this process has a group %s already: give each group of a run its own id", shape.Title(), g.name)
		}
		return nil, err
	}
	var made []cgDir
	fail := func(err error) (*Group, error) {
		for _, d := range made {
			_ = removeGroup(d.Dir, d.Mount)
		}
		g.releaseLease()
		return nil, fmt.Errorf("machine %s: %w", shape.Title(), err)
	}
	for _, d := range g.dirs {
		parent, err := parentDir(d.Mount)
		if err != nil {
			return fail(err)
		}
		if err := os.Mkdir(d.Dir, 0o755); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fail(fmt.Errorf("the cgroup %s exists already: give each group of a run its own id (a leftover of a dead run is removed by Reap)", d.Dir))
			}
			return fail(fmt.Errorf("creating the cgroup: %w", err))
		}
		made = append(made, d)
		if err := inheritCPUSet(d.Dir, parent); err != nil {
			return fail(err)
		}
		if err := g.apply(d, dataDir); err != nil {
			return fail(err)
		}
	}
	return g, nil
}

// apply sets the shape's limits in the group's directory d.
func (g *Group) apply(d cgDir, dataDir string) error {
	s := g.shape
	set := func(file, v string) error { return setLimit(d.Dir, file, v) }
	for _, c := range d.Ctrls {
		switch c {
		case ctrlCPU:
			// The group's CPUs are its own, as a machine's are: its weight
			// (and its parent's) is the highest, so that on a busy machine
			// it still gets its whole quota; the quota caps it.
			for _, dir := range []string{filepath.Dir(d.Dir), d.Dir} {
				if err := writeFile(filepath.Join(dir, "cpu.shares"), strconv.Itoa(MaxCPUShares)); err != nil {
					return fmt.Errorf("setting cpu.shares of %s: %w", dir, err)
				}
			}
			if err := set("cpu.cfs_period_us", strconv.Itoa(CFSPeriodMicros)); err != nil {
				return err
			}
			if err := set("cpu.cfs_quota_us", strconv.FormatInt(s.CFSQuotaMicros(), 10)); err != nil {
				return err
			}
		case ctrlCPUSet:
			// The memory nodes (and the CPUs, without a cpuset) are the
			// parent's, from inheritCPUSet.
			if s.CPUSet != "" {
				if err := set("cpuset.cpus", s.CPUSet); err != nil {
					return err
				}
			}
		case ctrlMemory:
			if err := applyMemory(s, d.Dir); err != nil {
				return err
			}
		case ctrlBlkio:
			if err := g.applyBlkio(d.Dir, dataDir); err != nil {
				return err
			}
		}
	}
	return nil
}

// setLimit writes v to the file of a group's directory dir, naming the
// file and the value in the error, since a limit the kernel refused is
// what the user needs to see.
func setLimit(dir, file, v string) error {
	if err := writeFile(filepath.Join(dir, file), v); err != nil {
		return fmt.Errorf("setting %s to %q: %w", file, v, err)
	}
	return nil
}

// applyMemory sets shape s's memory limits in the memory group's
// directory dir, apart from apply so each controller's rules read on
// their own.
func applyMemory(s Shape, dir string) error {
	set := func(file, v string) error { return setLimit(dir, file, v) }
	// A process added to the group brings the charge of the
	// memory it already has (its anonymous pages and the file
	// pages it maps) with it, so that a server placed right after
	// it started is charged for what it allocated before. Best
	// effort: kernels that dropped charge moving (the file gone,
	// or refusing any value but 0, as Linux 6.18's does) keep the
	// old charge where it was (OwnMemory.Moved).
	_ = writeFile(filepath.Join(dir, "memory.move_charge_at_immigrate"), "3")
	if s.CacheShape() {
		// A cache shape limits the page cache, not the engine's
		// own memory: a process that finds nothing left to
		// reclaim waits for CacheHold to raise the limit.
		if err := set("memory.oom_control", "1"); err != nil {
			return err
		}
	}
	if s.Memory == 0 {
		return nil
	}
	if err := set("memory.limit_in_bytes", strconv.FormatInt(s.Memory, 10)); err != nil {
		return err
	}
	// With swap accounting, memory+swap gets the same limit, so the
	// group cannot swap its way past the shape. Best effort: the
	// file is absent without swap accounting.
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		_ = set("memory.memsw.limit_in_bytes", strconv.FormatInt(s.Memory, 10))
	}
	return nil
}

// applyBlkio throttles the device holding dataDir in the blkio group's
// directory dir to the shape's IOPS and bandwidth, and records that
// device in g.disk; a shape without either sets nothing.
func (g *Group) applyBlkio(dir, dataDir string) error {
	s := g.shape
	set := func(file, v string) error { return setLimit(dir, file, v) }
	if s.DiskIOPS == 0 && s.DiskMBps == 0 {
		return nil
	}
	dev, err := DeviceOf(dataDir)
	if err != nil {
		return err
	}
	for key, files := range throttleFiles {
		v := s.DiskIOPS
		if key == KeyDiskMBps {
			v = s.DiskBytesPerSecond()
		}
		if v == 0 {
			continue
		}
		for _, f := range files {
			mm, err := throttleDevice(dir, f, dev)
			if err != nil {
				return err
			}
			if err := set(f, mm+" "+strconv.FormatInt(v, 10)); err != nil {
				return err
			}
			g.disk = mm
		}
	}
	return nil
}

func validRunID(id string) bool {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._=,-", c)) {
			return false
		}
	}
	return true
}

// dirName is the shape's title as a directory name: its name, or its
// label ("cpus=0.5,memory=256MiB": '=' and ',' are fine in cgroupfs),
// cut to 100 bytes with a hash of the whole when longer (a long cpuset
// list), so that names stay within the file system's 255.
func dirName(s Shape) string {
	t := s.Title()
	if len(t) <= 100 {
		return t
	}
	h := fnv.New64a()
	h.Write([]byte(t))
	return fmt.Sprintf("%s-%016x", t[:80], h.Sum64())
}

// Dirs lists the group's cgroup directories, one per hierarchy.
func (g *Group) Dirs() []string {
	var out []string
	for _, d := range g.dirs {
		out = append(out, d.Dir)
	}
	return out
}

// RunID is the run id the group was made with (New); Name its cgroups'
// directory name (<runID>-<shape>).
func (g *Group) RunID() string { return g.run }
func (g *Group) Name() string  { return g.name }

// Disk is the device the disk limits are set on ("254:0"), "" when the
// shape sets none.
func (g *Group) Disk() string { return g.disk }

// Add puts the process pid (all its threads) in every cgroup of the
// group. What it forks afterwards starts in the group too; its existing
// children stay where they are (AddTree takes them as well), and memory
// it has already been charged for stays charged where it was: add a
// process as soon as it starts.
func (g *Group) Add(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.add(pid)
}

func (g *Group) add(pid int) error {
	if g.closed {
		return fmt.Errorf("machine %s: adding pid %d: the group is closed", g.shape.Title(), pid)
	}
	if pid <= 0 {
		return fmt.Errorf("machine %s: adding pid %d: not a process id", g.shape.Title(), pid)
	}
	for _, d := range g.dirs {
		if err := addPID(d.Dir, pid); err != nil {
			return fmt.Errorf("machine %s: adding pid %d to %s: %w", g.shape.Title(), pid, d.Dir, err)
		}
	}
	return nil
}

// addTreeRounds bounds AddTree's passes over /proc: each pass adds the
// descendants forked since the last, which fork into the group from
// then on.
const addTreeRounds = 10

// AddTree puts pid and all its current descendants in the group (a
// server's whole process tree). A descendant that exits meanwhile is
// skipped; pid itself must exist.
func (g *Group) AddTree(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.add(pid); err != nil {
		return err
	}
	in := map[int]bool{pid: true}
	for range addTreeRounds {
		kids, err := descendants(pid)
		if err != nil {
			return fmt.Errorf("machine %s: %w", g.shape.Title(), err)
		}
		added := 0
		for _, k := range kids {
			if in[k] {
				continue
			}
			in[k] = true
			if err := g.add(k); err != nil {
				if !alive(k) {
					continue
				}
				return err
			}
			added++
		}
		if added == 0 {
			return nil
		}
	}
	return nil
}

// descendants lists the processes below pid, from the parent pids in
// /proc.
func descendants(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := procstat.StatOf(p)
		if err != nil {
			continue // gone meanwhile
		}
		children[st.PPID] = append(children[st.PPID], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out, nil
}

// Procs lists the processes in the group.
func (g *Group) Procs() ([]int, error) {
	var out []int
	for _, d := range g.dirs {
		ps, err := procsOf(d.Dir)
		if err != nil {
			return nil, fmt.Errorf("machine %s: %w", g.shape.Title(), err)
		}
		out = append(out, ps...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Close moves any process still in the group to its hierarchy's root
// group (it kills nothing: stop the processes first), removes the
// cgroups, waiting at most a few seconds for exiting processes to leave,
// and releases the lease. Closing twice is a no-op.
func (g *Group) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var errs []error
	for _, d := range g.dirs {
		if err := removeGroup(d.Dir, d.Mount); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// The lease stays: Reap removes what is left once this process is gone.
		return fmt.Errorf("machine %s: %w", g.shape.Title(), errors.Join(errs...))
	}
	g.releaseLease()
	return nil
}

// Stats is what a group's processes used, from the group's own counters
// since it was created (processes that left or exited included). A
// counter whose controller is not mounted is left 0 and its Has flag
// false.
//
// The page cache hit ratio is not here: cgroup v1 counts the pages a
// group brings into the cache and evicts (and DiskReadBytes, what it read
// from the disk), but not the reads the cache served, so the ratio needs
// the logical bytes read, which only the workload knows: 1 -
// DiskReadBytes / bytes read. MajorFaults and RefaultedFilePages say how
// often a page the group needed was not in memory.
type Stats struct {
	// HasCPU: cpuacct is mounted.
	HasCPU bool
	// CPUNs is the CPU time used (cpuacct.usage), CPUUserNs and CPUSysNs
	// its user and system parts.
	CPUNs, CPUUserNs, CPUSysNs int64

	// HasThrottle: the group has a CPU limit (cpu.stat).
	HasThrottle bool
	// Periods is the CFS periods in which the group ran, Throttled those
	// in which it used its whole quota and waited, ThrottledNs the time
	// it waited.
	Periods, Throttled, ThrottledNs int64

	// HasMemory: the memory controller is mounted.
	HasMemory bool
	// MemoryLimit is the limit the kernel holds the group to (the shape's,
	// plus storebench's own memory once AddOwnMemory added it, rounded
	// down to a page; 2^63-4096 for none), MemoryUsage and
	// MemoryMaxUsage its use now and at most (anonymous memory plus page
	// cache), MemoryFailcnt the times it hit the limit.
	MemoryLimit, MemoryUsage, MemoryMaxUsage, MemoryFailcnt int64
	// Cache is the page cache charged to the group, RSS its anonymous
	// memory, MappedFile the file pages mapped into its processes, Dirty
	// and Writeback the cache pages not yet written (memory.stat; the
	// total_ figures, which include the group's children, when the kernel
	// gives them).
	Cache, RSS, MappedFile, Dirty, Writeback int64
	// MajorFaults is the page faults that waited for the disk;
	// RefaultedFilePages the file pages read back in soon after being
	// evicted (workingset_refault_file): the working set did not fit.
	MajorFaults, RefaultedFilePages int64
	// HasOOMKills: the kernel reports OOM kills (memory.oom_control's
	// oom_kill, Linux 4.13 and later); OOMKills is the processes the
	// group's limit killed.
	HasOOMKills bool
	OOMKills    int64

	// HasDisk: blkio is mounted. The I/O the group's processes issued to
	// block devices, all devices together (blkio.throttle.io_service_bytes
	// and io_serviced). Under cgroup v1 the writeback of dirty page cache
	// is issued by the kernel's flusher threads and is not counted here
	// (nor throttled); direct I/O, reads, and the writes a process's own
	// fsync issues are.
	HasDisk                       bool
	DiskReadBytes, DiskWriteBytes int64
	DiskReads, DiskWrites         int64
}

// Stats reads the group's counters.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var s Stats
	if g.closed {
		return s, fmt.Errorf("machine %s: stats: the group is closed", g.shape.Title())
	}
	var errs []error
	for _, d := range g.dirs {
		for _, c := range d.Ctrls {
			if err := readStats(&s, c, d.Dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("machine %s: %w", g.shape.Title(), errors.Join(errs...))
	}
	return s, nil
}

func readStats(s *Stats, ctrl, dir string) error {
	file := func(name string) string { return filepath.Join(dir, name) }
	var err error
	switch ctrl {
	case ctrlCPUAcct:
		if s.CPUNs, err = readInt(file("cpuacct.usage")); err != nil {
			return err
		}
		s.HasCPU = true
		s.CPUUserNs, _ = readInt(file("cpuacct.usage_user"))
		s.CPUSysNs, _ = readInt(file("cpuacct.usage_sys"))
	case ctrlCPU:
		kv, err := readKeyed(file("cpu.stat"))
		if err != nil {
			return err
		}
		s.HasThrottle = true
		s.Periods, s.Throttled, s.ThrottledNs = kv["nr_periods"], kv["nr_throttled"], kv["throttled_time"]
	case ctrlMemory:
		if s.MemoryUsage, err = readInt(file("memory.usage_in_bytes")); err != nil {
			return err
		}
		s.MemoryLimit, _ = readInt(file("memory.limit_in_bytes"))
		s.MemoryMaxUsage, _ = readInt(file("memory.max_usage_in_bytes"))
		s.MemoryFailcnt, _ = readInt(file("memory.failcnt"))
		kv, err := readKeyed(file("memory.stat"))
		if err != nil {
			return err
		}
		get := func(names ...string) int64 {
			for _, n := range names {
				if v, ok := kv["total_"+n]; ok {
					return v
				}
				if v, ok := kv[n]; ok {
					return v
				}
			}
			return 0
		}
		s.Cache, s.RSS, s.MappedFile = get("cache"), get("rss"), get("mapped_file")
		s.Dirty, s.Writeback = get("dirty"), get("writeback")
		s.MajorFaults = get("pgmajfault")
		s.RefaultedFilePages = get("workingset_refault_file", "workingset_refault")
		if oc, err := readKeyed(file("memory.oom_control")); err == nil {
			if v, ok := oc["oom_kill"]; ok {
				s.HasOOMKills, s.OOMKills = true, v
			}
		}
		s.HasMemory = true
	case ctrlBlkio:
		rb, wb, err := readBlkio(file("blkio.throttle.io_service_bytes"))
		if err != nil {
			return err
		}
		ri, wi, err := readBlkio(file("blkio.throttle.io_serviced"))
		if err != nil {
			return err
		}
		s.HasDisk = true
		s.DiskReadBytes, s.DiskWriteBytes, s.DiskReads, s.DiskWrites = rb, wb, ri, wi
	}
	return nil
}

// readBlkio sums the Read and Write lines of a blkio "MAJ:MIN Op N" file
// over its devices.
func readBlkio(path string) (read, write int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		switch f[1] {
		case "Read":
			read += n
		case "Write":
			write += n
		}
	}
	return read, write, nil
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	st, err := procstat.StatOf(pid)
	return err == nil && st.State != "Z" && st.State != "X"
}

// sameProcess reports whether pid is still the process that started at
// start (clock ticks since boot), alive: a reused pid has another start
// time.
func sameProcess(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := procstat.StatOf(pid)
	if err != nil || st.State == "Z" || st.State == "X" {
		return false
	}
	return start == 0 || st.StartTicks == start
}

// ResetPeak starts the group's peak memory (Stats.MemoryMaxUsage) over
// from its use now (memory.max_usage_in_bytes), so that the peak read
// after a step is the step's. A group without the memory controller has
// nothing to reset.
func (g *Group) ResetPeak() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fmt.Errorf("machine %s: reset peak: the group is closed", g.shape.Title())
	}
	for _, d := range g.dirs {
		if slices.Contains(d.Ctrls, ctrlMemory) {
			if err := writeFile(filepath.Join(d.Dir, "memory.max_usage_in_bytes"), "0"); err != nil {
				return fmt.Errorf("machine %s: reset peak: %w", g.shape.Title(), err)
			}
		}
	}
	return nil
}

// Shape is the group's shape.
func (g *Group) Shape() Shape { return g.shape }
