package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A name the file system refuses, or an --out that is a file, ends the
// search for a results directory with an error; it used to loop forever.
func TestMakeRunDirStopsOnErrorsOtherThanExists(t *testing.T) {
	root := t.TempDir()
	afile := filepath.Join(root, "afile")
	if err := os.WriteFile(afile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, base, want string }{
		{root, strings.Repeat("x", 300), "file name too long"},
		{root, "a\x00b", "invalid argument"},
		{afile, "ledger-1", "not a directory"},
	} {
		if dir, err := makeRunDir(c.out, c.base); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("makeRunDir(%q, %.20q) = %q, %v; want an error with %q", c.out, c.base, dir, err, c.want)
		}
	}
}

// Runs started in the same second get -2, -3 ...; the search is bounded.
func TestMakeRunDirNumbersClashesAndGivesUp(t *testing.T) {
	root := t.TempDir()
	for i, want := range []string{"s-1", "s-1-2", "s-1-3"} {
		dir, err := makeRunDir(root, "s-1")
		if err != nil || filepath.Base(dir) != want {
			t.Fatalf("run %d: %q, %v; want %s", i, dir, err, want)
		}
	}
	for i := 4; i <= maxRunDirAttempts; i++ {
		if _, err := makeRunDir(root, "s-1"); err != nil {
			t.Fatal(err)
		}
	}
	if dir, err := makeRunDir(root, "s-1"); err == nil || !strings.Contains(err.Error(), "exist already") {
		t.Fatalf("after %d directories: %q, %v", maxRunDirAttempts, dir, err)
	}
}
