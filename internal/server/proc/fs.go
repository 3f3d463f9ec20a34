package proc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"storebench/internal/home"
)

// CheckTraversable returns nil when the named user can reach path: every
// directory from / down to path itself must grant it search (x)
// permission. Servers that drop root (PostgreSQL, MariaDB) otherwise fail
// with a bare "permission denied" deep in their log.
func CheckTraversable(path, username string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", path, err)
	}
	u, err := user.Lookup(username)
	if err != nil {
		return fmt.Errorf("looking up user %s: %w", username, err)
	}
	uid, gid, err := ids(u)
	if err != nil {
		return err
	}
	if uid == 0 {
		return nil
	}
	groups := map[uint32]bool{uint32(gid): true}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				groups[uint32(n)] = true
			}
		}
	}
	for dir := abs; ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("checking %s: %w", dir, err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return nil // not a Unix file system: let the server tell
		}
		mode := st.Mode().Perm()
		var can bool
		switch {
		case sys.Uid == uint32(uid):
			can = mode&0o100 != 0
		case groups[sys.Gid]:
			can = mode&0o010 != 0
		default:
			can = mode&0o001 != 0
		}
		if !can {
			return fmt.Errorf("user %s cannot reach %s: %s is mode %04o owned by uid %d gid %d; "+
				"make it traversable (chmod o+x %s) or use a directory under one that is",
				username, abs, dir, mode, sys.Uid, sys.Gid, dir)
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// Chown gives path (not recursively) to the named user and its group.
func Chown(path, username string) error {
	uid, gid, err := LookupIDs(username)
	if err != nil {
		return err
	}
	if err := os.Lchown(path, uid, gid); err != nil {
		return fmt.Errorf("giving %s to %s: %w", path, username, err)
	}
	return nil
}

// ChownTree gives path and everything under it to the named user and its
// group.
func ChownTree(path, username string) error {
	uid, gid, err := LookupIDs(username)
	if err != nil {
		return err
	}
	err = filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("giving %s to %s: %w", path, username, err)
	}
	return nil
}

// copyWorkers is how many files CopyTree copies at once: creating a file
// costs ~1 ms of kernel time on the machines measured (a PostgreSQL
// cluster is ~1000 files), and that part scales with cores.
const copyWorkers = 4

// CopyTree copies the directory src to dst (which must not exist),
// keeping permissions and symbolic links; ownership becomes ours.
// Directories are made first, in walk order; files then in parallel.
func CopyTree(src, dst string) error {
	type file struct {
		src, dst string
		mode     fs.FileMode
	}
	var files []file
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
			// Mkdir applies the umask: set the exact mode.
			return os.Chmod(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			files = append(files, file{p, target, info.Mode().Perm()})
			return nil
		}
		return fmt.Errorf("%s: cannot copy a %s", p, d.Type())
	})
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	next := make(chan file)
	errs := make(chan error, copyWorkers)
	var wg sync.WaitGroup
	for range copyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				if err := copyFile(f.src, f.dst, f.mode); err != nil {
					errs <- err
					for range next { // drain: the feeder stops at the first error
					}
					return
				}
			}
		}()
	}
	var first error
feed:
	for _, f := range files {
		select {
		case next <- f:
		case first = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		select {
		case first = <-errs:
		default:
		}
	}
	if first != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, first)
	}
	return nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	// os.File.ReadFrom uses copy_file_range: the kernel copies.
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// SyncFS flushes the file system holding path to disk, so that a freshly
// created data directory is not written back by the kernel in the middle
// of the first measurement (one syncfs is much cheaper than the fsync of
// each of the thousand files initdb or mariadb-install-db create).
func SyncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncing the file system of %s: %w", path, err)
	}
	return nil
}

// TemplateKey names a cached data directory: the server, its exact
// version and the options that shape a fresh data directory, hashed.
func TemplateKey(server, version string, options ...string) string {
	h := sha256.New()
	h.Write([]byte(version))
	for _, o := range options {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	return server + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// templateRoot is where fresh data directories are cached:
// $STOREBENCH_TEMPLATE_CACHE, else templates/ under storebench's home
// ($STOREBENCH_HOME, else ~/.cache/storebench). "off" disables the cache.
func templateRoot() string {
	if d := os.Getenv("STOREBENCH_TEMPLATE_CACHE"); d != "" {
		if d == "off" {
			return ""
		}
		return d
	}
	return home.Sub("templates")
}

// Seed fills the data directory dst, which must not exist yet: from the
// cached copy named key when there is one (then given to owner, if not
// empty), else by calling create, which must make dst, after which dst is
// saved as that copy for the next instance. Creating a data directory is
// the slow part of a start (mariadb-install-db: ~3 s of fsyncs for its
// system tables; initdb: ~1 s), and its result depends only on the
// version and options in key, so the copy is as fresh as a new one. The
// cache is best effort: failing to save it only costs time next start
// (said on log). The result says whether the cache was used.
func Seed(ctx context.Context, key, dst, owner string, log io.Writer, create func(ctx context.Context) error) (cached bool, err error) {
	root := templateRoot()
	tpl := ""
	if root != "" {
		tpl = filepath.Join(root, key)
	}
	if tpl != "" {
		if st, err := os.Stat(tpl); err == nil && st.IsDir() {
			if err := CopyTree(tpl, dst); err != nil {
				return false, fmt.Errorf("seeding %s from its cached template: %w", dst, err)
			}
			if owner != "" {
				if err := ChownTree(dst, owner); err != nil {
					return false, err
				}
			}
			return true, nil
		}
	}
	if err := create(ctx); err != nil {
		return false, err
	}
	if tpl != "" {
		if err := saveTemplate(dst, tpl); err != nil {
			Logf(log, "note: could not cache the fresh data directory (next start will create it again): %v", err)
		}
	}
	return false, nil
}

// saveTemplate copies src to tpl atomically: into a temporary sibling,
// then renamed, so a concurrent start sees either no template or a whole
// one. Losing the race to another start is fine: its copy is as good.
func saveTemplate(src, tpl string) error {
	if err := os.MkdirAll(filepath.Dir(tpl), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(tpl), filepath.Base(tpl)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "data")
	if err := CopyTree(src, staged); err != nil {
		return err
	}
	if err := os.Rename(staged, tpl); err != nil {
		if _, serr := os.Stat(tpl); serr == nil {
			return nil // another start saved it first
		}
		return fmt.Errorf("saving template %s: %w", tpl, err)
	}
	return nil
}

// maxSocketPath is the longest path a Unix socket can have on Linux
// (sun_path is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// SocketPathOK reports whether a Unix socket can be created at path: a
// server told to put its socket deeper fails to start.
func SocketPathOK(path string) bool { return len(path) <= maxSocketPath }

// FirstLine returns the first line of s, trimmed (version banners).
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
