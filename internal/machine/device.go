//go:build linux

package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A Device is the block device that holds a directory, as the blkio
// throttle names it.
type Device struct {
	// Dir is the directory asked about (its nearest existing parent when
	// it does not exist yet).
	Dir string
	// Name is the kernel's name ("vda", "nvme0n1p2") and MajMin its number
	// ("254:0") of the device the file system is on.
	Name, MajMin string
	// DiskName and DiskMajMin are the whole disk when the device is a
	// partition (the throttle refuses partitions: it is set on the disk,
	// which then counts the group's I/O to all of its partitions); else
	// the same as Name and MajMin.
	DiskName, DiskMajMin string
}

func (d Device) String() string {
	if d.DiskMajMin != d.MajMin {
		return fmt.Sprintf("%s (%s, partition of %s %s)", d.Name, d.MajMin, d.DiskName, d.DiskMajMin)
	}
	return fmt.Sprintf("%s (%s)", d.Name, d.MajMin)
}

// DeviceOf finds the block device under dir: its number from stat(2),
// else (btrfs and other file systems with anonymous device numbers) from
// the source of its mount in /proc/self/mountinfo, and for a partition
// its disk from /sys/dev/block. A directory on no block device (tmpfs,
// overlay, FUSE, NFS) is an error saying what it is on.
func DeviceOf(dir string) (Device, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Device{}, err
	}
	existing := abs
	var st unix.Stat_t
	for {
		if err := unix.Stat(existing, &st); err == nil {
			break
		} else if parent := filepath.Dir(existing); parent != existing {
			existing = parent
		} else {
			return Device{}, fmt.Errorf("%s: %w", dir, err)
		}
	}
	if real, err := filepath.EvalSymlinks(existing); err == nil {
		existing = real
	}
	d := Device{Dir: existing}
	majmin := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if _, err := os.Stat("/sys/dev/block/" + majmin); err != nil {
		// No block device of that number: look at what is mounted there.
		m, ok := mountOf(existing)
		if !ok {
			return Device{}, fmt.Errorf("%s: not on a block device (device %s, no mount found)", dir, majmin)
		}
		var src unix.Stat_t
		if !strings.HasPrefix(m.source, "/dev/") || unix.Stat(m.source, &src) != nil || src.Mode&unix.S_IFMT != unix.S_IFBLK {
			return Device{}, fmt.Errorf("%s is on %s (%s), not a block device", dir, m.fsType, m.source)
		}
		majmin = fmt.Sprintf("%d:%d", unix.Major(src.Rdev), unix.Minor(src.Rdev))
	}
	d.MajMin, d.DiskMajMin = majmin, majmin
	sys, err := filepath.EvalSymlinks("/sys/dev/block/" + majmin)
	if err != nil {
		return Device{}, fmt.Errorf("%s: device %s: %w", dir, majmin, err)
	}
	d.Name, d.DiskName = filepath.Base(sys), filepath.Base(sys)
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		disk := filepath.Dir(sys)
		if mm, err := readTrim(filepath.Join(disk, "dev")); err == nil {
			d.DiskName, d.DiskMajMin = filepath.Base(disk), mm
		}
	}
	return d, nil
}

// mountOf is the mount holding path: the longest mount point that is a
// path prefix of it, the last such mount when stacked.
func mountOf(path string) (mountInfo, bool) {
	ms, err := readMountinfo()
	if err != nil {
		return mountInfo{}, false
	}
	var best mountInfo
	found := false
	for _, m := range ms {
		mp := m.mountPoint
		if !(mp == "/" || path == mp || strings.HasPrefix(path, mp+"/")) {
			continue
		}
		if !found || len(mp) >= len(best.mountPoint) {
			best, found = m, true
		}
	}
	return best, found
}

// throttleDevice is the device number a throttle file takes for d: the
// device itself when the kernel takes it, else (a partition, refused with
// ENODEV) its disk. It is probed by writing "MAJ:MIN 0" (no limit) to
// file in dir, which changes nothing.
func throttleDevice(dir, file string, d Device) (string, error) {
	path := filepath.Join(dir, file)
	err := writeFile(path, d.MajMin+" 0")
	if err == nil {
		return d.MajMin, nil
	}
	if d.DiskMajMin != d.MajMin && errors.Is(err, unix.ENODEV) {
		if err2 := writeFile(path, d.DiskMajMin+" 0"); err2 == nil {
			return d.DiskMajMin, nil
		}
	}
	cause := err
	if u := errors.Unwrap(err); u != nil {
		cause = u
	}
	return "", fmt.Errorf("the kernel does not throttle %s: %s: %w", d, file, cause)
}
