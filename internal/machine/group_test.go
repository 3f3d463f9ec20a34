//go:build linux

package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"storebench/internal/measure/procstat"
)

// These tests run against the kernel of the machine they run on: they
// need root and cgroup v1's cpu, cpuacct, cpuset, memory and blkio, and
// the temporary directory on a block device the kernel throttles. Where
// one is missing they fail saying which (never skip): a machine shape
// that is not enforced would be a false shape. Their figures are ratios
// and rates from the kernel's own counters, not wall-clock budgets.

// needs fails the test unless this machine can enforce the limits keys
// for data in dir, and gives the test a home of its own for leases.
func needs(t *testing.T, dir string, keys ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root, to create cgroups (running as uid %d): run `go test ./internal/machine/` as root", os.Geteuid())
	}
	can := Can(dir)
	for _, k := range keys {
		if can[k] != "" {
			t.Fatalf("this test needs the %s limit, which this machine cannot enforce for %s: %s", k, dir, can[k])
		}
	}
	t.Setenv("STOREBENCH_HOME", t.TempDir())
}

// runID is a group id of the test's own.
func runID(t *testing.T) string {
	return fmt.Sprintf("test-%s-%d", strings.ReplaceAll(t.Name(), "/", "."), os.Getpid())
}

// newGroup makes a group of shape, closed at the end of the test (after
// the helpers started later are killed).
func newGroup(t *testing.T, shape, dataDir string) *Group {
	t.Helper()
	sh, err := Parse(shape)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(sh, runID(t), dataDir)
	if err != nil {
		t.Fatalf("New(%s): %v", shape, err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, d := range g.Dirs() {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("Close left %s", d)
			}
		}
	})
	return g
}

func mustStats(t *testing.T, g *Group) Stats {
	t.Helper()
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cgroupOf is pid's cgroup in the hierarchy of controller ctrl, from
// /proc/<pid>/cgroup ("/storebench/<name>").
func cgroupOf(t *testing.T, pid int, ctrl string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), ctrl) {
			return f[2]
		}
	}
	t.Fatalf("pid %d: no %s cgroup in %q", pid, ctrl, b)
	return ""
}

func dataDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if _, err := DeviceOf(d); err != nil {
		t.Fatalf("this test needs its temporary directory on a block device (set TMPDIR): %v", err)
	}
	return d
}

// TestCPUQuotaHoldsHalfACore is issue 35's proof (a): a process busy on
// every CPU, under cpus=0.5, gets 0.45–0.55 of a core by the group's own
// CPU accounting (cpuacct.usage over wall time), and the kernel says it
// was throttled.
func TestCPUQuotaHoldsHalfACore(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyCPUs)
	g := newGroup(t, "cpus=0.5", dir)
	c, _ := startHelper(t, "spin")
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // into the group's steady state
	s0, t0 := mustStats(t, g), time.Now()
	time.Sleep(2500 * time.Millisecond)
	s1, t1 := mustStats(t, g), time.Now()
	wall := t1.Sub(t0)
	share := float64(s1.CPUNs-s0.CPUNs) / float64(wall)
	periods, throttled := s1.Periods-s0.Periods, s1.Throttled-s0.Throttled
	t.Logf("cpus=0.5: the group used %.3f of a core over %s (cpuacct.usage %+d ns); throttled in %d of %d periods, %s waiting",
		share, wall.Round(time.Millisecond), s1.CPUNs-s0.CPUNs, throttled, periods, time.Duration(s1.ThrottledNs-s0.ThrottledNs).Round(time.Millisecond))
	if share < 0.45 || share > 0.55 {
		t.Errorf("the group used %.3f of a core under cpus=0.5, want 0.45–0.55", share)
	}
	if !s1.HasThrottle || throttled == 0 || periods == 0 {
		t.Errorf("cpu.stat: throttled in %d of %d periods: the quota did not act", throttled, periods)
	}
}

