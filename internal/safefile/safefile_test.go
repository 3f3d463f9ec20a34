package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCreateRefusesLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(dir, "dangling"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	for _, name := range []string{"link", "dangling"} {
		if err := WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); !errors.Is(err, ErrLink) {
			t.Errorf("%s: %v, want ErrLink", name, err)
		}
	}
	if err := WriteFile(filepath.Join(dir, "fifo"), []byte("x"), 0o644); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("fifo: %v, want ErrNotRegular (a FIFO)", err)
	}
	if err := WriteFile("/dev/null", []byte("x"), 0o644); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/null: %v, want ErrNotRegular", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(t.TempDir(), "nowhere")); err == nil {
		t.Error("dangling link's target created")
	}
	p := filepath.Join(dir, "plain")
	os.WriteFile(p, []byte("a long old content"), 0o644)
	if err := WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("plain: %q, want it replaced", b)
	}
}

func TestWriteFileAtomicReplacesALinkAndIgnoresALinkedTmp(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	p := filepath.Join(dir, "report.md")
	os.Symlink(victim, p)
	os.Symlink(victim, p+".tmp")
	if err := WriteFileAtomic(p, []byte("report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim changed: %q", b)
	}
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() {
		t.Errorf("report.md: %v %v, want a regular file", st, err)
	}
	if _, err := os.Lstat(p + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tmp left: %v", err)
	}
}

func TestMkdirRefusesALink(t *testing.T) {
	dir := t.TempDir()
	os.Symlink(t.TempDir(), filepath.Join(dir, "charts"))
	if err := Mkdir(filepath.Join(dir, "charts"), 0o755); !errors.Is(err, ErrLink) {
		t.Errorf("charts link: %v, want ErrLink", err)
	}
	if err := Mkdir(filepath.Join(dir, "new"), 0o755); err != nil {
		t.Error(err)
	}
	if err := Mkdir(filepath.Join(dir, "new"), 0o755); err != nil {
		t.Errorf("existing directory: %v", err)
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ok"), []byte("hello"), 0o644)
	os.Symlink(filepath.Join(dir, "ok"), filepath.Join(dir, "link"))
	os.Symlink("/dev/zero", filepath.Join(dir, "zero"))
	if b, err := ReadRegular(dir, "ok", 5); err != nil || string(b) != "hello" {
		t.Errorf("ok: %q %v", b, err)
	}
	var tl *TooLargeError
	if _, err := ReadRegular(dir, "ok", 4); !errors.As(err, &tl) || tl.Size != 5 || tl.Max != 4 {
		t.Errorf("ok over 4 bytes: %v, want TooLargeError", err)
	}
	for _, name := range []string{"link", "zero"} {
		if _, err := ReadRegular(dir, name, 1<<20); !errors.Is(err, ErrLink) {
			t.Errorf("%s: %v, want ErrLink", name, err)
		}
	}
	if _, err := ReadRegular("/dev", "zero", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/zero: %v, want ErrNotRegular", err)
	}
	for _, name := range []string{"../ok", "..", ""} {
		if _, err := ReadRegular(dir, name, 1<<20); err == nil {
			t.Errorf("%q read", name)
		}
	}
	if _, err := ReadRegular(dir, "missing", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{512 << 20: "512 MiB", 256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 10: "10 bytes", 1 << 10: "1 KiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
