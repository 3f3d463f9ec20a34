//go:build linux

package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mincoreChunk bounds how much of a file is queried per mincore call, so the
// residency vector stays small (16 KiB for 4 KiB pages) however large the
// engine's files are.
const mincoreChunk = 64 << 20

// PageCache reports how many bytes of the regular files under dir are
// resident in the OS page cache (resident) and their total size (total).
// Files are mapped read-only and shared, so mincore reports the page cache
// itself and nothing is read from disk or faulted in. Files and directories
// that vanish during the walk, as engines delete files while compacting, are
// skipped.
func PageCache(dir string) (resident, total int64, err error) {
	pageSize := int64(os.Getpagesize())
	vec := make([]byte, mincoreChunk/pageSize)
	err = walkFiles(dir, func(path string, _ fs.DirEntry) error {
		r, size, err := fileResidency(path, pageSize, vec)
		if err != nil {
			return err
		}
		resident += r
		total += size
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: page cache of %s: %w", dir, err)
	}
	return resident, total, nil
}

// fileResidency returns the resident bytes and the size of one file; a file
// that no longer exists counts as empty.
func fileResidency(path string, pageSize int64, vec []byte) (resident, size int64, err error) {
	// O_NOFOLLOW because the walk only hands over regular files and a symlink
	// swapped in meanwhile must not send us outside the directory.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, 0, nil
		}
		return 0, 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer unix.Close(fd)

	// Size from the open descriptor, not the directory walk, so the mapping
	// matches the file as it is now.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	size = st.Size
	if size == 0 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, 0, nil // mmap of an empty file fails, and nothing is cached
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, fmt.Errorf("mapping %s: %w", path, err)
	}
	// The mapping is never touched, so a concurrent truncation cannot raise
	// SIGBUS; pages past the new end simply report as not resident.
	defer unix.Munmap(data)

	for off := int64(0); off < size; off += mincoreChunk {
		end := min(off+mincoreChunk, size)
		pages := (end - off + pageSize - 1) / pageSize
		if err := mincore(data[off:end], vec[:pages]); err != nil {
			return 0, 0, fmt.Errorf("mincore %s: %w", path, err)
		}
		for i, v := range vec[:pages] {
			if v&1 == 0 {
				continue
			}
			// The last page is only partly file data; count only that part
			// so resident never exceeds the file size.
			start := off + int64(i)*pageSize
			resident += min(pageSize, size-start)
		}
	}
	return resident, size, nil
}

// DiskUsage reports the space the regular files under dir occupy on disk
// (allocated: st_blocks × 512, as du counts it, so sparse files' holes and
// preallocated extents are accounted correctly) and their logical sizes
// (apparent). Files with several hard links under dir are counted once, as
// du does. Directory and symlink metadata blocks are not counted, so
// allocated can be a few KiB below `du -s`. Entries that vanish during the
// walk are skipped.
func DiskUsage(dir string) (allocated, apparent int64, err error) {
	type inode struct{ dev, ino uint64 }
	seen := make(map[inode]bool)
	err = walkFiles(dir, func(path string, d fs.DirEntry) error {
		info, err := d.Info() // lstat: WalkDir entries are never followed
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("stat %s: %w", path, err)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat %s: no raw stat data", path)
		}
		if st.Nlink > 1 {
			key := inode{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		allocated += st.Blocks * 512
		apparent += st.Size
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: disk usage of %s: %w", dir, err)
	}
	return allocated, apparent, nil
}

// walkFiles calls fn for every regular file under root (root itself may be a
// regular file). Anything that disappears during the walk is skipped; the
// root not existing is an error, since that is a caller mistake rather than
// a race.
func walkFiles(root string, fn func(path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != root && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(path, d)
	})
}

// mincore wraps the mincore(2) system call: vec[i] bit 0 is set when page i
// of b is resident. golang.org/x/sys/unix (v0.49.0) exports no Linux wrapper,
// only SYS_MINCORE. b must be a page-aligned mapping and vec must hold at
// least one byte per page of b.
func mincore(b, vec []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, _, errno := unix.Syscall(unix.SYS_MINCORE,
		uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
