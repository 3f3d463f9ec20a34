// Package powerfstest is what a test of the crash faults needs of the
// machine: /dev/fuse and root, to mount storebench's power-loss file
// system (package powerfs).
package powerfstest

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/powerfs"
)

// Need fails the test where the file system cannot mount here, never
// skips it: no install step can give /dev/fuse or root, and a crash test
// that passes unrun would hide it.
func Need(t testing.TB) {
	t.Helper()
	if why := powerfs.Unavailable(); why != "" {
		t.Fatalf("crash tests need the power-loss file system: %s", why)
	}
}

// ServerMount returns the mount point pid serves when it is a powerfs
// server ("": it is not), read from its environment.
func ServerMount(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, powerfs.ServeEnv+"="); ok {
			var c struct{ Dir string }
			if json.Unmarshal([]byte(v), &c) == nil {
				return c.Dir
			}
		}
	}
	return ""
}
