//go:build linux

// Package sysinfo records the hardware and software a benchmark ran on, so
// every result can be interpreted (and reproduced) later. It reads Linux
// /proc and /sys directly.
package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Unknown is the value of a string field that could not be determined.
const Unknown = "unknown"

// Host describes the machine and software environment. Integer fields that
// could not be determined are 0.
type Host struct {
	Hostname string `json:"hostname"`
	CPUModel string `json:"cpu_model"`
	// LogicalCPUs is runtime.NumCPU(): the CPUs this process may run on
	// (affinity mask), which is what bounds the benchmark, not the number
	// installed.
	LogicalCPUs int `json:"logical_cpus"`
	// PhysicalCores counts distinct (package, core) pairs, so SMT siblings
	// are counted once.
	PhysicalCores int    `json:"physical_cores"`
	MemTotalBytes int64  `json:"mem_total_bytes"`
	Kernel        string `json:"kernel"`
	// OS is PRETTY_NAME from /etc/os-release.
	OS        string `json:"os"`
	GoVersion string `json:"go_version"`
	// ClockSource is the kernel's current clocksource; a slow one (e.g. hpet
	// instead of tsc) inflates the cost of every timestamp taken.
	ClockSource string `json:"clock_source"`
}

// Collect gathers Host. It never fails: anything unreadable is reported as
// Unknown (or 0), because a missing detail must not prevent a benchmark from
// recording its results.
func Collect() Host {
	h := Host{
		Hostname:      Unknown,
		CPUModel:      Unknown,
		LogicalCPUs:   runtime.NumCPU(),
		Kernel:        Unknown,
		OS:            Unknown,
		GoVersion:     runtime.Version(),
		ClockSource:   Unknown,
		PhysicalCores: physicalCoresSysfs(),
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		h.Hostname = name
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		model, cores := parseCPUInfo(b)
		if model != "" {
			h.CPUModel = model
		}
		if h.PhysicalCores == 0 {
			h.PhysicalCores = cores
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		h.MemTotalBytes = parseMemTotal(b)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		if r := unix.ByteSliceToString(uts.Release[:]); r != "" {
			h.Kernel = r
		}
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		if name := parseOSRelease(b); name != "" {
			h.OS = name
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		if cs := strings.TrimSpace(string(b)); cs != "" {
			h.ClockSource = cs
		}
	}
	return h
}

// physicalCoresSysfs counts distinct (physical_package_id, core_id) pairs in
// the CPU topology in sysfs; it returns 0 when the topology is unavailable.
// sysfs is preferred to /proc/cpuinfo because cpuinfo lacks core ids on
// several architectures (e.g. arm64).
func physicalCoresSysfs() int {
	dirs, err := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology")
	if err != nil || len(dirs) == 0 {
		return 0
	}
	cores := make(map[[2]string]bool)
	for _, d := range dirs {
		pkg, err1 := os.ReadFile(filepath.Join(d, "physical_package_id"))
		core, err2 := os.ReadFile(filepath.Join(d, "core_id"))
		if err1 != nil || err2 != nil {
			continue // offline CPUs have no topology
		}
		cores[[2]string{strings.TrimSpace(string(pkg)), strings.TrimSpace(string(core))}] = true
	}
	return len(cores)
}

// parseCPUInfo returns the CPU model name and the number of distinct
// (physical id, core id) pairs in /proc/cpuinfo (0 when those are absent).
func parseCPUInfo(b []byte) (model string, cores int) {
	pairs := make(map[[2]string]bool)
	var phys, core string
	flush := func() {
		if core != "" {
			pairs[[2]string{phys, core}] = true
		}
		phys, core = "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush() // a blank line ends one processor's block
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		// x86 uses "model name"; other architectures name it differently.
		case "model name", "Model", "cpu model", "Hardware":
			if model == "" && v != "" {
				model = v
			}
		case "physical id":
			phys = v
		case "core id":
			core = v
		}
	}
	flush()
	return model, len(pairs)
}

// parseMemTotal returns MemTotal from /proc/meminfo in bytes, 0 if absent.
func parseMemTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemTotal" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// parseOSRelease returns PRETTY_NAME from an os-release file, with the
// shell-style quoting the format allows removed.
func parseOSRelease(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k != "PRETTY_NAME" {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			quote := v[0]
			v = v[1 : len(v)-1]
			if quote == '"' {
				// Only double quotes allow backslash escapes in os-release.
				v = unescapeBackslashes(v)
			}
		}
		return v
	}
	return ""
}

