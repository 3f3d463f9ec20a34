package powerfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The metadata model (ModelMetadata) keeps, besides the data model's
// undo state, a journal of the namespace operations whose directories
// were not fsynced since: a name made (create, mknod, mkdir, symlink,
// link) is removed again on Fail, a name removed (unlink, rmdir) comes
// back, a rename goes back (and what it replaced comes back). An fsync
// of a directory (fsyncdir on an open directory) makes every earlier
// operation in it durable; a rename is durable once both its
// directories were fsynced after it.
//
// An unlinked or replaced file is kept as a hard link in the stash, a
// directory beside the backing root, so that Fail can link it back; a
// removed directory (empty) is made again with its old mode and owner.
// Undo works by backing path, in reverse order; an undo that cannot
// apply (the name is taken, the inode there is another, a made
// directory is not empty) is skipped and counted, never fatal.

type nsKind int

const (
	nsMake   nsKind = iota // a name made (create, mknod, symlink, link): unlink it
	nsMkdir                // a directory made: rmdir it
	nsUnlink               // a name removed: link the stash back
	nsRmdir                // a directory removed: mkdir it
	nsRename               // a rename: rename back, then the replaced name
)

// nsOp is one journaled namespace operation.
type nsOp struct {
	kind   nsKind
	dirs   []fileKey // the directory (rename: the source, then the destination if another)
	synced []bool
	// path is the name made or removed (rename: the source); to is a
	// rename's destination. Backing paths as they were.
	path, to string
	ino      fileKey // the inode made, removed or renamed
	flags    uint32  // a rename's
	// stash is a hard link of the file removed or replaced ("": none).
	stash string
	// dir: the name removed or replaced was a directory, with mode,
	// uid and gid.
	dir      bool
	mode     uint32
	uid, gid int
}

func (o *nsOp) durable() bool {
	for _, s := range o.synced {
		if !s {
			return false
		}
	}
	return true
}

func (f *FS) meta() bool { return f.model == ModelMetadata }

// stashPath is the stash's directory: beside the backing root, on its
// file system, never inside what the mount shows.
func stashPath(root string) string { return filepath.Join(filepath.Dir(root), "stash") }

// resetStash empties the stash.
func (f *FS) resetStash() error {
	if err := os.RemoveAll(f.stash); err != nil {
		return err
	}
	return os.MkdirAll(f.stash, 0o700)
}

func statKey(path string) (fileKey, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileKey{}, false
	}
	return fileKey{st.Dev, st.Ino}, true
}

// keep links the file at p into the stash ("" when it cannot).
func (f *FS) keep(p string) string {
	f.seq++
	s := filepath.Join(f.stash, strconv.FormatUint(f.seq, 10))
	if unix.Link(p, s) != nil {
		return ""
	}
	return s
}

func (f *FS) drop(o *nsOp) {
	if o.stash != "" {
		_ = unix.Unlink(o.stash)
	}
}

// record journals o, done in the backing directories dirs (nsMu held).
func (f *FS) record(o *nsOp, dirs ...string) {
	for _, d := range dirs {
		k, ok := statKey(d)
		if !ok {
			f.drop(o) // the directory is gone: nothing to undo in it
			return
		}
		if len(o.dirs) == 0 || o.dirs[0] != k {
			o.dirs = append(o.dirs, k)
		}
	}
	o.synced = make([]bool, len(o.dirs))
	f.journal = append(f.journal, o)
}

// made journals the name p made in dir (nsMu held).
func (f *FS) made(kind nsKind, dir, p string) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return
	}
	f.record(&nsOp{kind: kind, path: p, ino: fileKey{st.Dev, st.Ino}}, dir)
}

// syncDir makes durable every journaled operation in the directory key
// (an fsync of it).
func (f *FS) syncDir(key fileKey) {
	f.nsMu.Lock()
	defer f.nsMu.Unlock()
	out := f.journal[:0]
	for _, o := range f.journal {
		for i, d := range o.dirs {
			if d == key {
				o.synced[i] = true
			}
		}
		if o.durable() {
			f.drop(o)
			continue
		}
		out = append(out, o)
	}
	clear(f.journal[len(out):])
	f.journal = out
}

// undoNamespace reverts the journal's operations, latest first, and
// empties it and the stash (nsMu held).
func (f *FS) undoNamespace() (reverted, skipped int, err error) {
	for i := len(f.journal) - 1; i >= 0; i-- {
		o := f.journal[i]
		if o.durable() {
			continue
		}
		if o.undo() == nil {
			reverted++
		} else {
			skipped++
		}
	}
	f.journal = nil
	return reverted, skipped, f.resetStash()
}

var errUndo = errors.New("cannot undo")

// is says whether p is the inode want (not following a symlink).
func is(p string, want fileKey) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && (fileKey{st.Dev, st.Ino}) == want
}

func absent(p string) bool {
	var st unix.Stat_t
	return errors.Is(unix.Lstat(p, &st), unix.ENOENT)
}