// TestLoadGeneratorStaysOutside is issue 35's proof (d): the test process
// (standing for the load generator) burns CPU beside a busy child in the
// group; the group's cpuacct counts the child's CPU time (by its own
// /proc/<pid>/stat) and none of the test process's.
func TestLoadGeneratorStaysOutside(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyCPUs)
	g := newGroup(t, "cpus=0.5", dir)
	c, _ := startHelper(t, "spin")
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("/", ParentName, g.name)
	if got := cgroupOf(t, os.Getpid(), ctrlCPUAcct); got == rel {
		t.Fatalf("the test process is in the group (%s)", got)
	}
	if got := cgroupOf(t, c.pid, ctrlCPUAcct); got != rel {
		t.Fatalf("the child is in %s, want %s", got, rel)
	}
	time.Sleep(200 * time.Millisecond)
	child0, err := procstat.StatOf(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	self0 := selfCPU(t)
	s0 := mustStats(t, g)
	// The load generator: busy on this process for 2 s.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			x := uint64(1)
			for {
				select {
				case <-stop:
					sink.Store(x)
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	s1 := mustStats(t, g)
	self1 := selfCPU(t)
	child1, err := procstat.StatOf(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	group := time.Duration(s1.CPUNs - s0.CPUNs)
	kid := child1.CPU() - child0.CPU()
	self := self1 - self0
	t.Logf("over 2 s: the test process used %s of CPU, the child in the group %s (its /proc stat), the group's cpuacct %s",
		self.Round(time.Millisecond), kid.Round(time.Millisecond), group.Round(time.Millisecond))
	// The child's /proc figures are in 10 ms ticks, sampled a little
	// apart from the group's: 5% and 30 ms of slack. The test process must
	// have used more than that, or counting it would not show.
	slack := kid/20 + 30*time.Millisecond
	if self <= 2*slack {
		t.Fatalf("the test process used only %s of CPU in 2 s, not more than twice the comparison's slack (%s): the machine is too busy to tell", self, slack)
	}
	if diff := group - kid; diff > slack || -diff > slack {
		t.Errorf("the group's cpuacct counted %s, the child used %s: the group counts more (or less) than its own process", group, kid)
	}
	if group > kid+self/2 {
		t.Errorf("the group's cpuacct (%s) holds part of the test process's %s", group, self)
	}
}

// selfCPU is this process's CPU time (user and system).
func selfCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMemoryLimitHoldsPageCache is issue 35's proof (b): a child writes a
// file twice the group's memory (64 MiB limit, 128 MiB file, ordinary
// buffered I/O, on the data disk) and reads it back twice, every byte
// checked; sampled throughout, the page cache charged to the group stays
// at or under the limit, and the reads that no longer fit come from the
// disk (the group's own blkio count).
func TestMemoryLimitHoldsPageCache(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyMemory)
	const limit, size = 64 << 20, 128 << 20
	g := newGroup(t, "memory=64MiB", dir)
	c, _ := startHelper(t, "cache", "HELPER_FILE="+filepath.Join(dir, "data"), "HELPER_SIZE="+strconv.Itoa(size))
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	if s := mustStats(t, g); s.MemoryLimit != limit {
		t.Fatalf("memory.limit_in_bytes = %d, want %d", s.MemoryLimit, limit)
	}
	var peakCache, peakUsage int64
	samples := 0
	done := make(chan struct{})
	sampled := make(chan error, 1)
	go func() {
		var err error
		defer func() { sampled <- err }()
		for {
			var s Stats
			if s, err = g.Stats(); err != nil {
				return
			}
			samples++
			peakCache, peakUsage = max(peakCache, s.Cache), max(peakUsage, s.MemoryUsage)
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	if _, err := fmt.Fprintln(c.in, "go"); err != nil {
		t.Fatal(err)
	}
	res := c.line(60 * time.Second)
	if err := c.wait(10 * time.Second); err != nil || !strings.HasPrefix(res, "ok ") {
		t.Fatalf("the child: %q, %v", res, err)
	}
	close(done)
	if err := <-sampled; err != nil {
		t.Fatal(err)
	}
	s := mustStats(t, g)
	t.Logf("memory=64MiB, a %d MiB file written and read twice in %s: peak page cache %.1f MiB (of %d samples), peak usage %.1f MiB, max_usage %.1f MiB (%+d bytes from the limit), limit %.1f MiB; failcnt %d, %.1f MiB read from the disk, %d file pages refaulted",
		size>>20, time.Since(start).Round(time.Millisecond), mib(peakCache), samples, mib(peakUsage), mib(s.MemoryMaxUsage), s.MemoryMaxUsage-s.MemoryLimit, mib(s.MemoryLimit), s.MemoryFailcnt, mib(s.DiskReadBytes), s.RefaultedFilePages)
	if samples < 10 {
		t.Errorf("only %d samples of the group's memory", samples)
	}
	if peakCache > limit {
		t.Errorf("the group's page cache reached %d bytes, over its limit of %d", peakCache, int64(limit))
	}
	// The whole of the group's memory may pass the limit by a little: the
	// kernel forces the charge of an allocation that must not fail (seen:
	// one page). One charge batch (64 pages) is allowed.
	if over := max(peakUsage, s.MemoryMaxUsage) - limit; over > 64*4096 {
		t.Errorf("the group's memory reached %d bytes (max_usage %d), %d over its limit of %d", peakUsage, s.MemoryMaxUsage, over, int64(limit))
	}
	if peakCache < limit/2 {
		t.Errorf("the group's page cache peaked at %.1f MiB: the file's pages were not charged to it", mib(peakCache))
	}
	// Of the 2 × 128 MiB read, at least what did not fit came from the disk.
	if s.DiskReadBytes < size-limit {
		t.Errorf("the group read %.1f MiB from the disk, want at least %d MiB: the reads were served from a cache over the limit", mib(s.DiskReadBytes), (size-limit)>>20)
	}
	if s.HasOOMKills && s.OOMKills != 0 {
		t.Errorf("%d OOM kills in the group", s.OOMKills)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// TestDiskMBpsHoldsDirectWrites is issue 35's proof (c): a child writing
// 1 MiB O_DIRECT blocks as fast as it can, under disk_mbps=10, writes at
// most ~11 MB/s, by the group's own blkio count over 2.5 s.
func TestDiskMBpsHoldsDirectWrites(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyDiskMBps)
	g := newGroup(t, "disk_mbps=10", dir)
	rate, ops := directWriteRate(t, g, dir, 1<<20)
	t.Logf("disk_mbps=10 on %s: 1 MiB O_DIRECT writes at %.2f MB/s (%.1f writes/s) by the group's blkio.throttle.io_service_bytes", g.Disk(), rate/1e6, ops)
	if rate > 11e6 {
		t.Errorf("the group wrote %.2f MB/s under disk_mbps=10, want at most 11", rate/1e6)
	}
	if rate < 1e6 {
		t.Errorf("the group wrote %.2f MB/s: the child barely wrote (is the disk that slow?)", rate/1e6)
	}
}

// TestDiskIOPSHoldsDirectWrites: 4 KiB O_DIRECT writes under
// disk_iops=100 make at most ~110 writes a second, by the group's own
// blkio.throttle.io_serviced.
func TestDiskIOPSHoldsDirectWrites(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyDiskIOPS)
	g := newGroup(t, "disk_iops=100", dir)
	rate, ops := directWriteRate(t, g, dir, 4096)
	t.Logf("disk_iops=100 on %s: 4 KiB O_DIRECT writes at %.1f writes/s (%.3f MB/s) by the group's blkio.throttle.io_serviced", g.Disk(), ops, rate/1e6)
	if ops > 110 {
		t.Errorf("the group made %.1f writes/s under disk_iops=100, want at most 110", ops)
	}
	if ops < 10 {
		t.Errorf("the group made %.1f writes/s: the child barely wrote", ops)
	}
}

// directWriteRate runs the dwrite helper in g and returns the group's
// write rate in bytes and operations per second over 2.5 s, after 0.5 s
// (the throttle's first slice may let a burst through).
func directWriteRate(t *testing.T, g *Group, dir string, block int) (bytesPerSec, opsPerSec float64) {
	t.Helper()
	c, first := startHelper(t, "dwrite", "HELPER_FILE="+filepath.Join(dir, "direct"), "HELPER_BLOCK="+strconv.Itoa(block))
	if first != "ready" {
		t.Fatalf("the child: %q", first)
	}
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(c.in, "go"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	s0, t0 := mustStats(t, g), time.Now()
	time.Sleep(2500 * time.Millisecond)
	s1, t1 := mustStats(t, g), time.Now()
	c.kill()
	if !s1.HasDisk {
		t.Fatal("no blkio counters")
	}
	secs := t1.Sub(t0).Seconds()
	return float64(s1.DiskWriteBytes-s0.DiskWriteBytes) / secs, float64(s1.DiskWrites-s0.DiskWrites) / secs
}

// TestReapRemovesDeadOwnersGroup is issue 35's proof (f): a storebench
// (a helper) makes a group, puts a process in it and is killed with
// kill -9; Reap finds the lease of a dead owner, moves the process out,
// removes the group's directories and the lease. A live owner's group is
// left alone.
func TestReapRemovesDeadOwnersGroup(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyCPUs, KeyMemory)
	victim, _ := startHelper(t, "sleep") // a worker the dead run left in its group
	owner, first := startHelper(t, "own", "HELPER_SHAPE=cpus=0.5,memory=64MiB", "HELPER_RUN=reaptest-"+strconv.Itoa(os.Getpid()),
		"HELPER_FILE="+dir, "HELPER_PID="+strconv.Itoa(victim.pid))
	dirsJSON, ok := strings.CutPrefix(first, "dirs ")
	if !ok {
		t.Fatalf("the owner said %q", first)
	}
	var dirs []string
	if err := json.Unmarshal([]byte(dirsJSON), &dirs); err != nil || len(dirs) == 0 {
		t.Fatalf("the owner's dirs %q: %v", dirsJSON, err)
	}
	// A group of this live process, which Reap must leave.
	mine := newGroup(t, "cpus=1", dir)

	// While its owner lives, Reap leaves it.
	if got, err := Reap(); err != nil || len(got) != 0 {
		t.Fatalf("Reap with the owner alive: %+v, %v", got, err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the group %s is gone with its owner alive: %v", d, err)
		}
	}
	if err := syscall.Kill(owner.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = owner.wait(10 * time.Second)

	got, err := Reap()
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if len(got) != 1 || got[0].Owner != owner.pid || !slices.Contains(got[0].Procs, victim.pid) {
		t.Fatalf("Reap = %+v, want the group of pid %d with pid %d in it", got, owner.pid, victim.pid)
	}
	t.Logf("Reap removed %v (owner pid %d, killed), moving pid %d out", got[0].Dirs, got[0].Owner, victim.pid)
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Reap (%v)", d, err)
		}
	}
	if got := cgroupOf(t, victim.pid, ctrlMemory); got != "/" {
		t.Errorf("the leftover process is in memory cgroup %s, want the root", got)
	}
	if !alive(victim.pid) {
		t.Errorf("Reap killed the process in the group; it should only move it")
	}
	ents, _ := os.ReadDir(LeaseDir())
	if len(ents) != 1 {
		t.Errorf("leases after Reap: %v, want only this process's", ents)
	}
	for _, d := range mine.Dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("Reap removed %s of a live owner: %v", d, err)
		}
	}
	if got, err := Reap(); err != nil || len(got) != 0 {
		t.Errorf("a second Reap: %+v, %v", got, err)
	}
}

// TestAddTreeAndClose: AddTree takes a process and its child; Close moves
// both out to the root groups, leaves them running, removes the group's
// directories and lease; Add after Close is refused.
func TestAddTreeAndClose(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyCPUs, KeyMemory)
	sh, _ := Parse("cpus=1,memory=128MiB")
	g, err := New(sh, runID(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c, first := startHelper(t, "fork")
	kidField, ok := strings.CutPrefix(first, "child ")
	kid, err := strconv.Atoi(kidField)
	if !ok || err != nil {
		t.Fatalf("the helper said %q", first)
	}
	if err := g.AddTree(c.pid); err != nil {
		t.Fatal(err)
	}
	procs, err := g.Procs()
	if err != nil || !slices.Contains(procs, c.pid) || !slices.Contains(procs, kid) {
		t.Fatalf("Procs = %v, %v; want %d and its child %d", procs, err, c.pid, kid)
	}
	for _, ctrl := range []string{ctrlCPU, ctrlCPUAcct, ctrlMemory, ctrlBlkio} {
		if got, want := cgroupOf(t, kid, ctrl), "/"+ParentName+"/"+g.name; got != want {
			t.Errorf("the child's %s cgroup is %s, want %s", ctrl, got, want)
		}
	}
	leases, _ := os.ReadDir(LeaseDir())
	if len(leases) != 1 {
		t.Fatalf("leases: %v, want one", leases)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Close (%v)", d, err)
		}
	}
	for _, p := range []int{c.pid, kid} {
		if !alive(p) {
			t.Errorf("pid %d died at Close: Close kills nothing", p)
		}
		if got := cgroupOf(t, p, ctrlMemory); got != "/" {
			t.Errorf("pid %d is in memory cgroup %s after Close, want the root", p, got)
		}
	}
	if leases, _ := os.ReadDir(LeaseDir()); len(leases) != 0 {
		t.Errorf("leases after Close: %v", leases)
	}
	if err := g.Add(c.pid); err == nil {
		t.Errorf("Add after Close succeeded")
	}
	if err := g.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	// End both: the helper reaps its child once stdin closes.
	_ = c.in.Close()
	if err := c.wait(10 * time.Second); err != nil {
		t.Errorf("the helper: %v", err)
	}
}

// TestCanHereAndCPUSet: this machine (the one storebench is developed on)
// enforces every limit for data in the temporary directory; a cpuset
// shape pins the group's process to its CPU; New refuses a group that
// exists already and leaves nothing behind.
func TestCanHereAndCPUSet(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, Limits...)
	t.Logf("storebench list would say: %s", Summary(dir))
	cpus := OnlineCPUs()
	last := cpus[len(cpus)-1]
	g := newGroup(t, "cpus=0.5,cpuset="+strconv.Itoa(last), dir)
	c, _ := startHelper(t, "sleep")
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "Cpus_allowed_list:\t"+strconv.Itoa(last)+"\n") {
		t.Errorf("the child is not pinned to CPU %d: %s", last, status)
	}
	_, err = New(g.Shape(), runID(t), dir)
	if err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("New of an existing group: %v", err)
	}
	if leases, _ := os.ReadDir(LeaseDir()); len(leases) != 1 {
		t.Errorf("leases after a refused New: %v, want one", leases)
	}
}

