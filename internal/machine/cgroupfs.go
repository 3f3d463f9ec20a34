//go:build linux

package machine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The cgroup v1 controllers a group uses.
const (
	ctrlCPU     = "cpu"
	ctrlCPUAcct = "cpuacct"
	ctrlCPUSet  = "cpuset"
	ctrlMemory  = "memory"
	ctrlBlkio   = "blkio"
)

// ParentName is the directory storebench's groups live in, under each
// controller's mount: /sys/fs/cgroup/memory/storebench/<run>-<shape>.
const ParentName = "storebench"

// mountInfo is one line of /proc/self/mountinfo.
type mountInfo struct {
	dev        string // major:minor
	root       string // the mount's root within its file system
	mountPoint string
	fsType     string
	source     string
	superOpts  []string
}

// readMountinfo parses /proc/self/mountinfo (proc(5)): field 3 is
// major:minor, 4 the root, 5 the mount point, then optional fields up to
// a lone "-", then the type, the source and the super options.
func readMountinfo() ([]mountInfo, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	var out []mountInfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
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
		m := mountInfo{dev: f[2], root: unescape(f[3]), mountPoint: unescape(f[4]), fsType: f[sep+1], source: unescape(f[sep+2])}
		if sep+3 < len(f) {
			m.superOpts = strings.Split(f[sep+3], ",")
		}
		out = append(out, m)
	}
	return out, nil
}

// unescape undoes mountinfo's \ooo escapes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				sb.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// hierarchies maps each mounted cgroup v1 controller to its mount point
// (/sys/fs/cgroup/memory; cpu and cpuacct share one when co-mounted), the
// first mount of each; v2 says whether a cgroup2 hierarchy with
// controllers is mounted (a v2-only machine, which this package does not
// drive yet).
func hierarchies() (v1 map[string]string, v2 bool, err error) {
	ms, err := readMountinfo()
	if err != nil {
		return nil, false, err
	}
	v1 = map[string]string{}
	for _, m := range ms {
		switch m.fsType {
		case "cgroup":
			for _, o := range m.superOpts {
				switch o {
				case ctrlCPU, ctrlCPUAcct, ctrlCPUSet, ctrlMemory, ctrlBlkio:
					if _, ok := v1[o]; !ok {
						v1[o] = m.mountPoint
					}
				}
			}
		case "cgroup2":
			if b, err := os.ReadFile(filepath.Join(m.mountPoint, "cgroup.controllers")); err == nil && strings.TrimSpace(string(b)) != "" {
				v2 = true
			}
		}
	}
	return v1, v2, nil
}

// isMountPoint reports whether dir is where some cgroup v1 hierarchy is
// mounted.
func isCgroupMount(dir string) bool {
	v1, _, err := hierarchies()
	if err != nil {
		return false
	}
	for _, mp := range v1 {
		if mp == dir {
			return true
		}
	}
	return false
}

// writeFile writes v to a cgroup file in one write(2), as cgroupfs wants,
// and returns the kernel's error unwrapped enough to read ("write
// /sys/fs/cgroup/...: no such device").
func writeFile(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(v))
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func readInt(path string) (int64, error) {
	s, err := readTrim(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// memory.limit_in_bytes of an unlimited group is 2^63-4096, which
		// fits; anything else unparsable is an error.
		return 0, fmt.Errorf("%s: %q is not a number", path, s)
	}
	return n, nil
}

// readKeyed reads a "key value" per line file (memory.stat, cpu.stat,
// memory.oom_control).
func readKeyed(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[f[0]] = n
		}
	}
	return out, nil
}

// procsOf lists the processes in a cgroup directory (cgroup.procs).
func procsOf(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// addPID writes pid to dir's cgroup.procs: the process with all its
// threads moves into the group, and what it forks from then on starts
// there.
func addPID(dir string, pid int) error {
	err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
	if errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pid %d is gone", pid)
	}
	return err
}

// removeTimeout bounds how long removing a group waits for its
// processes to leave (an exiting process stays in cgroup.procs until it
// is reaped) and its directory to go.
const removeTimeout = 5 * time.Second

// removeGroup moves every process left in dir to root (the hierarchy's
// root group) and removes dir, retrying until removeTimeout: rmdir fails
// with EBUSY while a process is still there. A missing dir is not an
// error.
func removeGroup(dir, root string) error {
	deadline := time.Now().Add(removeTimeout)
	for {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		pids, _ := procsOf(dir)
		for _, pid := range pids {
			_ = addPID(root, pid) // a process exiting meanwhile is fine
		}
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if time.Now().After(deadline) {
			left, _ := procsOf(dir)
			return fmt.Errorf("removing cgroup %s: %w (after %s; processes still in it: %v)", dir, err, removeTimeout, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
