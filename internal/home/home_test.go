package home

import (
	"os"
	"path/filepath"
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
	h, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	if got, want := Dir(), filepath.Join(h, ".cache", "storebench"); got != want {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
}
