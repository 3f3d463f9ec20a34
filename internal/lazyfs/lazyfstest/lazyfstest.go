// Package lazyfstest is what a test of the crash faults needs of the
// machine: LazyFS installed (make test installs it,
// scripts/install-lazyfs.sh), /dev/fuse and root to mount it.
package lazyfstest

import (
	"os"
	"testing"

	"storebench/internal/lazyfs"
)

// Need fails the test where LazyFS cannot mount here, never skips it: no
// install step can give /dev/fuse or root, and a crash test that passes
// unrun would hide a broken install.
func Need(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("crash tests need /dev/fuse to mount LazyFS: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("crash tests need root to mount LazyFS (running as uid %d)", os.Geteuid())
	}
	if why := lazyfs.Unavailable(); why != "" {
		t.Fatalf("LazyFS: %s (make test installs it: %s)", why, lazyfs.Install)
	}
}
