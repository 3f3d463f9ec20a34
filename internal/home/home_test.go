package home

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// STOREBENCH_HOME wins; without it the folder is ~/.cache/storebench,
// the one the install scripts name, whatever XDG_CACHE_HOME says.
func TestDir(t *testing.T) {
	t.Setenv("STOREBENCH_HOME", "/srv/sb")
	if got := Sub("kafka"); got != "/srv/sb/kafka" {
		t.Errorf("Sub(kafka) = %q with STOREBENCH_HOME=/srv/sb", got)
	}
	t.Setenv("STOREBENCH_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "/elsewhere")
	want := filepath.Join(os.TempDir(), "storebench-"+strconv.Itoa(os.Getuid()))
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		want = filepath.Join(h, ".cache", "storebench")
	}
	if got := Dir(); got != want {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
}

// Shared makes a traversable directory of this user's, and refuses a
// name another user planted first: a link, a file, a directory of
// someone else's.
func TestSharedRefusesWhatItDidNotMake(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d, err := Shared("mine")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("%s: %v %v", d, st, err)
	}
	if again, err := Shared("mine"); err != nil || again != d {
		t.Errorf("again: %s %v", again, err)
	}
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(tmp, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	planted := []string{"link", "file"}
	if os.Getuid() == 0 {
		if err := os.Mkdir(filepath.Join(tmp, "theirs"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(tmp, "theirs"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, "theirs")
	}
	for _, name := range planted {
		if got, err := Shared(name); err == nil || !strings.Contains(err.Error(), "not a directory of this user's") {
			t.Errorf("%s: %s, %v; want it refused", name, got, err)
		}
	}
}

// SharedTemp makes a new traversable directory at each call: two runs
// of one study in the same second never share their data.
func TestSharedTempIsNeverShared(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a, err := SharedTemp("storebench-data-run-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := SharedTemp("storebench-data-run-")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("both %s", a)
	}
	for _, d := range []string{a, b} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v", d, st, err)
		}
	}
}
