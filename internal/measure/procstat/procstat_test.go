//go:build linux

package procstat

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

const mib = 1 << 20

func mustSelf(t testing.TB) Snapshot {
	t.Helper()
	s, err := Self()
	if err != nil {
		t.Fatalf("Self: %v", err)
	}
	return s
}

func TestSelfBasics(t *testing.T) {
	s := mustSelf(t)
	if s.RSSBytes <= 0 || s.PeakRSSBytes < s.RSSBytes {
		t.Errorf("RSS %d, peak %d: want 0 < RSS <= peak", s.RSSBytes, s.PeakRSSBytes)
	}
	if s.Threads < 1 || s.Processes != 1 {
		t.Errorf("Threads %d, Processes %d: want >=1 and 1", s.Threads, s.Processes)
	}
	if s.At.IsZero() {
		t.Error("At is zero")
	}
	o, err := Of(os.Getpid())
	if err != nil {
		t.Fatalf("Of(own pid): %v", err)
	}
	if o.RSSBytes <= 0 || o.Threads < 1 {
		t.Errorf("Of(own pid) = %+v: want positive RSS and threads", o)
	}
}

func TestRSSGrowsWithTouchedMemory(t *testing.T) {
	// Return freed heap to the OS first; otherwise the allocation below can
	// reuse pages an earlier test (or -count iteration) already faulted in,
	// and RSS would not grow.
	debug.FreeOSMemory()
	before := mustSelf(t)
	buf := make([]byte, 64*mib)
	// Write every page: fresh anonymous memory is only resident once touched.
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	after := mustSelf(t)
	runtime.KeepAlive(buf)
	t.Logf("RSS %d -> %d MiB", before.RSSBytes/mib, after.RSSBytes/mib)
	if grow := after.RSSBytes - before.RSSBytes; grow < 48*mib {
		t.Errorf("RSS grew by %d MiB after touching 64 MiB, want >= 48 MiB", grow/mib)
	}
	if after.PeakRSSBytes < after.RSSBytes {
		t.Errorf("peak RSS %d < RSS %d", after.PeakRSSBytes, after.RSSBytes)
	}
}

func TestCPUGrowsWhileBurning(t *testing.T) {
	before := mustSelf(t)
	burnCPU(t, 200*time.Millisecond)
	after := mustSelf(t)
	t.Logf("user CPU +%v, sys CPU +%v, %.0f%%", time.Duration(after.CPUUserNs-before.CPUUserNs),
		time.Duration(after.CPUSysNs-before.CPUSysNs), CPUPercent(before, after))
	if d := time.Duration(after.CPUUserNs - before.CPUUserNs); d < 100*time.Millisecond {
		t.Errorf("user CPU grew by %v after burning 200ms, want >= 100ms", d)
	}
	if p := CPUPercent(before, after); p <= 0 {
		t.Errorf("CPUPercent = %.1f, want > 0", p)
	}
}