func unescapeBackslashes(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// Storage describes where a path's data lives: its filesystem, backing
// device and capacity.
type Storage struct {
	// Path is the absolute path examined, with symlinks in its existing part
	// resolved, so MountPoint is always a prefix of it.
	Path       string `json:"path"`
	Filesystem string `json:"filesystem"`
	// Device is the mount source as the kernel reports it (e.g. /dev/nvme0n1p2,
	// or tmpfs / overlay for virtual filesystems).
	Device     string `json:"device"`
	MountPoint string `json:"mount_point"`
	// Rotational is whether the backing disk is a spinning disk; nil when
	// the filesystem has no single block device (tmpfs, overlay, network).
	Rotational *bool `json:"rotational,omitempty"`
	TotalBytes int64 `json:"total_bytes"`
	// FreeBytes is the space available to unprivileged users (f_bavail),
	// excluding blocks reserved for root, since that is what a benchmark can
	// actually fill.
	FreeBytes int64 `json:"free_bytes"`
}

// StorageOf describes the filesystem that holds path. The path need not
// exist yet (a benchmark's data directory usually doesn't): the nearest
// existing ancestor is examined instead. Nothing is created.
func StorageOf(path string) (Storage, error) {
	resolved, existing, err := resolve(path)
	if err != nil {
		return Storage{}, fmt.Errorf("sysinfo: resolving %s: %w", path, err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Storage{}, fmt.Errorf("sysinfo: reading mount table: %w", err)
	}
	m, ok := findMount(parseMountinfo(mountinfo), resolved)
	if !ok {
		return Storage{}, fmt.Errorf("sysinfo: no mount found for %s", resolved)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(existing, &fs); err != nil {
		return Storage{}, fmt.Errorf("sysinfo: statfs %s: %w", existing, err)
	}
	unit := fs.Frsize
	if unit <= 0 {
		unit = fs.Bsize
	}
	return Storage{
		Path:       resolved,
		Filesystem: m.fsType,
		Device:     m.source,
		MountPoint: m.mountPoint,
		Rotational: rotational(m),
		TotalBytes: int64(fs.Blocks) * unit,
		FreeBytes:  int64(fs.Bavail) * unit,
	}, nil
}

// resolve makes path absolute and resolves symlinks in its longest existing
// prefix. It returns the full resolved path and the existing ancestor.
func resolve(path string) (resolved, existing string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	existing, rest := abs, ""
	for {
		if _, err := os.Stat(existing); err == nil {
			break
		} else if !os.IsNotExist(err) {
			return "", "", err
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", "", fmt.Errorf("no existing ancestor of %s", abs)
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(real, rest), real, nil
}

type mount struct {
	devMajor, devMinor int
	mountPoint         string
	fsType, source     string
}

// parseMountinfo parses /proc/<pid>/mountinfo (proc(5)): field 3 is
// major:minor, field 5 the mount point, then optional fields up to a lone
// "-", then filesystem type and mount source. Malformed lines are skipped.
func parseMountinfo(b []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20) // long option strings exist (overlay lowerdirs)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			continue
		}
		m := mount{
			mountPoint: unescapeOctal(f[4]),
			fsType:     f[sep+1],
			source:     unescapeOctal(f[sep+2]),
			devMajor:   -1,
			devMinor:   -1,
		}
		if maj, min, ok := strings.Cut(f[2], ":"); ok {
			a, err1 := strconv.Atoi(maj)
			b, err2 := strconv.Atoi(min)
			if err1 == nil && err2 == nil {
				m.devMajor, m.devMinor = a, b
			}
		}
		out = append(out, m)
	}
	return out
}

// unescapeOctal undoes the kernel's \ooo escaping of space, tab, newline and
// backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			sb.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// findMount returns the mount whose mount point is the longest
// path-component prefix of path. Among equally long matches the last one
// wins, because a later mount on the same point hides the earlier ones.
func findMount(mounts []mount, path string) (mount, bool) {
	var best mount
	found := false
	for _, m := range mounts {
		if !underMount(path, m.mountPoint) {
			continue
		}
		if !found || len(m.mountPoint) >= len(best.mountPoint) {
			best, found = m, true
		}
	}
	return best, found
}

// underMount reports whether path is mp or inside it, comparing whole path
// components so /data does not match /database.
func underMount(path, mp string) bool {
	if mp == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == mp || strings.HasPrefix(path, mp+"/")
}

// rotational reads queue/rotational of the whole disk behind a mount, found
// first through the mount's device number and otherwise through its /dev
// source (needed for btrfs, whose mounts carry anonymous device numbers).
func rotational(m mount) *bool {
	var candidates []string
	if m.devMajor > 0 {
		candidates = append(candidates, fmt.Sprintf("/sys/dev/block/%d:%d", m.devMajor, m.devMinor))
	}
	if strings.HasPrefix(m.source, "/dev/") {
		if dev, err := filepath.EvalSymlinks(m.source); err == nil {
			candidates = append(candidates, "/sys/class/block/"+filepath.Base(dev))
		}
	}
	for _, c := range candidates {
		dir, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		// A partition has no queue/ of its own; the disk is its parent.
		if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
			dir = filepath.Dir(dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, "queue", "rotational"))
		if err != nil {
			continue
		}
		switch strings.TrimSpace(string(b)) {
		case "0":
			v := false
			return &v
		case "1":
			v := true
			return &v
		}
	}
	return nil
}
