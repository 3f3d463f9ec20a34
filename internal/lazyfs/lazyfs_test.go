package lazyfs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"storebench/internal/server/proc"
)

// need fails where this machine cannot mount LazyFS (no /dev/fuse, not
// root, or LazyFS not installed: make test installs it,
// scripts/install-lazyfs.sh), never skips.
func need(t *testing.T) {
	t.Helper()
	// make test installs LazyFS; mounting it needs /dev/fuse and root,
	// which no install step can give: the crash tests fail without them
	// rather than pass unrun.
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("crash tests need /dev/fuse to mount LazyFS: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("crash tests need root to mount LazyFS (running as uid %d)", os.Geteuid())
	}
	if why := Unavailable(); why != "" {
		t.Fatalf("LazyFS: %s", why)
	}
}

// mount is a LazyFS mount over a temporary directory, closed when the
// test ends (Close twice is harmless).
func mount(t *testing.T) *Mount {
	t.Helper()
	need(t)
	m, err := New(context.Background(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// A write not fsynced reads back through the mount while the directory
// below has nothing; ClearCache drops it; a write fsynced survives both
// the clear and a remount.
func TestClearCacheDropsWhatWasNotSynced(t *testing.T) {
	ctx := context.Background()
	m := mount(t)
	write := func(name string, sync bool) {
		f, err := os.Create(filepath.Join(m.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("hello " + name); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("synced", true)
	write("unsynced", false)
	if b, _ := os.ReadFile(filepath.Join(m.Dir, "unsynced")); string(b) != "hello unsynced" {
		t.Fatalf("through the mount: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(m.Root, "unsynced")); len(b) != 0 {
		t.Fatalf("below the mount before any fsync: %q, want nothing", b)
	}
	if err := m.ClearCache(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Remount(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(m.Dir, "unsynced")); len(b) != 0 {
		t.Errorf("unsynced after the power loss: %q, want nothing", b)
	}
	if b, _ := os.ReadFile(filepath.Join(m.Dir, "synced")); string(b) != "hello synced" {
		t.Errorf("synced after the power loss: %q", b)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if mounted(m.Dir) {
		t.Errorf("%s still mounted after Close", m.Dir)
	}
}

// O_DIRECT on the mount (Aerospike's direct-files, InnoDB's default
// flush method): LazyFS 0.3.0 opened its backing file with the caller's
// O_DIRECT and read what it had not cached into an unaligned buffer of
// its own, so every such read failed with EINVAL; install-lazyfs.sh
// patches that (scripts/patches/lazyfs-odirect.patch). A write through
// O_DIRECT|O_DSYNC is durable when it returns (the kernel asks LazyFS for
// the fsync O_DSYNC implies); one through O_DIRECT alone is in LazyFS's
// cache until an fsync, and the power failure drops it.
func TestODirectOnTheMount(t *testing.T) {
	ctx := context.Background()
	m := mount(t)
	const size = 64 << 10
	// O_DIRECT wants a buffer aligned to the logical block (4 KiB is).
	aligned := func() []byte {
		raw := make([]byte, size+4096)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&raw[0])) % 4096); r != 0 {
			off = 4096 - r
		}
		return raw[off : off+size]
	}
	buf := aligned()
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	write := func(name string, flags int) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(m.Dir, name), os.O_CREATE|os.O_RDWR|syscall.O_DIRECT|flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(buf, 0); err != nil {
			t.Fatalf("%s: O_DIRECT write: %v", name, err)
		}
	}
	write("dsync", syscall.O_DSYNC)
	write("direct", 0)
	if err := m.ClearCache(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Remount(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(m.Dir, "dsync"), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := aligned()
	if n, err := f.ReadAt(got, 0); err != nil || n != size || !bytes.Equal(got, buf) {
		t.Fatalf("O_DIRECT read of the O_DSYNC file after the power failure: %d bytes, %v, equal %v; want the %d written", n, err, bytes.Equal(got, buf), size)
	}
	if b, err := os.ReadFile(filepath.Join(m.Dir, "direct")); err != nil || bytes.Equal(b, buf) {
		t.Fatalf("the file written O_DIRECT without O_DSYNC or fsync: %d bytes (%v), all there after the power failure", len(b), err)
	}
}

const childEnv = "STOREBENCH_LAZYFS_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		// A storebench stand-in that mounts and then waits to be killed.
		mt, err := New(context.Background(), dir, 0)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(mt.Dir, mt.cmd.Process.Pid)
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kill -9 of the process that mounted LazyFS leaves no LazyFS process
// and no mount behind: the daemon gets SIGTERM from the kernel and
// unmounts; Reap, run by the next mount, cleans up whatever is left.
func TestNothingLeftAfterKill9(t *testing.T) {
	need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] == "error" {
		t.Fatalf("child: %q", line)
	}
	mnt := f[0]
	pid, _ := strconv.Atoi(f[1])
	if !mounted(mnt) || !proc.Alive(pid) {
		t.Fatalf("child's mount %s (lazyfs pid %d) not there", mnt, pid)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for proc.Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if proc.Alive(pid) {
		t.Errorf("lazyfs pid %d still running 30s after its storebench was killed", pid)
	}
	selfUnmounted := !mounted(mnt)
	if err := Reap(context.Background(), os.Stderr); err != nil {
		t.Error(err)
	}
	if mounted(mnt) {
		t.Errorf("%s still mounted after Reap", mnt)
	}
	t.Logf("lazyfs exited; unmounted by itself: %v", selfUnmounted)
}

// Died tells a LazyFS that exited on its own (a trial to run again) from
// one this package stopped; Close still unmounts what it left.
func TestDiedTellsACrashFromAStop(t *testing.T) {
	need(t)
	ctx := context.Background()
	m, err := New(ctx, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remount(ctx); err != nil {
		t.Fatal(err)
	}
	if died, _ := m.Died(); died {
		t.Fatal("Died after a remount")
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	if died, _ := m.Died(); !died {
		t.Error("Died says no after LazyFS was killed")
	}
	_ = m.Close()
	if mounted(m.Dir) {
		t.Errorf("%s still mounted after Close", m.Dir)
	}
}
