package export

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A file planted at steps.csv as a symbolic link (a shared or temporary
// export directory) is refused: the file it points at is not written
// through, and a dangling link's target is not created.
func TestExportRefusesALinkAtItsFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "steps.csv")); err != nil {
		t.Fatal(err)
	}
	e, err := New(Spec{Format: "csv", Dir: dir})
	if err == nil {
		e.Close()
		t.Fatal("a symbolic link at steps.csv was written through")
	}
	if !strings.Contains(err.Error(), "steps.csv") || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %q does not say steps.csv is a symbolic link", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was changed: %q", b)
	}

	// A dangling link: its target must not be created.
	dir2 := t.TempDir()
	target := filepath.Join(t.TempDir(), "created-through-link")
	if err := os.Symlink(target, filepath.Join(dir2, "ticks.jsonl")); err != nil {
		t.Fatal(err)
	}
	if e, err := New(Spec{Format: "jsonl", Dir: dir2}); err == nil {
		e.Close()
		t.Error("a dangling symbolic link at ticks.jsonl was written through")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("the dangling link's target was created")
	}
}

// A FIFO (or any file that is not a regular file) at the path is refused
// rather than opened: opening a FIFO for writing would block.
func TestExportRefusesANonRegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "steps.csv"), 0o644); err != nil {
		t.Fatalf("making a FIFO in a temporary directory: %v", err)
	}
	if e, err := New(Spec{Format: "csv", Dir: dir}); err == nil {
		e.Close()
		t.Fatal("a FIFO at steps.csv was accepted")
	} else if !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %q does not say it is not a regular file", err)
	}
}

// A regular file of that name is replaced, as the README says.
func TestExportReplacesARegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "steps.csv")
	if err := os.WriteFile(p, []byte(strings.Repeat("old\n", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(Spec{Format: "csv", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "old") || !strings.HasPrefix(string(b), "run,study,") {
		t.Errorf("steps.csv not replaced: %.60q", b)
	}
}
