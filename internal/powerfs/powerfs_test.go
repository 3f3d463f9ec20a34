package powerfs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// need fails where this machine cannot mount (no /dev/fuse, not root),
// never skips: no install step can give those, and a crash test that
// passes unrun would hide it.
func need(t *testing.T) {
	t.Helper()
	if why := Unavailable(); why != "" {
		t.Fatalf("power-loss tests: %s", why)
	}
}

func mount(t *testing.T) *Mount {
	t.Helper()
	need(t)
	m, err := New(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func fail(t *testing.T, m *Mount) Failure {
	t.Helper()
	f, err := m.PowerFail(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func write(t *testing.T, path string, flags int, data []byte, off int64) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	return f
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// Each way of writing, synced and not, then a failure: exactly what was
// synced is there.
func TestFailKeepsExactlyWhatWasSynced(t *testing.T) {
	m := mount(t)
	p := func(n string) string { return filepath.Join(m.Dir, n) }

	// fsync and fdatasync.
	f := write(t, p("fsync"), 0, []byte("synced"), 0)
	must(t, f.Sync())
	f.Close()
	f = write(t, p("fdatasync"), 0, []byte("datasynced"), 0)
	must(t, unix.Fdatasync(int(f.Fd())))
	f.Close()
	// Never synced: the file stays (the namespace persists), empty.
	write(t, p("unsynced"), 0, []byte("lost"), 0).Close()
	// Synced, then overwritten in the middle and appended to: the
	// synced bytes come back, the file its synced size.
	f = write(t, p("overwrite"), 0, []byte("0123456789"), 0)
	must(t, f.Sync())
	_, err := f.WriteAt([]byte("abc"), 3)
	must(t, err)
	_, err = f.WriteAt([]byte("tail"), 10)
	must(t, err)
	_, err = f.WriteAt([]byte("XY"), 4) // over what is saved already
	must(t, err)
	f.Close()
	// Synced, then truncated: back to its synced length and bytes.
	f = write(t, p("truncate"), 0, []byte("keep me whole"), 0)
	must(t, f.Sync())
	must(t, f.Truncate(4))
	f.Close()
	// Synced, then opened with O_TRUNC and rewritten.
	f = write(t, p("otrunc"), 0, []byte("old contents"), 0)
	must(t, f.Sync())
	f.Close()
	write(t, p("otrunc"), os.O_TRUNC, []byte("new"), 0).Close()
	// O_DSYNC and O_SYNC: each write durable when it returns.
	write(t, p("odsync"), unix.O_DSYNC, []byte("dsync"), 0).Close()
	write(t, p("osync"), unix.O_SYNC, []byte("sync"), 0).Close()
	// msync of a shared mapping.
	f = write(t, p("mmap"), 0, make([]byte, 4096), 0)
	must(t, f.Sync())
	mem, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	copy(mem, "mapped and msynced")
	must(t, unix.Msync(mem, unix.MS_SYNC))
	must(t, unix.Munmap(mem))
	f.Close()
	// A mapping written and never msynced (munmap writes it back: a
	// write, not a sync).
	f = write(t, p("mmap-lost"), 0, make([]byte, 4096), 0)
	must(t, f.Sync())
	mem, err = unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	copy(mem, "never msynced")
	must(t, unix.Munmap(mem))
	f.Close()

	if got := read(t, p("unsynced")); got != "lost" {
		t.Fatalf("before the failure the mount reads %q", got)
	}
	st, err := m.Stats(context.Background())
	must(t, err)
	if st.HeldBytes == 0 || st.Syncs == 0 {
		t.Fatalf("stats before the failure: %+v", st)
	}
	got := fail(t, m)
	if got.DroppedFiles == 0 || got.DroppedBytes == 0 {
		t.Errorf("failure: %+v, want something dropped", got)
	}
	want := map[string]string{
		"fsync": "synced", "fdatasync": "datasynced", "unsynced": "", "overwrite": "0123456789",
		"truncate": "keep me whole", "otrunc": "old contents", "odsync": "dsync", "osync": "sync",
	}
	for name, w := range want {
		if g := read(t, p(name)); g != w {
			t.Errorf("%s after the failure: %q, want %q", name, g, w)
		}
	}
	if g := read(t, p("mmap")); !bytes.HasPrefix([]byte(g), []byte("mapped and msynced")) {
		t.Errorf("mmap after the failure: %q", g[:20])
	}
	if g := read(t, p("mmap-lost")); g != string(make([]byte, 4096)) {
		t.Errorf("mmap-lost after the failure: %q, want zeros", g[:20])
	}
	if _, err := os.Stat(p("unsynced")); err != nil {
		t.Errorf("data model: a file created and never synced stays (empty): %v", err)
	}
	st, err = m.Stats(context.Background())
	must(t, err)
	if st.HeldBytes != 0 || st.HeldFiles != 0 {
		t.Errorf("stats after the failure: %+v", st)
	}
}

// Under the data model a rename persists without a directory fsync:
// the renamed file is there after the failure, with its synced data.
func TestDataModelKeepsARenameWithoutDirectorySync(t *testing.T) {
	m := mount(t)
	f := write(t, filepath.Join(m.Dir, "tmp"), 0, []byte("renamed"), 0)
	must(t, f.Sync())
	f.Close()
	must(t, os.Rename(filepath.Join(m.Dir, "tmp"), filepath.Join(m.Dir, "final")))
	fail(t, m)
	if g := read(t, filepath.Join(m.Dir, "final")); g != "renamed" {
		t.Errorf("after the failure: %q", g)
	}
	if _, err := os.Stat(filepath.Join(m.Dir, "tmp")); !os.IsNotExist(err) {
		t.Errorf("the old name after the failure: %v", err)
	}
}

// A file kept open across syncs: writes after its last sync are lost,
// those before it kept, also when the file was renamed in between.
func TestWritesAfterTheLastSyncAreLost(t *testing.T) {
	m := mount(t)
	f := write(t, filepath.Join(m.Dir, "log"), 0, []byte("one,"), 0)
	_, err := f.WriteAt([]byte("two,"), 4)
	must(t, err)
	must(t, f.Sync())
	must(t, os.Rename(filepath.Join(m.Dir, "log"), filepath.Join(m.Dir, "log2")))
	_, err = f.WriteAt([]byte("three,"), 8)
	must(t, err)
	got := fail(t, m)
	f.Close()
	if g := read(t, filepath.Join(m.Dir, "log2")); g != "one,two," {
		t.Errorf("after the failure: %q, want %q", g, "one,two,")
	}
	if got.DroppedBytes != int64(len("three,")) {
		t.Errorf("dropped %d bytes, want %d", got.DroppedBytes, len("three,"))
	}
}

// O_DIRECT through the mount works (reads and writes of aligned
// buffers), and an O_DIRECT write is not durable until a sync.
func TestODirect(t *testing.T) {
	m := mount(t)
	path := filepath.Join(m.Dir, "direct")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_DIRECT, 0o644)
	must(t, err)
	buf, err := unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	must(t, err)
	defer unix.Munmap(buf)
	copy(buf, "first block")
	_, err = unix.Pwrite(fd, buf[:4096], 0)
	must(t, err)
	must(t, unix.Fsync(fd))
	copy(buf[4096:], "second block")
	_, err = unix.Pwrite(fd, buf[4096:], 4096)
	must(t, err)
	rd := make([]byte, 8192)
	copy(rd, buf) // aligned: reuse the mapping for the read
	_, err = unix.Pread(fd, buf, 0)
	must(t, err)
	if !bytes.HasPrefix(buf[4096:], []byte("second block")) {
		t.Fatalf("read back through O_DIRECT: %q", buf[4096:4110])
	}
	unix.Close(fd)
	fail(t, m)
	if g := read(t, path); len(g) != 4096 || g[:11] != "first block" {
		t.Errorf("after the failure: %d bytes %q, want the first block only", len(g), g[:min(len(g), 11)])
	}
}

// The server never outlives its mount's owner: Close unmounts, and a
// killed server's mount is gone after Reap.
func TestCloseUnmounts(t *testing.T) {
	m := mount(t)
	must(t, m.Close())
	if mounted(m.Dir) {
		t.Fatalf("%s still mounted after Close", m.Dir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(m.Dir, &st); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
