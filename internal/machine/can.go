//go:build linux

package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// controllerOf is the cgroup v1 controller that enforces each limit, and
// the file it is set in.
var controllerOf = map[string]struct{ ctrl, file string }{
	KeyCPUs:     {ctrlCPU, "cpu.cfs_quota_us"},
	KeyCPUSet:   {ctrlCPUSet, "cpuset.cpus"},
	KeyMemory:   {ctrlMemory, "memory.limit_in_bytes"},
	KeyCache:    {ctrlMemory, "memory.limit_in_bytes"},
	KeyDiskIOPS: {ctrlBlkio, "blkio.throttle.write_iops_device"},
	KeyDiskMBps: {ctrlBlkio, "blkio.throttle.write_bps_device"},
}

// throttleFiles are the blkio files each disk limit is written to.
var throttleFiles = map[string][]string{
	KeyDiskIOPS: {"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"},
	KeyDiskMBps: {"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"},
}

// Can says, for each of Limits, whether this machine can enforce it on
// processes whose data lives in dir: "" when it can, else why not (no
// root, the controller not mounted or not writable, dir on no block
// device or on one the kernel does not throttle). It creates the
// storebench parent group of each controller when missing, and probes
// the throttle of dir's device with a no-op rule there; nothing else.
func Can(dir string) map[string]string {
	out := map[string]string{}
	v1, v2, err := hierarchies()
	root := os.Geteuid() == 0
	for _, key := range Limits {
		c := controllerOf[key]
		switch {
		case err != nil:
			out[key] = err.Error()
		case !root:
			out[key] = fmt.Sprintf("needs root to set cgroup limits (storebench runs as uid %d)", os.Geteuid())
		case v1[c.ctrl] == "":
			why := fmt.Sprintf("the cgroup v1 %s controller is not mounted", c.ctrl)
			if v2 {
				why += " (this machine has cgroup v2, which storebench does not drive yet)"
			}
			out[key] = why
		default:
			parent, perr := parentDir(v1[c.ctrl])
			if perr != nil {
				out[key] = perr.Error()
				break
			}
			if _, serr := os.Stat(filepath.Join(parent, c.file)); serr != nil {
				out[key] = fmt.Sprintf("the %s controller has no %s", c.ctrl, c.file)
				break
			}
			if files, ok := throttleFiles[key]; ok {
				d, derr := DeviceOf(dir)
				if derr != nil {
					out[key] = derr.Error()
					break
				}
				for _, f := range files {
					if _, terr := throttleDevice(parent, f, d); terr != nil {
						out[key] = terr.Error()
						break
					}
				}
				if out[key] != "" {
					break
				}
			}
			out[key] = ""
		}
	}
	return out
}

// parentDir is storebench's parent group in the hierarchy mounted at
// mount, made when missing (mode 0755); a cpuset parent gets the root's
// CPUs and memory nodes (inheritCPUSet).
func parentDir(mount string) (string, error) {
	p := filepath.Join(mount, ParentName)
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("cannot create the cgroup %s: %w", p, err)
	}
	if err := inheritCPUSet(p, mount); err != nil {
		return "", err
	}
	return p, nil
}

// inheritCPUSet gives the cpuset group dir (one of a hierarchy with the
// cpuset controller) the CPUs and memory nodes of from where it has none
// yet: a cpuset group holds no process, nor groups that do, without them.
// A directory of another hierarchy is left as it is.
func inheritCPUSet(dir, from string) error {
	if _, err := os.Stat(filepath.Join(dir, "cpuset.cpus")); err != nil {
		return nil
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if v, _ := readTrim(filepath.Join(dir, f)); v != "" {
			continue
		}
		v, err := readTrim(filepath.Join(from, f))
		if err != nil {
			return fmt.Errorf("reading %s: %w", filepath.Join(from, f), err)
		}
		if err := writeFile(filepath.Join(dir, f), v); err != nil {
			return fmt.Errorf("setting %s of %s: %w", f, dir, err)
		}
	}
	return nil
}

// Check returns nil when this machine can enforce every limit s sets on
// processes whose data lives in dir, else an error naming each limit it
// cannot and why, on one line ("disk_mbps: /dev/shm is on tmpfs (tmpfs),
// not a block device"): the step is then "n/a: " + the error, never run
// without the limit. An invalid s is an error too.
func (s Shape) Check(dir string) error {
	if err := s.Validate(); err != nil {
		return err
	}
	c := Can(dir)
	var why []string
	for _, k := range s.Keys() {
		if c[k] != "" {
			why = append(why, k+": "+c[k])
		}
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// Summary is one line saying which limits this machine can enforce for
// data in dir, and why not the others, for `storebench list`:
// "cpus, cpuset, memory, disk_iops, disk_mbps (cgroup v1; disk limits on
// vda (254:0), which holds results)".
func Summary(dir string) string {
	c := Can(dir)
	var ok []string
	whyNot := map[string][]string{}
	var reasons []string
	for _, k := range Limits {
		if c[k] == "" {
			ok = append(ok, k)
			continue
		}
		if !slices.Contains(reasons, c[k]) {
			reasons = append(reasons, c[k])
		}
		whyNot[c[k]] = append(whyNot[c[k]], k)
	}
	var sb strings.Builder
	if len(ok) == 0 {
		sb.WriteString("none")
	} else {
		sb.WriteString(strings.Join(ok, ", "))
		sb.WriteString(" (cgroup v1")
		if c[KeyDiskIOPS] == "" || c[KeyDiskMBps] == "" {
			if d, err := DeviceOf(dir); err == nil {
				fmt.Fprintf(&sb, "; disk limits on %s, which holds %s", d, dir)
			}
		}
		sb.WriteString(")")
	}
	for _, r := range reasons {
		fmt.Fprintf(&sb, "; not %s: %s", strings.Join(whyNot[r], ", "), r)
	}
	return sb.String()
}