// TestNotEnforceableIsNA: disk limits for data on tmpfs cannot be
// enforced; Check says why on one line and New refuses with an error
// matching ErrNotEnforceable, leaving nothing behind.
func TestNotEnforceableIsNA(t *testing.T) {
	needs(t, t.TempDir())
	shm := "/dev/shm"
	if _, err := DeviceOf(shm); err == nil {
		t.Fatalf("this test needs %s on tmpfs (no block device)", shm)
	}
	c := Can(shm)
	if c[KeyDiskMBps] == "" || c[KeyDiskIOPS] == "" || c[KeyCPUs] != "" {
		t.Fatalf("Can(%s) = %v: want the disk limits refused and cpus allowed", shm, c)
	}
	sh, _ := Parse("cpus=1,disk_mbps=100")
	err := sh.Check(shm)
	if err == nil || !strings.HasPrefix(err.Error(), "disk_mbps: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Check = %v, want one line naming disk_mbps", err)
	}
	t.Logf("n/a: %v", err)
	g, err := New(sh, runID(t), shm)
	if !errors.Is(err, ErrNotEnforceable) {
		t.Fatalf("New = %v, %v; want ErrNotEnforceable", g, err)
	}
	if leases, _ := os.ReadDir(LeaseDir()); len(leases) != 0 {
		t.Errorf("a refused New left leases: %v", leases)
	}
	if _, err := New(Shape{CPUs: 1}, "../x", t.TempDir()); err == nil {
		t.Errorf("New took the run id ../x")
	}
}

