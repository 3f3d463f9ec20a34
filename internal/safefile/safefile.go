// Package safefile creates, reads and removes the files of a run
// directory, an --out or an --export directory without following a
// symbolic link planted there (a shared or temporary directory): an
// output file is created with O_NOFOLLOW and must be a regular file, a
// run's file is read only when it is a regular file directly inside the
// run directory and no larger than its cap, and a file is removed only
// when it is a regular file, never through a link.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

var (
	// ErrLink: the path is a symbolic link.
	ErrLink = errors.New("a symbolic link: storebench does not follow one there")
	// ErrNotRegular: the path is a directory, FIFO, device or socket.
	ErrNotRegular = errors.New("not a regular file")
)

// TooLargeError is a file over its cap.
type TooLargeError struct {
	Path      string
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %s, over the %s allowed", e.Path, Size(e.Size), Size(e.Max))
}

// Size writes n bytes for a person: 512 MiB, 1.5 GiB, 64 KiB, 10 bytes.
func Size(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v {
			if n%u.v == 0 {
				return fmt.Sprintf("%d %s", n/u.v, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.v), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// notRegular is the error for a file of mode m at path.
func notRegular(path string, m fs.FileMode) error {
	if m&fs.ModeSymlink != 0 {
		return &fs.PathError{Op: "open", Path: path, Err: ErrLink}
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(m))}
}

// Create opens path for writing, creating it or emptying the regular file
// there, without following a symbolic link at path (a dangling one is not
// created through either) and without opening a FIFO or a device.
func Create(path string, perm fs.FileMode) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	// O_NONBLOCK: a FIFO put there since the Lstat does not block the
	// open; Fstat below refuses it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrLink}
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(path, st.Mode())
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile writes b to path as Create opens it.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces path with b whole or not at all: it writes a
// new temporary file beside it (path.tmp, created exclusively, never
// through a link: a stale one is removed first), syncs it and renames it
// over path. A symbolic link at path is replaced, not written through.
// On any error (a full disk) the temporary file is removed and path is
// left as it was: a reader never sees a truncated file.
func WriteFileAtomic(path string, b []byte, perm fs.FileMode) error {
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		return notRegular(path, st.Mode())
	}
	tmp := path + ".tmp"
	if st, err := os.Lstat(tmp); err == nil {
		if st.IsDir() {
			return notRegular(tmp, st.Mode())
		}
		// A link is removed itself, not what it points at.
		if err := os.Remove(tmp); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return nil
}

// Mkdir makes directory path (its parent must exist), or accepts the
// directory already there; a symbolic link there (to a directory or not)
// or a file is refused: nothing is written through a linked directory.
func Mkdir(path string, perm fs.FileMode) error {
	err := os.Mkdir(path, perm)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return &fs.PathError{Op: "mkdir", Path: path, Err: ErrLink}
	}
	if !st.IsDir() {
		return &fs.PathError{Op: "mkdir", Path: path, Err: fmt.Errorf("not a directory (%s)", kind(st.Mode()))}
	}
	return nil
}

// checkName keeps name a file directly inside its directory.
func checkName(dir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator) {
		return "", &fs.PathError{Op: "open", Path: filepath.Join(dir, name), Err: errors.New("not a file name inside the directory")}
	}
	return filepath.Join(dir, name), nil
}

// ReadRegular reads the file name directly inside dir, only when it is a
// regular file (not a symbolic link, FIFO or device) of at most max
// bytes: a larger one is a *TooLargeError, said before it is read. A
// missing file is an error that errors.Is(fs.ErrNotExist).
func ReadRegular(dir, name string, max int64) ([]byte, error) {
	path, err := checkName(dir, name)
	if err != nil {
		return nil, err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	if st.Size() > max {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Max: max}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrLink}
		}
		return nil, err
	}
	defer f.Close()
	// What was opened is what was checked (not swapped since the Lstat).
	fst, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fst.Mode().IsRegular() || !os.SameFile(st, fst) {
		return nil, notRegular(path, fst.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max { // grew since the Stat
		return nil, &TooLargeError{Path: path, Size: fst.Size(), Max: max}
	}
	return b, nil
}

// RemoveRegular removes the file name directly inside dir when it is a
// regular file or a symbolic link (the link itself, never what it points
// at); a directory or anything else is left.
func RemoveRegular(dir, name string) error {
	path, err := checkName(dir, name)
	if err != nil {
		return err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() && st.Mode()&fs.ModeSymlink == 0 {
		return notRegular(path, st.Mode())
	}
	return os.Remove(path)
}
