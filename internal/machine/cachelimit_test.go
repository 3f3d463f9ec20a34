//go:build linux

package machine

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCacheLimitKeepsTheRatio: a cache=0.25 shape sets no limit while
// the data does not exist, then, given the data's size, holds the group's
// page cache to a quarter of it, also when the group reads the data
// again (the kernel reads the rest from the disk).
func TestCacheLimitKeepsTheRatio(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyCache)
	const size = 128 << 20
	g := newGroup(t, "cache=0.25", dir)
	unlimited, err := g.SetCacheLimit(0)
	if err != nil {
		t.Fatal(err)
	}
	if s := mustStats(t, g); unlimited.Limit != 0 || s.MemoryLimit < 1<<50 {
		t.Fatalf("no data yet: limit %d, memory.limit_in_bytes %d: want none", unlimited.Limit, s.MemoryLimit)
	}
	// The data, written and read by a process of the group with no limit:
	// its pages stay charged to the group after it exits.
	runCache(t, g, filepath.Join(dir, "data"), size)
	if s := mustStats(t, g); s.Cache < size/2 {
		t.Fatalf("after writing %d MiB with no limit the group holds %.1f MiB of page cache: the pages were not charged to it", size>>20, mib(s.Cache))
	}
	cl, err := g.SetCacheLimit(size)
	if err != nil {
		t.Fatal(err)
	}
	s := mustStats(t, g)
	t.Logf("cache=0.25 of %d MiB: own %.1f MiB, budget %.1f MiB, limit %.1f MiB (memory.limit_in_bytes %.1f MiB); page cache now %.1f MiB",
		size>>20, mib(cl.Own), mib(cl.Budget), mib(cl.Limit), mib(s.MemoryLimit), mib(s.Cache))
	if cl.Budget != size/4 || cl.Limit != max(cl.Own+cl.Budget, MinMemory) {
		t.Errorf("budget %d, limit %d: want %d and own (%d) + budget", cl.Budget, cl.Limit, size/4, cl.Own)
	}
	if s.MemoryLimit > cl.Limit || s.MemoryLimit < cl.Limit-4096 {
		t.Errorf("memory.limit_in_bytes = %d, want %d (to the page)", s.MemoryLimit, cl.Limit)
	}
	if s.Cache > cl.Limit {
		t.Errorf("the group still holds %.1f MiB of page cache, over its limit of %.1f MiB: lowering the limit did not reclaim it", mib(s.Cache), mib(cl.Limit))
	}
	// Read under the limit: the cache stays under it.
	if err := g.ResetPeak(); err != nil {
		t.Fatal(err)
	}
	before := mustStats(t, g)
	runCache(t, g, filepath.Join(dir, "data"), size)
	after := mustStats(t, g)
	if after.MemoryMaxUsage > cl.Limit+64*4096 {
		t.Errorf("the group's memory peaked at %.1f MiB under a limit of %.1f MiB", mib(after.MemoryMaxUsage), mib(cl.Limit))
	}
	if read := after.DiskReadBytes - before.DiskReadBytes; read < size-cl.Limit {
		t.Errorf("the group read %.1f MiB from the disk, want at least %.1f MiB: its reads were served from a cache over the limit", mib(read), mib(size-cl.Limit))
	}
}

// runCache runs the "cache" helper (write size bytes to path, read them
// twice) in g to its end.
func runCache(t *testing.T, g *Group, path string, size int) {
	t.Helper()
	c, _ := startHelper(t, "cache", "HELPER_FILE="+path, "HELPER_SIZE="+strconv.Itoa(size))
	if err := g.Add(c.pid); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(c.in, "go"); err != nil {
		t.Fatal(err)
	}
	res := c.line(60 * time.Second)
	if err := c.wait(10 * time.Second); err != nil || !strings.HasPrefix(res, "ok ") {
		t.Fatalf("the child: %q, %v", res, err)
	}
}

// TestFixedCacheBudgetHolds: a cache=SIZE shape holds the group's page
// cache to SIZE from the start (no data needed), its limit following the
// process's own memory, and lifts the limit when the hold stops.
func TestFixedCacheBudgetHolds(t *testing.T) {
	dir := dataDir(t)
	needs(t, dir, KeyCache)
	const size, budget = 128 << 20, 32 << 20
	g := newGroup(t, "cache=32MiB", dir)
	h, err := g.HoldCache(func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, g, filepath.Join(dir, "data"), size)
	s := mustStats(t, g)
	first, hi, hiBudget, err := h.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cache=32MiB: first limit %.1f MiB (own %.1f), highest %.1f MiB; after %d MiB written and read twice: page cache %.1f MiB, peak memory %.1f MiB, %.1f MiB read from disk",
		mib(first.Limit), mib(first.Own), mib(hi), size>>20, mib(s.Cache), mib(s.MemoryMaxUsage), mib(s.DiskReadBytes))
	if first.Budget != budget || hiBudget != budget || first.Limit != max(first.Own+budget, MinMemory) {
		t.Errorf("budget %d (highest %d), limit %d: want %d and own (%d) + budget", first.Budget, hiBudget, first.Limit, budget, first.Own)
	}
	if s.Cache > hi {
		t.Errorf("page cache %.1f MiB over the highest limit %.1f MiB", mib(s.Cache), mib(hi))
	}
	if s.DiskReadBytes < size-hi {
		t.Errorf("read %.1f MiB from the disk, want at least %.1f MiB: the reads were served from a cache over the budget", mib(s.DiskReadBytes), mib(size-hi))
	}
	if after := mustStats(t, g); after.MemoryLimit < 1<<50 {
		t.Errorf("after Stop the limit is %d: want none", after.MemoryLimit)
	}
}