// TestReapLeavesForeignDirs: a lease of a dead owner that names a
// directory this package does not make (another cgroup, a plain
// directory, a storebench/ that is not under a cgroup mount) is reported
// and left alone, lease included.
func TestReapLeavesForeignDirs(t *testing.T) {
	needs(t, t.TempDir())
	v1, _, err := hierarchies()
	if err != nil || v1[ctrlMemory] == "" {
		t.Fatalf("this test needs the memory cgroup mounted: %v", err)
	}
	plain := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plain, ParentName, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, d := range []cgDir{
		{Ctrls: []string{ctrlMemory}, Mount: v1[ctrlMemory], Dir: v1[ctrlMemory]},
		{Ctrls: []string{ctrlMemory}, Mount: v1[ctrlMemory], Dir: filepath.Join(v1[ctrlMemory], "system.slice")},
		{Ctrls: []string{ctrlMemory}, Mount: v1[ctrlMemory], Dir: filepath.Join(v1[ctrlMemory], ParentName, "..", "y")},
		{Ctrls: []string{ctrlMemory}, Mount: plain, Dir: filepath.Join(plain, ParentName, "x")},
	} {
		b, _ := json.Marshal(lease{Owner: 0, Groups: []cgDir{d}})
		if err := os.MkdirAll(LeaseDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(LeaseDir(), fmt.Sprintf("0-foreign%d.json", i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Reap()
		if err == nil || !strings.Contains(err.Error(), "not a storebench cgroup") {
			t.Errorf("Reap of a lease naming %s: %v, want it refused", d.Dir, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("Reap removed the lease naming %s", d.Dir)
		}
		_ = os.Remove(path)
	}
	if _, err := os.Stat(filepath.Join(plain, ParentName, "x")); err != nil {
		t.Errorf("Reap removed a plain directory: %v", err)
	}
}
