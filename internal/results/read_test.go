package results

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readBounded runs Read on path and fails the test if it has not
// returned within limit (a read of /dev/zero never does: it grows until
// the machine runs out of memory), or if it allocated more than maxAlloc.
func readBounded(t *testing.T, path string, limit time.Duration, maxAlloc uint64) error {
	t.Helper()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() {
		_, err := Read(path)
		done <- err
	}()
	select {
	case err := <-done:
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
			t.Errorf("Read(%s) allocated %d MiB", path, got>>20)
		}
		return err
	case <-time.After(limit):
		t.Fatalf("Read(%s) still reading after %v", path, limit)
		return nil
	}
}

// A results.json that is /dev/zero (named directly, or a link to it in a
// run directory) is refused at once, before anything is read.
func TestReadRefusesADevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Fatalf("this test needs /dev/zero (every Linux has it): %v", err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "results.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, "/dev/zero"} {
		err := readBounded(t, p, 3*time.Second, 16<<20)
		if err == nil {
			t.Errorf("Read(%s) accepted", p)
			continue
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), p) {
			t.Errorf("Read(%s): %q, want one line naming the file", p, err)
		}
	}
}

// A results.json over MaxBytes is refused by its size, said in MiB,
// without reading it (a sparse file: large and cheap).
func TestReadRefusesAnOversizedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(512 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = readBounded(t, p, 3*time.Second, 16<<20)
	want := "results.json: 512 MiB, over the 256 MiB a results file may have"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read of a 512 MiB results.json: %v, want %q", err, want)
	}
}