func (o *nsOp) undo() error {
	switch o.kind {
	case nsMake:
		if !is(o.path, o.ino) {
			return errUndo
		}
		return unix.Unlink(o.path)
	case nsMkdir:
		if !is(o.path, o.ino) {
			return errUndo
		}
		return unix.Rmdir(o.path)
	case nsUnlink:
		if o.stash == "" || !absent(o.path) {
			return errUndo
		}
		return unix.Link(o.stash, o.path)
	case nsRmdir:
		return o.remake(o.path)
	case nsRename:
		if !is(o.to, o.ino) {
			return errUndo
		}
		if o.flags&unix.RENAME_EXCHANGE != 0 {
			return unix.Renameat2(unix.AT_FDCWD, o.to, unix.AT_FDCWD, o.path, unix.RENAME_EXCHANGE)
		}
		if !absent(o.path) {
			return errUndo
		}
		if err := unix.Rename(o.to, o.path); err != nil {
			return err
		}
		switch {
		case o.dir:
			return o.remake(o.to)
		case o.stash != "":
			return unix.Link(o.stash, o.to)
		}
		return nil
	}
	return errUndo
}

// remake makes the removed directory p again.
func (o *nsOp) remake(p string) error {
	if !absent(p) {
		return errUndo
	}
	if err := unix.Mkdir(p, o.mode&0o7777); err != nil {
		return err
	}
	_ = unix.Lchown(p, o.uid, o.gid)
	return unix.Chmod(p, o.mode&0o7777) // past the umask
}

// The node's namespace operations: the loopback's, journaled in the
// metadata model.

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fs.meta() {
		return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	in, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		n.fs.made(nsMake, n.path(), filepath.Join(n.path(), name))
	}
	return in, errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fs.meta() {
		return n.LoopbackNode.Mkdir(ctx, name, mode, out)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	in, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.fs.made(nsMkdir, n.path(), filepath.Join(n.path(), name))
	}
	return in, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fs.meta() {
		return n.LoopbackNode.Symlink(ctx, target, name, out)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	in, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.fs.made(nsMake, n.path(), filepath.Join(n.path(), name))
	}
	return in, errno
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fs.meta() {
		return n.LoopbackNode.Link(ctx, target, name, out)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	in, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.fs.made(nsMake, n.path(), filepath.Join(n.path(), name))
	}
	return in, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if !n.fs.meta() {
		return n.LoopbackNode.Unlink(ctx, name)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	dir := n.path()
	o := &nsOp{kind: nsUnlink, path: filepath.Join(dir, name)}
	var st unix.Stat_t
	have := unix.Lstat(o.path, &st) == nil
	if have {
		o.ino = fileKey{st.Dev, st.Ino}
		o.stash = n.fs.keep(o.path)
	}
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		n.fs.drop(o)
		return errno
	}
	if have {
		n.fs.record(o, dir)
	}
	return 0
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if !n.fs.meta() {
		return n.LoopbackNode.Rmdir(ctx, name)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	dir := n.path()
	o := &nsOp{kind: nsRmdir, path: filepath.Join(dir, name), dir: true}
	var st unix.Stat_t
	have := unix.Lstat(o.path, &st) == nil
	if have {
		o.ino, o.mode, o.uid, o.gid = fileKey{st.Dev, st.Ino}, st.Mode, int(st.Uid), int(st.Gid)
	}
	if errno := n.LoopbackNode.Rmdir(ctx, name); errno != 0 {
		return errno
	}
	if have {
		n.fs.record(o, dir)
	}
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !n.fs.meta() || !ok {
		return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	}
	n.fs.nsMu.Lock()
	defer n.fs.nsMu.Unlock()
	d1, d2 := n.path(), np.path()
	o := &nsOp{kind: nsRename, path: filepath.Join(d1, name), to: filepath.Join(d2, newName), flags: flags}
	var st unix.Stat_t
	have := unix.Lstat(o.path, &st) == nil
	if have {
		o.ino = fileKey{st.Dev, st.Ino}
		if unix.Lstat(o.to, &st) == nil && (fileKey{st.Dev, st.Ino}) == o.ino {
			have = false // two names of one inode: the rename does nothing
		} else if flags&unix.RENAME_EXCHANGE == 0 && unix.Lstat(o.to, &st) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				o.dir, o.mode, o.uid, o.gid = true, st.Mode, int(st.Uid), int(st.Gid)
			} else {
				o.stash = n.fs.keep(o.to)
			}
		}
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		n.fs.drop(o)
		return errno
	}
	if have {
		n.fs.record(o, d1, d2)
	}
	return 0
}

// loopbackDir is what the loopback's directory handle implements.
type loopbackDir interface {
	gofs.DirStream
	gofs.FileReaddirenter
	gofs.FileSeekdirer
	gofs.FileReleasedirer
	gofs.FileFsyncdirer
	gofs.FileIoctler
}

// dirHandle is an open directory whose fsync makes the journaled
// operations in it durable.
type dirHandle struct {
	loopbackDir
	fs  *FS
	key fileKey
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	errno := d.loopbackDir.Fsyncdir(ctx, flags)
	if errno == 0 {
		d.fs.syncDir(d.key)
	}
	return errno
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, ff, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 || !n.fs.meta() {
		return fh, ff, errno
	}
	ld, ok := fh.(loopbackDir)
	if !ok {
		return fh, ff, errno
	}
	key, ok := statKey(n.path())
	if !ok {
		ld.Releasedir(ctx, 0)
		return nil, 0, syscall.ENOENT
	}
	return &dirHandle{loopbackDir: ld, fs: n.fs, key: key}, ff, 0
}
