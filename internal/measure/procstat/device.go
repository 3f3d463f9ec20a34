package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DeviceIO is the I/O a block device has done since boot, all processes
// together. A process's own write_bytes counts pages when they are
// dirtied — a memory-mapped B+tree that dirties a page many times before
// it is written (LMDB) is charged each time — so the device's counters are
// the honest figure of what reached the disk during a step; on a
// benchmark machine the target is nearly the only writer.
type DeviceIO struct {
	// Device is the kernel's name for it ("vda", "nvme0n1p2").
	Device     string
	ReadBytes  int64
	WriteBytes int64
}

// DeviceOf samples the block device holding dir (or its nearest existing
// parent).
func DeviceOf(dir string) (DeviceIO, error) {
	var st unix.Stat_t
	for {
		if err := unix.Stat(dir, &st); err == nil {
			break
		} else if parent := filepath.Dir(dir); parent != dir {
			dir = parent
		} else {
			return DeviceIO{}, fmt.Errorf("procstat: stat %s: %w", dir, err)
		}
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	b, err := os.ReadFile(sys + "/stat")
	if err != nil {
		return DeviceIO{}, fmt.Errorf("procstat: device of %s: %w", dir, err)
	}
	// Fields: reads, merged, sectors read, ms, writes, merged, sectors
	// written, ... Sectors are 512 bytes whatever the device's own size.
	f := strings.Fields(string(b))
	if len(f) < 7 {
		return DeviceIO{}, fmt.Errorf("procstat: %s/stat: %d fields", sys, len(f))
	}
	rd, err1 := strconv.ParseInt(f[2], 10, 64)
	wr, err2 := strconv.ParseInt(f[6], 10, 64)
	if err1 != nil || err2 != nil {
		return DeviceIO{}, fmt.Errorf("procstat: %s/stat: bad sector counts", sys)
	}
	name := ""
	if link, err := os.Readlink(sys); err == nil {
		name = filepath.Base(link)
	}
	return DeviceIO{Device: name, ReadBytes: rd * 512, WriteBytes: wr * 512}, nil
}
