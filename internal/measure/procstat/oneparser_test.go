package procstat

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneReaderOfProcPID keeps the reading of /proc/<pid>/stat, status,
// io and smaps_rollup here, through procfs: other packages call StatOf,
// Of or Tree rather than parse those files again (tests may, to check).
func TestOneReaderOfProcPID(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	// "/proc/%d/stat", "/proc/self/io", or filepath.Join("/proc", pid, "stat").
	procFile := regexp.MustCompile(`"/proc/(%d|self)/(stat|status|io|smaps_rollup)"|"/proc",[^\n]*"(stat|status|io|smaps_rollup)"\)`)
	self, _ := filepath.Abs(".")
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if abs, _ := filepath.Abs(path); d.IsDir() && abs == self {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				// Tests may read /proc by hand to check the figures.
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := procFile.Find(b); m != nil {
				t.Errorf("%s reads %s itself: use procstat.StatOf, Of or Tree", path, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
