//go:build linux

// Package machine gives a process tree the shape of another machine —
// fewer CPUs, less memory (page cache included), a slower disk — with the
// kernel's cgroup v1 controllers, and reads back what the tree used from
// the group's own counters (issue 35).
//
// A Shape is the limits (Parse, String, Label). Can and Shape.Check say
// which limits this machine can enforce for data in a directory, and why
// not: a step whose shape cannot be enforced is "n/a: reason", never run
// without it. New creates the groups (one per controller under
// <mount>/storebench/), Group.Add and AddTree put processes in them,
// Group.Stats reads their counters and Group.Close removes them. Each group
// is leased like a managed server (a file under storebench's home naming
// its directories and its owner, by pid and start time), so Reap removes
// the groups of a storebench that died (kill -9) before it closed them.
//
// The package is a building block: it imports nothing of storebench but
// home (where leases live) and measure/procstat (process start times).
package machine

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"storebench/internal/measure/procstat"
)

// The keys of the limits a Shape can set, in the order Label writes them.
const (
	KeyCPUs   = "cpus"
	KeyCPUSet = "cpuset"
	KeyMemory = "memory"
	KeyCache  = "cache"
	// KeyAtN goes with cache=SIZE: the size of data the budget is for
	// (not a limit of its own; Shape.AtN).
	KeyAtN      = "at_n"
	KeyDiskIOPS = "disk_iops"
	KeyDiskMBps = "disk_mbps"
)

// Limits are the limit keys, in Label order.
var Limits = []string{KeyCPUs, KeyCPUSet, KeyMemory, KeyCache, KeyDiskIOPS, KeyDiskMBps}

// Bounds on the limits, checked by Parse and Shape.Validate.
const (
	// MinMemory is the smallest memory limit: below it a Go worker or a
	// server barely starts, and the figure would be of the limit, not of
	// the engine.
	MinMemory = 32 << 20
	// MinCPUs is the smallest CPU share: the kernel's smallest CFS quota
	// (1 ms) over the period used here (100 ms).
	MinCPUs = 0.01
	// MaxCache bounds the cache ratio (page cache per byte of data).
	MaxCache = 100
	// MinDiskMBps is the slowest disk: one 1 MiB I/O would take 10 s.
	MinDiskMBps = 0.1
	// MaxDiskIOPS and MaxDiskMBps bound the disk limits (a limit the
	// kernel's counters can still hold).
	MaxDiskIOPS = 1_000_000_000
	MaxDiskMBps = 1_000_000
)

// MaxCPUShares is the cpu.shares of a group with a CPU limit and of
// storebench's parent group: the kernel's highest weight, so that the
// group gets its quota before the machine's other processes get theirs.
const MaxCPUShares = 262144

// CFSPeriodMicros is the CFS period the CPU limit is set over: 100 ms, so
// cpus=0.5 is a quota of 50 ms in every 100 ms.
const CFSPeriodMicros = 100_000

