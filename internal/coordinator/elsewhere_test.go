package coordinator

import (
	"os"
	"path/filepath"
	"testing"
)

// Two runs of one study started in the same second (their results
// directories have the same name, under different --out) whose data
// must live outside a private directory get data directories of their
// own. They shared /tmp/storebench-data/<run>/<target>: two Redis
// servers appended to one AOF, which the next start refused ("Bad file
// format"), and the first run to end removed the other's data.
func TestDataElsewhereIsPerRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	run := "geo-crash-20261128-124357"
	a, err := dataElsewhere(filepath.Join(t.TempDir(), run, "data", "redis"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := dataElsewhere(filepath.Join(t.TempDir(), run, "data", "redis"))
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("both runs' Redis data in %s", a)
	}
	for _, d := range []string{a, b} {
		if filepath.Base(d) != "redis" {
			t.Errorf("%s: not named after its target", d)
		}
		if st, err := os.Stat(filepath.Dir(d)); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want a directory others traverse", filepath.Dir(d), st, err)
		}
	}
}
