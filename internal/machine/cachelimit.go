//go:build linux

package machine

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// CacheLimit is what Group.SetCacheLimit set for one step.
type CacheLimit struct {
	// DataBytes is the data's size on disk the limit was set from.
	DataBytes int64
	// Own is the group's memory outside the page cache then (its
	// processes' anonymous memory and kernel memory charged to it).
	Own int64
	// Budget is Cache × DataBytes: the page cache the group may hold.
	Budget int64
	// Limit is Own + Budget, the memory limit written (0: none, while
	// the data directory is empty).
	Limit int64
}

// HoldEvery is how often a CacheHold follows the group's own memory.
const HoldEvery = 50 * time.Millisecond

// CacheHold keeps a cache=R group's page cache at R × its data's size
// through a step, as both change: every HoldEvery it sets the limit again
// to the processes' memory outside the page cache then plus R × the
// data's size (measured again every DataEvery). The group's OOM killer
// is off (New sets memory.oom_control's oom_kill_disable for a cache
// shape), so a process whose allocation finds no page cache left to
// reclaim waits, at most HoldEvery, for the limit to rise, instead of
// being killed: what the shape limits is the cache, not the engine's own
// memory. The ratio holds at every moment of a step: a database that
// grows (a load) has a budget that grows with it.
type CacheHold struct {
	g    *Group
	size func() int64
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	first CacheLimit
	max   int64 // the highest limit set
	maxB  int64 // the highest budget
	err   error
}

// DataEvery is how often a CacheHold measures the data's size again.
const DataEvery = time.Second

// HoldCache sets the limit for the data's size now (size(): its bytes on
// disk) and follows the group's own memory and the data's size until
// Stop. A shape without Cache sets nothing and follows nothing.
func (g *Group) HoldCache(size func() int64) (*CacheHold, error) {
	cl, err := g.SetCacheLimit(size())
	if err != nil {
		return nil, err
	}
	h := &CacheHold{g: g, size: size, first: cl, max: cl.Limit, maxB: cl.Budget, stop: make(chan struct{}), done: make(chan struct{})}
	if !g.shape.CacheShape() {
		close(h.done)
		return h, nil
	}
	go h.follow(cl.DataBytes)
	return h, nil
}

func (h *CacheHold) follow(data int64) {
	defer close(h.done)
	tick := time.NewTicker(HoldEvery)
	defer tick.Stop()
	measured := time.Now()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		if time.Since(measured) >= DataEvery {
			data, measured = h.size(), time.Now()
		}
		cl, err := h.g.SetCacheLimit(data)
		h.mu.Lock()
		if err != nil && h.err == nil {
			h.err = err
		}
		h.max, h.maxB = max(h.max, cl.Limit), max(h.maxB, cl.Budget)
		h.mu.Unlock()
		// An error (the kernel could not reclaim down to a limit its
		// processes' memory had just grown past) is kept, and the next
		// tick tries again: giving up would leave a waiting process
		// waiting.
	}
}

// Stop ends the hold and lifts the limit (between steps nothing follows
// the group's memory, and with its OOM killer off a process must not
// wait on a limit no one raises; the next step's hold sets it again). It
// returns the first limit, the highest limit and budget set, and the
// first error.
func (h *CacheHold) Stop() (first CacheLimit, highest, highestBudget int64, err error) {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	if h.g.shape.CacheShape() {
		if lerr := h.g.liftLimit(); lerr != nil {
			err = lerr
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		err = h.err
	}
	return h.first, h.max, h.maxB, err
}

// SetCacheLimit sets the memory limit of a group whose shape keeps a
// ratio of page cache to data (Shape.Cache): its memory outside the page
// cache now plus Cache × dataBytes (at least MinMemory), or no limit when
// dataBytes is 0. Lowering the limit makes the kernel reclaim the group's
// page cache down to it now; an error says the kernel could not. A shape
// without Cache sets nothing.
func (g *Group) SetCacheLimit(dataBytes int64) (CacheLimit, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := CacheLimit{DataBytes: dataBytes}
	if !g.shape.CacheShape() {
		return out, nil
	}
	dir, err := g.memoryDir()
	if err != nil {
		return out, err
	}
	// The group's own memory can grow between reading it and writing the
	// limit; the kernel then cannot reclaim down to a limit below it
	// (EBUSY). Read again and retry: the race, not the limit, failed.
	for try := 1; ; try++ {
		out, err = g.cacheLimitOnce(dir, dataBytes)
		if !errors.Is(err, syscall.EBUSY) || try == 5 {
			return out, err
		}
	}
}

func (g *Group) cacheLimitOnce(dir string, dataBytes int64) (CacheLimit, error) {
	out := CacheLimit{DataBytes: dataBytes}
	usage, err := readInt(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return out, fmt.Errorf("machine %s: %w", g.shape.Title(), err)
	}
	st, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return out, fmt.Errorf("machine %s: %w", g.shape.Title(), err)
	}
	cache, ok := st["total_cache"]
	if !ok {
		cache = st["cache"]
	}
	out.Own = max(usage-cache, 0)
	limit := int64(-1) // none
	switch {
	case g.shape.CacheBytes != 0:
		out.Budget = g.shape.CacheBytes
	case dataBytes > 0:
		out.Budget = int64(math.Round(g.shape.Cache * float64(dataBytes)))
	}
	if out.Budget > 0 {
		out.Limit = max(out.Own+out.Budget, MinMemory)
		limit = out.Limit
	}
	if err := setMemoryLimit(dir, limit); err != nil {
		return out, fmt.Errorf("machine %s: memory limit %s (own memory %s + a cache of %s): %w",
			g.shape.Title(), FormatSize(out.Limit), FormatSize(out.Own), FormatSize(out.Budget), err)
	}
	return out, nil
}

// memoryDir is the group's memory controller directory (g.mu held).
func (g *Group) memoryDir() (string, error) {
	if g.closed {
		return "", fmt.Errorf("machine %s: set its memory limit: the group is closed", g.shape.Title())
	}
	i := slices.IndexFunc(g.dirs, func(d cgDir) bool { return slices.Contains(d.Ctrls, ctrlMemory) })
	if i < 0 {
		return "", fmt.Errorf("machine %s: set its memory limit: the group has no memory controller", g.shape.Title())
	}
	return g.dirs[i].Dir, nil
}

// liftLimit removes a cache shape's memory limit (between steps).
func (g *Group) liftLimit() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	dir, err := g.memoryDir()
	if err != nil {
		return err
	}
	return setMemoryLimit(dir, -1)
}

// setMemoryLimit writes a group's memory limit (-1: none), and its
// memory+swap limit where the kernel accounts swap, in the order the
// kernel accepts (memory+swap may never be below memory).
func setMemoryLimit(dir string, limit int64) error {
	mem := filepath.Join(dir, "memory.limit_in_bytes")
	memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes")
	v := strconv.FormatInt(limit, 10)
	_, swErr := readInt(memsw)
	hasSwap := swErr == nil
	cur, err := readInt(mem)
	if err != nil {
		return err
	}
	lowering := limit >= 0 && limit < cur
	if hasSwap && !lowering {
		if err := writeFile(memsw, v); err != nil {
			return err
		}
	}
	if err := writeFile(mem, v); err != nil {
		return err
	}
	if hasSwap && lowering {
		return writeFile(memsw, v)
	}
	return nil
}