// A Shape is a machine's limits on a process tree. A zero field sets no
// limit. The CPU, memory and disk limits are enforced by the kernel
// (cgroup v1 cpu, cpuset, memory and blkio) on every process of the group.
type Shape struct {
	// Name names the shape ("seed000-node"); "" for one given by its
	// limits alone. 1–64 letters, digits, '.', '_' or '-'.
	Name string
	// CPUs is the share of CPU time, in CPUs: a CFS quota of
	// CPUs × 100 ms every 100 ms, spread over whichever CPUs the group may
	// run on (0.5 is half a core's time, 1.5 one and a half cores'). The
	// group's CPUs are its own, as a machine's are: it gets the highest
	// weight (cpu.shares), so that on a busy machine it still gets them
	// before other processes run; the quota caps it.
	CPUs float64
	// CPUSet is the CPUs the group may run on, a list as the kernel writes
	// it ("1", "0-1", "0,2-3"), canonical (sorted ranges), or "" for any.
	// With it the group runs on whole cores of its own and the rest of
	// the machine (the load generator) on the others.
	CPUSet string
	// Memory is the limit on the group's memory in bytes: its processes'
	// anonymous memory and the page cache of the files they read and
	// write (memory.limit_in_bytes counts both), so data larger than it is
	// read from the disk.
	Memory int64
	// Cache, instead of Memory, keeps another machine's ratio of RAM to
	// data: the page cache the group may hold as a share of its data's
	// bytes on disk. At each step's start the group's memory limit
	// becomes its memory outside the page cache then (its processes'
	// own) plus Cache × the data's size then (Group.SetCacheLimit); while
	// the data directory is empty there is no limit. 0.23 is a machine
	// whose RAM left beside its processes caches 23% of its database.
	Cache float64
	// CacheBytes, instead of Cache, is a fixed page-cache budget (another
	// machine's RAM beside its processes, scaled to the data size run
	// here): the limit is the group's own memory plus CacheBytes, from
	// the first step on, following the engine's own memory as with Cache.
	CacheBytes int64
	// AtN, with CacheBytes, says the budget is another machine's at that
	// data size (a seed's n): a run scales it to the largest size it runs
	// (Scaled), so that the seed's ratio of cache to data holds at the
	// top of the ladder. 0: the budget as given.
	AtN float64
	// DiskIOPS is the limit on I/O operations per second, each of reads
	// and writes, on the disk that holds the run's data.
	DiskIOPS int64
	// DiskMBps is the limit on the bytes per second, in MB/s of 10^6
	// bytes, each of reads and writes, on that disk.
	DiskMBps float64
}

// host is what Parse checks a shape against: this machine's CPUs and
// memory.
type host struct {
	CPUs   int   // CPUs this process may run on
	Online []int // online CPU numbers, for cpuset
	Memory int64 // MemTotal
}

var thisHost = sync.OnceValue(func() host {
	h := host{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		h.Online, _ = procstat.ParseCPUList(strings.TrimSpace(string(b)))
	}
	if len(h.Online) == 0 {
		for i := range h.CPUs {
			h.Online = append(h.Online, i)
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						h.Memory = kb << 10
					}
				}
			}
		}
	}
	return h
})

// OnlineCPUs lists this machine's online CPUs, for choosing a CPUSet.
func OnlineCPUs() []int { return slices.Clone(thisHost().Online) }

// Parse reads a shape written as comma-separated key=value limits:
// cpus (a positive number of CPUs, at most this machine's), cpuset (a CPU
// list of this machine's online CPUs, "1" or "0-1"), memory (a size:
// 256MiB, 1GiB, 2G, 1.5GiB; K/M/G/T and KiB/MiB/GiB/TiB are powers of
// 1024, KB/MB/GB/TB powers of 1000, a bare number is bytes; at least 32
// MiB and at most this machine's memory), cache (instead of memory: the
// page cache as a share of the data's size, a bare number, Shape.Cache,
// or a fixed budget, a size, Shape.CacheBytes), disk_iops (a
// whole number) and
// disk_mbps (MB/s of 10^6 bytes), and name (the shape's name). At least
// one limit; each key once. Every error is one line naming the key.
//
//	machine.Parse("cpus=1.5,memory=2GiB,disk_iops=3000,disk_mbps=125")
func Parse(s string) (Shape, error) { return parse(s, thisHost()) }

