//go:build linux

package machine

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// helperAlloc, once told to go, allocates size bytes and touches every
// page (memory charged to the group it is in by then), says "ok", and
// holds them until its stdin closes.
func helperAlloc(size int64, waitGo func()) int {
	waitGo()
	b := make([]byte, size)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	fmt.Println("ok")
	_, _ = io.Copy(io.Discard, os.Stdin)
	sink.Add(uint64(b[len(b)/2]))
	return 0
}

// TestAddOwnMemoryRaisesTheLimit: a process that allocates 16 MiB after it
// joined a memory=64MiB group has that memory charged to the group;
// AddOwnMemory measures the group's use (at least the 16 MiB) and the
// kernel then holds the group to 64 MiB plus exactly that, the process's
// resident memory (at least the 16 MiB) said beside it. Shapes without a
// memory limit (a cache shape, a CPU limit alone) set nothing.
func TestAddOwnMemoryRaisesTheLimit(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyMemory, KeyCPUs)
	const shape, alloc = int64(64 << 20), int64(16 << 20)
	g := newGroup(t, "memory=64MiB", dir)
	c, _ := startHelper(t, "alloc", fmt.Sprintf("HELPER_SIZE=%d", alloc))
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(c.in, "go"); err != nil {
		t.Fatal(err)
	}
	if l := c.line(30 * time.Second); l != "ok" {
		t.Fatalf("the helper: %q", l)
	}
	own, err := g.AddOwnMemory()
	if err != nil {
		t.Fatal(err)
	}
	s := mustStats(t, g)
	t.Logf("own memory %.2f MiB (anon %.2f, cache %.2f), resident %.2f MiB, moved %v; limit %.2f MiB, the kernel's %.2f MiB",
		mib(own.Bytes), mib(own.Anon), mib(own.Cache), mib(own.Resident), own.Moved, mib(own.Limit), mib(s.MemoryLimit))
	if own.Bytes < alloc || own.Anon < alloc || own.Resident < alloc {
		t.Errorf("own memory %d (anonymous %d, resident %d): want at least the %d bytes allocated in the group", own.Bytes, own.Anon, own.Resident, alloc)
	}
	if own.Limit != shape+own.Bytes || s.MemoryLimit != own.Limit {
		t.Errorf("limit set %d, the kernel's %d: want the shape's %d + own %d", own.Limit, s.MemoryLimit, shape, own.Bytes)
	}
	if g.Own() != own {
		t.Errorf("Own() = %+v, want %+v", g.Own(), own)
	}
	for _, sh := range []string{"cache=0.25", "cpus=0.5"} {
		t.Run(strings.ReplaceAll(sh, "=", "-"), func(t *testing.T) {
			g := newGroup(t, sh, dir)
			before := mustStats(t, g).MemoryLimit
			own, err := g.AddOwnMemory()
			if err != nil || own != (OwnMemory{}) {
				t.Fatalf("AddOwnMemory on %s: %+v, %v; want nothing set", sh, own, err)
			}
			if after := mustStats(t, g).MemoryLimit; after != before {
				t.Errorf("%s: the limit went from %d to %d", sh, before, after)
			}
		})
	}
}
