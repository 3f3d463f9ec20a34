package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sourceMatches reads the Go files under root's internal/ and cmd/ (test
// files too when tests is set), leaving out the package directory own
// (relative to root, with its subdirectories), and returns each file
// (relative to root) in which re matches, with its first match.
func sourceMatches(t *testing.T, root string, re *regexp.Regexp, own string, tests bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == own {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := re.Find(b); m != nil {
				out[rel] = string(m)
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

// epollCalls are the epoll system calls.
var epollCalls = regexp.MustCompile(`\b(unix|syscall)\.(Epoll(Create1?|Ctl|Wait|Pwait)|SYS_EPOLL_\w+)\b`)

// TestOneEpollLoop keeps epoll in internal/evloop: a client that needs an
// event loop of its own (the HTTP workload's connection per request)
// drives an evloop.Poller rather than a second copy of the epoll calls.
func TestOneEpollLoop(t *testing.T) {
	for path, m := range sourceMatches(t, moduleRoot(t), epollCalls, "internal/evloop", true) {
		t.Errorf("%s calls %s: drive an evloop.Poller instead", path, m)
	}
}

// procFiles are the files of /proc/<pid> that package procstat reads:
// "/proc/%d/stat", "/proc/self/io", or filepath.Join("/proc", pid, "stat").
var procFiles = regexp.MustCompile(`"/proc/(%d|self)/(stat|status|io|smaps_rollup)"|"/proc",[^\n]*"(stat|status|io|smaps_rollup)"\)`)

// TestOneReaderOfProcPID keeps the reading of /proc/<pid>/stat, status,
// io and smaps_rollup in internal/measure/procstat, through procfs: other
// packages call procstat.StatOf, Of or Tree rather than parse those files
// again (tests may, to check the figures).
func TestOneReaderOfProcPID(t *testing.T) {
	for path, m := range sourceMatches(t, moduleRoot(t), procFiles, "internal/measure/procstat", false) {
		t.Errorf("%s reads %s itself: use procstat.StatOf, Of or Tree", path, m)
	}
}

// The two checks catch what they exist to catch, outside the package
// that may do it, and only there: a made-up tree with an epoll call and a
// /proc reader in another package, and the same in the owning packages.
func TestOneReaderChecksCatchACopy(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	epoll := "unix." + "Epoll" // split, so that this file has no call
	write("internal/evloop/loop.go", "package evloop\nvar _ = "+epoll+"Wait\n")
	write("internal/workload/http/events.go", "package http\nvar _ = "+epoll+"Ctl\n")
	write("internal/measure/procstat/stat.go", "package procstat\nvar f = \"/proc/%d/stat\"\n")
	write("cmd/x/main.go", "package main\nvar f = filepath.Join(\"/proc\", pid, \"status\")\n")
	write("internal/server/proc_test.go", "package server\nvar f = \"/proc/self/io\"\n")

	got := sourceMatches(t, root, epollCalls, "internal/evloop", true)
	if len(got) != 1 || got["internal/workload/http/events.go"] != epoll+"Ctl" {
		t.Errorf("epoll calls outside evloop: %v", got)
	}
	got = sourceMatches(t, root, procFiles, "internal/measure/procstat", false)
	if keys := mapKeys(got); !slices.Equal(keys, []string{"cmd/x/main.go"}) {
		t.Errorf("/proc readers outside procstat, tests left out: %v", got)
	}
}

func mapKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