func parse(s string, h host) (Shape, error) {
	var sh Shape
	fail := func(format string, a ...any) (Shape, error) {
		return Shape{}, fmt.Errorf("machine shape %q: %s", s, fmt.Sprintf(format, a...))
	}
	if strings.TrimSpace(s) == "" {
		return fail("empty: want limits such as cpus=1.5,memory=2GiB,disk_iops=3000,disk_mbps=125")
	}
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		key, val, ok := strings.Cut(item, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" {
			return fail("%q is not key=value (keys: name, %s)", item, strings.Join(Limits, ", "))
		}
		if seen[key] {
			return fail("%s is given twice", key)
		}
		seen[key] = true
		if val == "" {
			return fail("%s has no value", key)
		}
		var err error
		switch key {
		case "name":
			sh.Name = val
		case KeyAtN:
			sh.AtN, err = parseNumber(val)
		case KeyCPUs:
			sh.CPUs, err = parseNumber(val)
		case KeyCPUSet:
			var cpus []int
			cpus, err = procstat.ParseCPUList(val)
			sh.CPUSet = procstat.FormatCPUList(cpus)
		case KeyMemory:
			sh.Memory, err = ParseSize(val)
		case KeyCache:
			// A bare number is a share of the data; a size (with its
			// unit) a fixed budget.
			if strings.IndexFunc(val, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' && r != 'e' }) >= 0 {
				sh.CacheBytes, err = ParseSize(val)
			} else {
				sh.Cache, err = parseNumber(val)
			}
		case KeyDiskIOPS:
			sh.DiskIOPS, err = strconv.ParseInt(val, 10, 64)
			if err != nil {
				err = fmt.Errorf("%q is not a whole number", val)
			}
		case KeyDiskMBps:
			sh.DiskMBps, err = parseNumber(val)
		default:
			return fail("unknown key %q (keys: name, %s)", key, strings.Join(Limits, ", "))
		}
		if err != nil {
			return fail("%s: %v", key, err)
		}
	}
	if err := sh.validate(h, seen); err != nil {
		return fail("%v", err)
	}
	if !sh.Limited() {
		return fail("no limit: give at least one of %s", strings.Join(Limits, ", "))
	}
	return sh, nil
}

