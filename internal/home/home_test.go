package home

import (
	"os"
	"path/filepath"
	"strconv"
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
