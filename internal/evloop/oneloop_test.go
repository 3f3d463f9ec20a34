package evloop

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneEpollLoop keeps epoll in this package: a client that needs an
// event loop of its own (the HTTP workload's connection per request)
// drives a Poller rather than a second copy of the epoll calls.
func TestOneEpollLoop(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	epoll := regexp.MustCompile(`\b(unix|syscall)\.(Epoll(Create1?|Ctl|Wait|Pwait)|SYS_EPOLL_\w+)\b`)
	self, _ := filepath.Abs(".")
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if abs, _ := filepath.Abs(path); d.IsDir() && abs == self {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := epoll.Find(b); m != nil {
				t.Errorf("%s calls %s: drive an evloop.Poller instead", path, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