// parseNumber reads a finite decimal number.
func parseNumber(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(v, "xXpP_") {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	return f, nil
}

// Validate checks s against this machine, as Parse does: a Shape built in
// code (a built-in machine) is checked before it is used.
func (s Shape) Validate() error {
	return s.validate(thisHost(), map[string]bool{KeyCPUs: s.CPUs != 0, KeyCPUSet: s.CPUSet != "",
		KeyMemory: s.Memory != 0, KeyCache: s.CacheShape(), KeyDiskIOPS: s.DiskIOPS != 0, KeyDiskMBps: s.DiskMBps != 0, "name": s.Name != ""})
}

func (s Shape) validate(h host, given map[string]bool) error {
	if given["name"] && !validName(s.Name) {
		return fmt.Errorf("name %q: want 1–64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if given[KeyCPUs] {
		switch {
		case math.IsNaN(s.CPUs) || s.CPUs <= 0:
			return fmt.Errorf("cpus=%s: want more than 0", fmtFloat(s.CPUs))
		case s.CPUs < MinCPUs:
			return fmt.Errorf("cpus=%s is below %s, the smallest CFS quota (1 ms every 100 ms)", fmtFloat(s.CPUs), fmtFloat(MinCPUs))
		case s.CPUs > float64(h.CPUs):
			return fmt.Errorf("cpus=%s is more than this machine's %d CPUs", fmtFloat(s.CPUs), h.CPUs)
		}
	}
	if given[KeyCPUSet] {
		cpus, err := procstat.ParseCPUList(s.CPUSet)
		if err != nil {
			return fmt.Errorf("cpuset: %v", err)
		}
		for _, c := range cpus {
			if !slices.Contains(h.Online, c) {
				return fmt.Errorf("cpuset=%s: CPU %d is not one of this machine's online CPUs (%s)", s.CPUSet, c, procstat.FormatCPUList(h.Online))
			}
		}
		if s.CPUs > float64(len(cpus)) {
			return fmt.Errorf("cpus=%s is more than the %d CPU(s) of cpuset=%s", fmtFloat(s.CPUs), len(cpus), s.CPUSet)
		}
	}
	if given[KeyMemory] {
		switch {
		case s.Memory < MinMemory:
			return fmt.Errorf("memory=%s is below the smallest limit, 32MiB", FormatSize(s.Memory))
		case h.Memory > 0 && s.Memory > h.Memory:
			return fmt.Errorf("memory=%s is more than this machine's %s", FormatSize(s.Memory), FormatSize(h.Memory))
		}
	}
	if given[KeyAtN] {
		switch {
		case s.CacheBytes == 0:
			return fmt.Errorf("at_n=%s goes with cache=SIZE (the data size that budget is for)", fmtFloat(s.AtN))
		case math.IsNaN(s.AtN) || s.AtN < 1:
			return fmt.Errorf("at_n=%s: want a data size of 1 or more", fmtFloat(s.AtN))
		}
	}
	if given[KeyCache] && s.CacheBytes != 0 {
		switch {
		case s.CacheBytes < 1<<20 && s.AtN == 0:
			return fmt.Errorf("cache=%s is below 1MiB", FormatSize(s.CacheBytes))
		case h.Memory > 0 && s.CacheBytes > h.Memory && s.AtN == 0:
			return fmt.Errorf("cache=%s is more than this machine's %s", FormatSize(s.CacheBytes), FormatSize(h.Memory))
		case given[KeyMemory]:
			return fmt.Errorf("cache=%s and memory=%s: give one (cache sets the memory limit from the engine's own memory)", FormatSize(s.CacheBytes), FormatSize(s.Memory))
		}
	} else if given[KeyCache] {
		switch {
		case math.IsNaN(s.Cache) || s.Cache <= 0 || s.Cache > MaxCache:
			return fmt.Errorf("cache=%s: want more than 0 and at most %d (the page cache as a share of the data's size)", fmtFloat(s.Cache), MaxCache)
		case given[KeyMemory]:
			return fmt.Errorf("cache=%s and memory=%s: give one (cache sets the memory limit at each step from the data's size)", fmtFloat(s.Cache), FormatSize(s.Memory))
		}
	}
	if given[KeyDiskIOPS] && (s.DiskIOPS < 1 || s.DiskIOPS > MaxDiskIOPS) {
		return fmt.Errorf("disk_iops=%d: want 1..%d", s.DiskIOPS, MaxDiskIOPS)
	}
	if given[KeyDiskMBps] && (math.IsNaN(s.DiskMBps) || s.DiskMBps < MinDiskMBps || s.DiskMBps > MaxDiskMBps) {
		return fmt.Errorf("disk_mbps=%s: want %s..%d (MB/s of 10^6 bytes)", fmtFloat(s.DiskMBps), fmtFloat(MinDiskMBps), MaxDiskMBps)
	}
	return nil
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Scaled is s with a budget given at a seed's size (AtN) scaled to the
// largest data size n a run reaches: CacheBytes × n / AtN, checked
// against this machine as Parse checks a budget. A shape without AtN is
// itself.
func (s Shape) Scaled(n float64) (Shape, error) {
	if s.AtN == 0 {
		return s, nil
	}
	if n <= 0 {
		return s, fmt.Errorf("machine %s: cache=%s at_n=%s: the run has no data size to scale it to", s.Title(), FormatSize(s.CacheBytes), fmtFloat(s.AtN))
	}
	c := s
	// At least 1 MiB: a ladder that stops far below the seed's size
	// gets a budget more generous than the seed's ratio (the target's
	// machine says the budget enforced).
	c.CacheBytes = max(int64(math.Round(float64(s.CacheBytes)*n/s.AtN)), 1<<20)
	c.AtN = 0
	if err := c.Validate(); err != nil {
		return s, fmt.Errorf("machine %s scaled to n = %s (cache=%s × %s / %s): %w", s.Title(), fmtFloat(n), FormatSize(s.CacheBytes), fmtFloat(n), fmtFloat(s.AtN), err)
	}
	return c, nil
}

// CacheShape reports whether s limits the page cache alone (cache=R or
// cache=SIZE): its memory limit follows the engine's own memory
// (Group.HoldCache).
func (s Shape) CacheShape() bool { return s.Cache != 0 || s.CacheBytes != 0 }

// Limited reports whether s sets any limit.
func (s Shape) Limited() bool {
	return s.CPUs != 0 || s.CPUSet != "" || s.Memory != 0 || s.CacheShape() || s.DiskIOPS != 0 || s.DiskMBps != 0
}

// Keys lists the limits s sets, in Label order.
func (s Shape) Keys() []string {
	var out []string
	for _, k := range Limits {
		if s.value(k) != "" {
			out = append(out, k)
		}
	}
	return out
}

func (s Shape) value(key string) string {
	switch key {
	case KeyCPUs:
		if s.CPUs != 0 {
			return fmtFloat(s.CPUs)
		}
	case KeyCPUSet:
		return s.CPUSet
	case KeyMemory:
		if s.Memory != 0 {
			return FormatSize(s.Memory)
		}
	case KeyCache:
		if s.CacheBytes != 0 && s.AtN != 0 {
			return FormatSize(s.CacheBytes) + ",at_n=" + fmtFloat(s.AtN)
		}
		if s.CacheBytes != 0 {
			return FormatSize(s.CacheBytes)
		}
		if s.Cache != 0 {
			return fmtFloat(s.Cache)
		}
	case KeyDiskIOPS:
		if s.DiskIOPS != 0 {
			return strconv.FormatInt(s.DiskIOPS, 10)
		}
	case KeyDiskMBps:
		if s.DiskMBps != 0 {
			return fmtFloat(s.DiskMBps)
		}
	}
	return ""
}

// Label is the limits alone, canonical, usable as a step label:
// "cpus=0.5,memory=256MiB". A shape without limits is "unlimited".
func (s Shape) Label() string {
	var parts []string
	for _, k := range Limits {
		if v := s.value(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "unlimited"
	}
	return strings.Join(parts, ",")
}

// String is the shape as Parse reads it: "name=NAME," before the Label
// when it has a name. Parse(s.String()) == s for every valid shape.
func (s Shape) String() string {
	if s.Name != "" {
		return "name=" + s.Name + "," + s.Label()
	}
	return s.Label()
}

// Title is the shape's name, else its label.
func (s Shape) Title() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Label()
}

// CFSQuotaMicros is the CFS quota for s.CPUs over CFSPeriodMicros, or -1
// (none) when s sets no CPU limit.
func (s Shape) CFSQuotaMicros() int64 {
	if s.CPUs == 0 {
		return -1
	}
	return int64(math.Round(s.CPUs * CFSPeriodMicros))
}

// DiskBytesPerSecond is DiskMBps in bytes per second (0 for none).
func (s Shape) DiskBytesPerSecond() int64 { return int64(math.Round(s.DiskMBps * 1e6)) }

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Size units: binary for K/M/G/T and KiB..TiB (as memory is counted and
// as docker -m reads them), decimal for KB..TB.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10},
	{"B", 1},
}

// ParseSize reads a size in bytes: a number (a fraction allowed) and a
// unit, K/M/G/T or KiB/MiB/GiB/TiB (powers of 1024), KB/MB/GB/TB (powers
// of 1000) or B; no unit is bytes. Units are case-insensitive. The result
// must be a whole number of bytes.
func ParseSize(v string) (int64, error) {
	num, mult := v, int64(1)
	for _, u := range sizeUnits {
		if len(v) > len(u.name) && strings.EqualFold(v[len(v)-len(u.name):], u.name) {
			num, mult = strings.TrimSpace(v[:len(v)-len(u.name)]), u.mult
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "eExXpP_+-") {
		return 0, fmt.Errorf("%q is not a size (want e.g. 256MiB, 1GiB, 2G)", v)
	}
	if mult == 1 && !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a size (want e.g. 256MiB, 1GiB, 2G)", v)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size (want e.g. 256MiB, 1GiB, 2G)", v)
	}
	b := f * float64(mult)
	if b >= math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", v)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", v)
	}
	return int64(b), nil
}

// FormatSize writes n bytes exactly, in the shortest of its exact forms:
// 256MiB, 1536MiB, 8GB, 1000.
func FormatSize(n int64) string {
	best := strconv.FormatInt(n, 10)
	if n <= 0 {
		return best
	}
	for _, u := range sizeUnits {
		if u.mult == 1 || len(u.name) == 1 || n%u.mult != 0 {
			continue // K/M/G/T are read but written as KiB/MiB/GiB/TiB
		}
		if s := strconv.FormatInt(n/u.mult, 10) + u.name; len(s) < len(best) {
			best = s
		}
	}
	return best
}
