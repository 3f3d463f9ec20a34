//go:build linux

package machine

import (
	"fmt"
	"path/filepath"

	"storebench/internal/measure/procstat"
)

// OwnMemory is storebench's own memory in a group whose processes are an
// embedded engine's worker (the Go runtime, the load generator, its
// histograms: everything but the engine), measured with the engine
// closed and added to the group's memory limit (Group.AddOwnMemory), so
// that a memory=SIZE shape leaves SIZE to the engine.
type OwnMemory struct {
	// Bytes is the group's memory use then (memory.usage_in_bytes: what
	// the kernel compares with the limit), Anon and Cache its anonymous
	// and page-cache parts (memory.stat).
	Bytes, Anon, Cache int64
	// Limit is the memory limit written: the shape's memory plus Bytes.
	Limit int64
	// Resident is the group's processes' resident memory then (their RSS,
	// summed: anonymous and mapped files, the executable's pages among
	// them): what they hold, wherever the kernel charged it.
	Resident int64
	// Moved says the kernel moved the charge of a process's memory with
	// it when it joined (memory.move_charge_at_immigrate took): then
	// Bytes holds what the processes allocated before they joined. Newer
	// kernels removed charge moving (the file stays, refusing any value
	// but 0): a process's memory from before it joined stays charged where
	// it was, outside the group and its limit, and Bytes is what it was
	// charged for since.
	Moved bool
}

// AddOwnMemory measures the group's memory now and raises its memory
// limit to the shape's memory plus that amount, returning both. Call it
// once the processes whose memory is storebench's joined the group and
// before the engine opens: what the group holds then is storebench's,
// and the shape's memory is left whole to the engine. A shape without a
// memory limit (none, or a cache shape: CacheHold sets its limit at every
// step from the group's memory outside the page cache, storebench's
// included) sets nothing and returns a zero OwnMemory. Group.Own returns
// it afterwards.
func (g *Group) AddOwnMemory() (OwnMemory, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shape.Memory == 0 {
		return OwnMemory{}, nil
	}
	dir, err := g.memoryDir()
	if err != nil {
		return OwnMemory{}, err
	}
	fail := func(err error) (OwnMemory, error) {
		return OwnMemory{}, fmt.Errorf("machine %s: measuring storebench's own memory: %w", g.shape.Title(), err)
	}
	var own OwnMemory
	if own.Bytes, err = readInt(filepath.Join(dir, "memory.usage_in_bytes")); err != nil {
		return fail(err)
	}
	st, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return fail(err)
	}
	pick := func(name string) int64 {
		if v, ok := st["total_"+name]; ok {
			return v
		}
		return st[name]
	}
	own.Anon, own.Cache = pick("rss"), pick("cache")
	pids, err := procsOf(dir)
	if err != nil {
		return fail(err)
	}
	for _, pid := range pids {
		p, err := procstat.Of(pid)
		if err != nil && procstat.Alive(pid) {
			return fail(err)
		}
		own.Resident += p.RSSBytes // 0 for one gone meanwhile
	}
	// Absent (a kernel that dropped the file) or refused (one that
	// keeps it but moves nothing) reads as not moved.
	mv, _ := readInt(filepath.Join(dir, "memory.move_charge_at_immigrate"))
	own.Moved = mv != 0
	own.Limit = g.shape.Memory + own.Bytes
	if err := setMemoryLimit(dir, own.Limit); err != nil {
		return OwnMemory{}, fmt.Errorf("machine %s: raising the memory limit to %s (the shape's %s and storebench's own %s): %w",
			g.shape.Title(), FormatSize(own.Limit), FormatSize(g.shape.Memory), FormatSize(own.Bytes), err)
	}
	g.own = own
	return own, nil
}

// Own is what AddOwnMemory measured and set; zero before it ran, or on a
// shape without a memory limit.
func (g *Group) Own() OwnMemory {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.own
}
