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

func mount(t *testing.T, model string) *Mount {
	t.Helper()
	need(t)
	m, err := New(context.Background(), t.TempDir(), model)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	st, err := m.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := model; st.Model != want && !(want == "" && st.Model == ModelData) {
		t.Fatalf("mounted model %q, want %q", st.Model, want)
	}
	return m
}

// models runs test under each crash model.
func models(t *testing.T, test func(t *testing.T, model string)) {
	for _, model := range Models {
		t.Run(model, func(t *testing.T) { test(t, model) })
	}
}

// syncDir fsyncs the directory (an open directory's fsync: FSYNCDIR).
func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	must(t, err)
	defer d.Close()
	must(t, d.Sync())
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
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
func TestFailKeepsExactlyWhatWasSynced(t *testing.T) { models(t, testFailKeepsExactlyWhatWasSynced) }

func testFailKeepsExactlyWhatWasSynced(t *testing.T, model string) {
	m := mount(t, model)
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
	if model == ModelMetadata {
		if st.HeldOps == 0 {
			t.Fatalf("metadata model: no namespace operation held before the directory sync: %+v", st)
		}
		syncDir(t, m.Dir) // the names made durable: only contents differ
		if st, err = m.Stats(context.Background()); err != nil || st.HeldOps != 0 {
			t.Fatalf("stats after the directory sync: %+v, %v", st, err)
		}
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
		t.Errorf("a file created (its directory synced) and never synced stays (empty): %v", err)
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
	m := mount(t, ModelData)
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

// Under the metadata model a rename whose directory was not fsynced
// after it goes back on a failure; once the directory is fsynced it
// stays.
func TestMetadataModelRevertsARenameWithoutDirectorySync(t *testing.T) {
	m := mount(t, ModelMetadata)
	p := func(n string) string { return filepath.Join(m.Dir, n) }
	f := write(t, p("tmp"), 0, []byte("renamed"), 0)
	must(t, f.Sync())
	f.Close()
	syncDir(t, m.Dir) // tmp's creation is durable
	must(t, os.Rename(p("tmp"), p("final")))
	got := fail(t, m)
	if exists(p("final")) {
		t.Errorf("the new name after the failure, the directory never synced: %q", read(t, p("final")))
	}
	if g := read(t, p("tmp")); g != "renamed" {
		t.Errorf("the old name after the failure: %q, want %q", g, "renamed")
	}
	if got.RevertedOps != 1 || got.SkippedOps != 0 {
		t.Errorf("failure: %+v, want one operation reverted", got)
	}

	must(t, os.Rename(p("tmp"), p("final")))
	syncDir(t, m.Dir)
	fail(t, m)
	if g := read(t, p("final")); g != "renamed" {
		t.Errorf("the new name after the failure, the directory synced: %q", g)
	}
	if exists(p("tmp")) {
		t.Errorf("the old name is there after a synced rename")
	}
}

// Each namespace operation without a directory fsync goes back; with
// one it stays.
func TestMetadataModelRevertsUnsyncedNamespaceOperations(t *testing.T) {
	m := mount(t, ModelMetadata)
	p := func(n string) string { return filepath.Join(m.Dir, n) }
	synced := func(name, data string) {
		f := write(t, p(name), 0, []byte(data), 0)
		must(t, f.Sync())
		f.Close()
	}
	synced("doomed", "unlinked, comes back")
	synced("victim", "replaced, comes back")
	synced("src", "renamed over victim")
	synced("kept", "created, dir synced")
	must(t, os.Mkdir(p("olddir"), 0o750))
	syncDir(t, m.Dir) // all the above durable

	synced("created", "created, dir not synced")
	must(t, os.Remove(p("doomed")))
	must(t, os.Mkdir(p("newdir"), 0o755))
	synced("newdir/inner", "in a new dir")
	syncDir(t, p("newdir")) // inner durable in newdir, newdir itself not
	must(t, os.Remove(p("olddir")))
	must(t, os.Rename(p("src"), p("victim")))
	must(t, os.Symlink("kept", p("link")))
	must(t, os.Link(p("kept"), p("hard")))
	synced("made-then-removed", "x")
	must(t, os.Remove(p("made-then-removed")))

	got := fail(t, m)
	for _, gone := range []string{"created", "link", "hard", "made-then-removed"} {
		if exists(p(gone)) {
			t.Errorf("%s is there after the failure", gone)
		}
	}
	for name, want := range map[string]string{"kept": "created, dir synced", "doomed": "unlinked, comes back",
		"victim": "replaced, comes back", "src": "renamed over victim"} {
		if g := read(t, p(name)); g != want {
			t.Errorf("%s after the failure: %q, want %q", name, g, want)
		}
	}
	if st, err := os.Stat(p("olddir")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
		t.Errorf("the removed directory after the failure: %v, %v", st, err)
	}
	// newdir's creation was not durable, though its entry was: its
	// removal is skipped (not empty), best effort.
	if got.RevertedOps != 8 || got.SkippedOps != 1 {
		t.Errorf("failure: %+v, want 8 operations reverted, 1 skipped", got)
	}
	if g := read(t, p("newdir/inner")); g != "in a new dir" {
		t.Errorf("newdir/inner after the failure: %q", g)
	}
	if ents, err := os.ReadDir(m.Dir); err != nil || len(ents) != 6 { // kept doomed victim src olddir newdir
		t.Errorf("reading the mount's directory after the failure: %v, %v", ents, err)
	}
	st, err := m.Stats(context.Background())
	must(t, err)
	if st.HeldOps != 0 {
		t.Errorf("stats after the failure: %+v", st)
	}

	// A rename across directories is durable once both are synced.
	must(t, os.Mkdir(p("a"), 0o755))
	must(t, os.Mkdir(p("b"), 0o755))
	synced("a/f", "moved")
	syncDir(t, m.Dir)
	syncDir(t, p("a"))
	must(t, os.Rename(p("a/f"), p("b/f")))
	syncDir(t, p("b"))
	fail(t, m)
	if g := read(t, p("a/f")); g != "moved" || exists(p("b/f")) {
		t.Errorf("a rename with only its destination synced: a/f %q, b/f there %v", g, exists(p("b/f")))
	}
	must(t, os.Rename(p("a/f"), p("b/f")))
	syncDir(t, p("b"))
	syncDir(t, p("a"))
	fail(t, m)
	if g := read(t, p("b/f")); g != "moved" || exists(p("a/f")) {
		t.Errorf("a rename with both directories synced: b/f %q, a/f there %v", g, exists(p("a/f")))
	}
}

func TestUnknownModel(t *testing.T) {
	if _, err := New(context.Background(), t.TempDir(), "bogus"); err == nil {
		t.Fatal("New with an unknown crash model: no error")
	}
}

// A file kept open across syncs: writes after its last sync are lost,
// those before it kept, also when the file was renamed in between.
func TestWritesAfterTheLastSyncAreLost(t *testing.T) { models(t, testWritesAfterTheLastSyncAreLost) }

func testWritesAfterTheLastSyncAreLost(t *testing.T, model string) {
	m := mount(t, model)
	f := write(t, filepath.Join(m.Dir, "log"), 0, []byte("one,"), 0)
	_, err := f.WriteAt([]byte("two,"), 4)
	must(t, err)
	must(t, f.Sync())
	must(t, os.Rename(filepath.Join(m.Dir, "log"), filepath.Join(m.Dir, "log2")))
	syncDir(t, m.Dir)
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
func TestODirect(t *testing.T) { models(t, testODirect) }

func testODirect(t *testing.T, model string) {
	m := mount(t, model)
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
	syncDir(t, m.Dir)
	fail(t, m)
	if g := read(t, path); len(g) != 4096 || g[:11] != "first block" {
		t.Errorf("after the failure: %d bytes %q, want the first block only", len(g), g[:min(len(g), 11)])
	}
}

// The server never outlives its mount's owner: Close unmounts, and a
// killed server's mount is gone after Reap.
func TestCloseUnmounts(t *testing.T) {
	m := mount(t, ModelMetadata)
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