// burnCPU spins until this thread has consumed d of CPU time, rather than d
// of wall time, so the test holds on a machine busy with other work. A wall
// limit keeps a broken clock from hanging the test.
func burnCPU(t *testing.T, d time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatalf("getrusage: %v", err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, deadline := threadCPU(), time.Now().Add(20*time.Second)
	x := uint64(1)
	for threadCPU()-start < d {
		if time.Now().After(deadline) {
			t.Fatalf("could not get %v of CPU within 20s", d)
		}
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

var sink uint64

// TestCPUMatchesRusage cross-checks the tick conversion (USER_HZ = 100)
// against getrusage, which reports the same kernel counters in real units.
func TestCPUMatchesRusage(t *testing.T) {
	burnCPU(t, 50*time.Millisecond)
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	s := mustSelf(t)
	user := time.Duration(ru.Utime.Nano())
	got := time.Duration(s.CPUUserNs)
	// Self is read after getrusage, so it may be ahead by the time spent in
	// between, and behind by tick rounding.
	if got < user-30*time.Millisecond || got > user+200*time.Millisecond {
		t.Errorf("Self user CPU %v, getrusage %v: conversion looks wrong", got, user)
	}
}

func TestCPUPercent(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := Snapshot{At: t0, CPUUserNs: 1e9, CPUSysNs: 1e9}
	b := Snapshot{At: t0.Add(2 * time.Second), CPUUserNs: 3e9, CPUSysNs: 2e9}
	if got := CPUPercent(a, b); got != 150 {
		t.Errorf("CPUPercent = %v, want 150", got)
	}
	if got := CPUPercent(b, a); got != 0 {
		t.Errorf("CPUPercent backwards = %v, want 0", got)
	}
	if got := CPUPercent(a, a); got != 0 {
		t.Errorf("CPUPercent zero interval = %v, want 0", got)
	}
}

func TestWriteBytesGrow(t *testing.T) {
	before := mustSelf(t)
	if !before.IOAvailable {
		if _, err := os.ReadFile("/proc/self/io"); err == nil {
			t.Fatal("/proc/self/io is readable but IOAvailable is false")
		}
		t.Log("/proc/self/io unreadable; only checking that Self still works")
		return
	}
	f, err := os.Create(filepath.Join(diskTempDir(t), "w"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 8*mib)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after := mustSelf(t)
	t.Logf("WriteChars +%d, WriteBytes +%d", after.WriteChars-before.WriteChars, after.WriteBytes-before.WriteBytes)
	if d := after.WriteChars - before.WriteChars; d < 8*mib {
		t.Errorf("WriteChars grew by %d, want >= 8 MiB", d)
	}
	// Storage writes are charged per dirtied page; allow for accounting
	// differences between filesystems but require most of it.
	if d := after.WriteBytes - before.WriteBytes; d < 4*mib {
		t.Errorf("WriteBytes grew by %d, want >= 4 MiB of the 8 MiB written", d)
	}
}

func TestTreeIncludesChild(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sleep: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pid := cmd.Process.Pid
	// Between fork and exec the child is a copy of this process; wait for
	// the exec so its figures are sleep's own.
	deadline := time.Now().Add(5 * time.Second)
	for {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became sleep (comm %q, err %v)", pid, comm, err)
		}
		time.Sleep(5 * time.Millisecond)
	}

	child, err := Of(pid)
	if err != nil {
		t.Fatalf("Of(child): %v", err)
	}
	self := mustSelf(t)
	tree, err := Tree(os.Getpid())
	if err != nil {
		t.Fatalf("Tree: %v", err)
	}
	t.Logf("tree: %d processes, RSS %d (self %d, child %d)", tree.Processes, tree.RSSBytes, self.RSSBytes, child.RSSBytes)
	if tree.Processes < 2 {
		t.Errorf("Tree.Processes = %d, want >= 2", tree.Processes)
	}
	if child.RSSBytes <= 0 {
		t.Fatalf("child RSS = %d, want > 0", child.RSSBytes)
	}
	// Own RSS can move a little between the samples, so compare against
	// the child's RSS plus most of our own.
	if want := child.RSSBytes + self.RSSBytes*9/10; tree.RSSBytes < want {
		t.Errorf("Tree RSS %d < child %d + 90%% of self %d", tree.RSSBytes, child.RSSBytes, self.RSSBytes)
	}
	if tree.Threads < self.Threads+1 {
		t.Errorf("Tree threads %d, want >= self %d + 1", tree.Threads, self.Threads)
	}

	sub, err := Tree(pid)
	if err != nil {
		t.Fatalf("Tree(child): %v", err)
	}
	if sub.Processes != 1 {
		t.Errorf("Tree(leaf).Processes = %d, want 1", sub.Processes)
	}
}

func TestInvalidPid(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := Of(pid); err == nil {
			t.Errorf("Of(%d) succeeded", pid)
		}
		if _, err := Tree(pid); err == nil {
			t.Errorf("Tree(%d) succeeded", pid)
		}
	}
	// Beyond the kernel's pid limit (2^22), so it cannot exist.
	if _, err := Of(1 << 30); err == nil {
		t.Error("Of(nonexistent pid) succeeded")
	}
	if _, err := Tree(1 << 30); err == nil {
		t.Error("Tree(nonexistent pid) succeeded")
	}
}

func TestParseStatOddCommand(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields, and
	// the clock ticks come out as nanoseconds at USER_HZ = 100.
	root := t.TempDir()
	write := func(pid, line string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1234", "1234 (a) b (c) S 77 1234 1234 0 -1 4194560 100 0 0 0 250 30 7 9 20 0 5 0 1000 123456 789 18446744073709551615 "+
		"1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	write("1235", "1235 (x) S 1")
	pfs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pfs.Proc(1234)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readStat(p)
	if err != nil {
		t.Fatalf("readStat: %v", err)
	}
	want := Stat{State: "S", PPID: 77, UserNs: 2500 * 1e6, SysNs: 300 * 1e6, ChildUserNs: 70 * 1e6, ChildSysNs: 90 * 1e6, Threads: 5, StartTicks: 1000}
	if st != want {
		t.Errorf("readStat = %+v, want %+v", st, want)
	}
	if p, err = pfs.Proc(1235); err != nil {
		t.Fatal(err)
	}
	if _, err := readStat(p); err == nil {
		t.Error("readStat of a truncated line succeeded")
	}
}

// TestStatOf checks StatOf on live processes: this one (its parent, its
// state), a child started later (a later start time, this process as its
// parent) and a pid that cannot exist (an error matching fs.ErrNotExist,
// which the server manager's liveness check relies on).
func TestStatOf(t *testing.T) {
	self, err := StatOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.PPID != os.Getppid() {
		t.Errorf("StatOf(self).PPID = %d, want %d", self.PPID, os.Getppid())
	}
	if self.State != "R" && self.State != "S" {
		t.Errorf("StatOf(self).State = %q, want R or S", self.State)
	}
	if self.Threads < 1 || self.StartTicks == 0 {
		t.Errorf("StatOf(self) = %+v, want threads and a start time", self)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child, err := StatOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if child.PPID != os.Getpid() || child.StartTicks < self.StartTicks {
		t.Errorf("StatOf(child) = %+v, want ppid %d and a start time from %d on", child, os.Getpid(), self.StartTicks)
	}
	if _, err := StatOf(1 << 30); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("StatOf(no such pid) = %v, want an error matching fs.ErrNotExist", err)
	}
}

// diskTempDir returns a temporary directory on a disk-backed filesystem.
// Page-cache eviction and write accounting behave differently on tmpfs
// (its pages cannot be dropped), so if TMPDIR is tmpfs the test directory
// is created next to the package instead.
func diskTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	if fs.Type != unix.TMPFS_MAGIC && fs.Type != unix.RAMFS_MAGIC {
		return dir
	}
	dir, err := os.MkdirTemp(".", "testtmp-")
	if err != nil {
		t.Fatalf("creating disk-backed temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestPageCacheDropsAfterFadvise(t *testing.T) {
	dir := diskTempDir(t)
	path := filepath.Join(dir, "data")
	const size = 4 * mib
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	res, total, err := PageCache(dir)
	if err != nil {
		t.Fatalf("PageCache: %v", err)
	}
	if total != size {
		t.Errorf("total = %d, want %d", total, size)
	}
	if res <= 0 || res > total {
		t.Fatalf("resident = %d after reading, want in (0, %d]", res, total)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Dirty pages cannot be dropped, hence the fsync first.
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatalf("fadvise: %v", err)
	}
	after, _, err := PageCache(dir)
	if err != nil {
		t.Fatalf("PageCache after fadvise: %v", err)
	}
	t.Logf("resident %d -> %d bytes of %d after fsync + FADV_DONTNEED", res, after, total)
	// The kernel may keep a few pages (e.g. ones still under writeback), so
	// require a clear drop rather than zero.
	if after > res/2 {
		t.Errorf("resident %d -> %d after FADV_DONTNEED, want it at least halved", res, after)
	}
}

func TestPageCachePartialPage(t *testing.T) {
	dir := diskTempDir(t)
	const size = 4096 + 100
	if err := os.WriteFile(filepath.Join(dir, "small"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	// Empty files and subdirectories must be handled too.
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, total, err := PageCache(dir)
	if err != nil {
		t.Fatalf("PageCache: %v", err)
	}
	// Freshly written, so fully cached; the partial last page counts only
	// its file bytes.
	if total != size || res != size {
		t.Errorf("PageCache = (%d, %d), want (%d, %d)", res, total, size, size)
	}
}

func TestPageCacheMissingDir(t *testing.T) {
	if _, _, err := PageCache(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("PageCache of a missing directory succeeded")
	}
	if _, _, err := DiskUsage(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("DiskUsage of a missing directory succeeded")
	}
}

// TestWalkSurvivesChurn deletes and recreates files while the walks run, as
// a compacting engine would, and requires that no walk fails.
func TestWalkSurvivesChurn(t *testing.T) {
	dir := diskTempDir(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		data := make([]byte, 64<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sub := filepath.Join(dir, "d"+string(rune('a'+i%4)))
			_ = os.MkdirAll(sub, 0o755)
			p := filepath.Join(sub, "f")
			_ = os.WriteFile(p, data, 0o644)
			if i%2 == 0 {
				_ = os.RemoveAll(sub)
			}
		}
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, _, err := PageCache(dir); err != nil {
			t.Errorf("PageCache under churn: %v", err)
			break
		}
		if _, _, err := DiskUsage(dir); err != nil {
			t.Errorf("DiskUsage under churn: %v", err)
			break
		}
	}
	close(stop)
	<-done
}

func TestDiskUsageSparse(t *testing.T) {
	dir := diskTempDir(t)
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const gib = 1 << 30
	if err := f.Truncate(gib); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 4096), 512*mib); err != nil {
		t.Fatal(err)
	}
	// fsync so delayed allocation has assigned blocks and st_blocks is final.
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	alloc, apparent, err := DiskUsage(dir)
	if err != nil {
		t.Fatalf("DiskUsage: %v", err)
	}
	t.Logf("sparse 1 GiB file: allocated %d, apparent %d", alloc, apparent)
	if alloc <= 0 || alloc >= mib {
		t.Errorf("allocated = %d, want in (0, 1 MiB)", alloc)
	}
	if apparent != gib {
		t.Errorf("apparent = %d, want %d", apparent, gib)
	}

	// A hard link is the same data; du counts it once and so must we.
	if err := os.Link(f.Name(), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	alloc2, apparent2, err := DiskUsage(dir)
	if err != nil {
		t.Fatalf("DiskUsage with hard link: %v", err)
	}
	if alloc2 != alloc || apparent2 != apparent {
		t.Errorf("with hard link: (%d, %d), want unchanged (%d, %d)", alloc2, apparent2, alloc, apparent)
	}

	var st syscall.Stat_t
	if err := syscall.Stat(f.Name(), &st); err != nil {
		t.Fatal(err)
	}
	if alloc != st.Blocks*512 {
		t.Errorf("allocated %d, want st_blocks*512 = %d", alloc, st.Blocks*512)
	}
}

func BenchmarkSelf(b *testing.B) {
	for b.Loop() {
		if _, err := Self(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTree(b *testing.B) {
	pid := os.Getpid()
	for b.Loop() {
		if _, err := Tree(pid); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTreePSSCountsSharedPagesOnce(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 5 & sleep 5 & sleep 5 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var s Snapshot
	for i := 0; i < 100; i++ {
		var err error
		if s, err = Tree(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if s.Processes == 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Processes != 4 {
		t.Fatalf("tree has %d processes, want 4", s.Processes)
	}
	// The four processes share libc's and sh's pages: counted once per
	// process in RSS, split between them in PSS.
	if s.PSSBytes <= 0 || s.PSSBytes >= s.RSSBytes {
		t.Fatalf("PSS %d should be positive and below summed RSS %d", s.PSSBytes, s.RSSBytes)
	}
}
