package powerfs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FS is the file system served on a mount: a loopback over a backing
// directory that writes through at once (so that reads, sizes and
// memory maps need nothing of it) and keeps, per file, what a power
// failure must put back: the size the file had at its last sync and the
// bytes each unsynced write overwrote below it. A sync of the file
// (fsync, fdatasync, msync, a write through an O_SYNC or O_DSYNC handle)
// forgets them; Fail puts them back in every file.
//
// Model "data" (LazyFS's): the namespace (create, rename, link, unlink,
// mkdir) persists at once; a file's contents and size persist only once
// synced. A truncate or a fallocate that drops data is a write.
//
// Model "metadata" adds a journal of the namespace operations whose
// directory was not fsynced since (see meta.go): Fail reverts them.
type FS struct {
	root  string
	model string
	mu    sync.Mutex
	held  map[fileKey]*undo

	// nsMu orders the namespace operations and the journal (metadata
	// model; taken before mu); stash holds the files they removed.
	nsMu    sync.Mutex
	journal []*nsOp
	stash   string
	seq     uint64

	writes, written, syncs, failures atomic.Int64
	heldBytes                        atomic.Int64
	last                             Failure
}

// Stats are the file system's own counters.
type Stats struct {
	// Model is the crash model served.
	Model string `json:"model"`
	// Writes and WrittenBytes count every write since the mount.
	Writes       int64 `json:"writes"`
	WrittenBytes int64 `json:"written_bytes"`
	// Syncs counts the file syncs (fsync, fdatasync, msync, O_SYNC).
	Syncs int64 `json:"syncs"`
	// HeldBytes are written and not yet synced, in HeldFiles files.
	HeldBytes int64 `json:"held_bytes"`
	HeldFiles int   `json:"held_files"`
	// HeldOps are the namespace operations not yet durable (model
	// "metadata").
	HeldOps int `json:"held_ops"`
	// Failures counts the power failures; Last is the latest.
	Failures int64   `json:"failures"`
	Last     Failure `json:"last"`
}

// Failure is what one power failure dropped.
type Failure struct {
	// DroppedBytes were written and not synced; DroppedFiles held them.
	DroppedBytes int64 `json:"dropped_bytes"`
	DroppedFiles int   `json:"dropped_files"`
	// RestoredBytes were put back (overwritten below a synced size).
	RestoredBytes int64 `json:"restored_bytes"`
	// RevertedOps are the namespace operations undone (model
	// "metadata"); SkippedOps could not be (the name taken since, a
	// directory made and not empty, ...).
	RevertedOps int `json:"reverted_ops"`
	SkippedOps  int `json:"skipped_ops"`
}

type fileKey struct{ dev, ino uint64 }

// undo is one file's state since its last sync: its size then and the
// synced bytes that writes have overwritten since (sorted, disjoint,
// all below size).
type undo struct {
	mu    sync.Mutex
	fd    int // the backing file, read-write, ours
	size  int64
	saved []extent
	held  int64
	dead  bool // synced or failed: look it up again
}

type extent struct {
	off  int64
	data []byte
}

func (e extent) end() int64 { return e.off + int64(len(e.data)) }

// NewFS serves root (the backing directory) in a crash model (Models;
// "" is ModelData). The metadata model's stash, beside root, is emptied.
func NewFS(root, model string) (*FS, error) {
	if model == "" {
		model = ModelData
	}
	if !slices.Contains(Models, model) {
		return nil, fmt.Errorf("powerfs: unknown crash model %q", model)
	}
	f := &FS{root: root, model: model, held: map[fileKey]*undo{}, stash: stashPath(root)}
	if f.meta() {
		if err := f.resetStash(); err != nil {
			return nil, fmt.Errorf("powerfs: %w", err)
		}
	}
	return f, nil
}

// Root is the node to mount.
func (f *FS) Root() (gofs.InodeEmbedder, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(f.root, &st); err != nil {
		return nil, err
	}
	lr := &gofs.LoopbackRoot{Path: f.root, Dev: st.Dev}
	lr.NewNode = func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
		return &node{LoopbackNode: gofs.LoopbackNode{RootData: r}, fs: f}
	}
	n := lr.NewNode(lr, nil, "", &st)
	lr.RootNode = n
	return n, nil
}

// Stats returns the counters.
func (f *FS) Stats() Stats {
	f.nsMu.Lock()
	ops := len(f.journal)
	f.nsMu.Unlock()
	f.mu.Lock()
	files, last := len(f.held), f.last
	f.mu.Unlock()
	return Stats{Model: f.model, Writes: f.writes.Load(), WrittenBytes: f.written.Load(), Syncs: f.syncs.Load(),
		HeldBytes: f.heldBytes.Load(), HeldFiles: files, HeldOps: ops, Failures: f.failures.Load(), Last: last}
}

// lock returns the file's undo state, locked, making it (the file as it
// is now counts as synced) when there is none.
func (f *FS) lock(key fileKey, fd int) (*undo, error) {
	for {
		f.mu.Lock()
		u := f.held[key]
		if u == nil {
			nfd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				f.mu.Unlock()
				return nil, err
			}
			var st unix.Stat_t
			if err := unix.Fstat(nfd, &st); err != nil {
				unix.Close(nfd)
				f.mu.Unlock()
				return nil, err
			}
			u = &undo{fd: nfd, size: st.Size}
			f.held[key] = u
		}
		f.mu.Unlock()
		u.mu.Lock()
		if !u.dead {
			return u, nil
		}
		u.mu.Unlock()
	}
}

// sync makes the file durable as it is: the backing file is synced (the
// cost an engine pays for it) and its undo state forgotten.
func (f *FS) sync(key fileKey, fd int) syscall.Errno {
	f.syncs.Add(1)
	f.mu.Lock()
	u := f.held[key]
	f.mu.Unlock()
	if u == nil {
		return gofs.ToErrno(unix.Fdatasync(fd))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.dead {
		return gofs.ToErrno(unix.Fdatasync(fd))
	}
	err := unix.Fdatasync(fd)
	f.mu.Lock()
	if f.held[key] == u {
		delete(f.held, key)
	}
	f.mu.Unlock()
	f.heldBytes.Add(-u.held)
	u.dead = true
	unix.Close(u.fd)
	return gofs.ToErrno(err)
}

// save keeps the synced bytes of [off, end) that no extent holds yet.
func (u *undo) save(off, end int64) error {
	end = min(end, u.size)
	pos := max(off, 0)
	i, _ := slices.BinarySearchFunc(u.saved, pos, func(e extent, p int64) int {
		if e.end() <= p {
			return -1
		}
		return 1
	})
	for pos < end {
		if i < len(u.saved) && u.saved[i].off <= pos {
			pos = u.saved[i].end()
			i++
			continue
		}
		gap := end
		if i < len(u.saved) && u.saved[i].off < gap {
			gap = u.saved[i].off
		}
		buf := make([]byte, gap-pos)
		for got := 0; got < len(buf); {
			n, err := unix.Pread(u.fd, buf[got:], pos+int64(got))
			if err != nil {
				return err
			}
			if n == 0 {
				break // below the synced size but past the file's end: a hole, zeros
			}
			got += n
		}
		u.saved = slices.Insert(u.saved, i, extent{off: pos, data: buf})
		i++
		pos = gap
	}
	return nil
}

// write writes data at off through fd, keeping what it overwrites.
func (f *FS) write(key fileKey, fd int, data []byte, off int64, durable bool) (uint32, syscall.Errno) {
	u, err := f.lock(key, fd)
	if err != nil {
		return 0, gofs.ToErrno(err)
	}
	if err := u.save(off, off+int64(len(data))); err != nil {
		u.mu.Unlock()
		return 0, gofs.ToErrno(err)
	}
	n, err := unix.Pwrite(fd, data, off)
	if n > 0 {
		u.held += int64(n)
		f.heldBytes.Add(int64(n))
		f.writes.Add(1)
		f.written.Add(int64(n))
	}
	u.mu.Unlock()
	if err != nil {
		return uint32(max(n, 0)), gofs.ToErrno(err)
	}
	if durable {
		if errno := f.sync(key, fd); errno != 0 {
			return uint32(n), errno
		}
	}
	return uint32(n), 0
}

// truncate sets fd's size, keeping what a shrink drops below the synced
// size.
func (f *FS) truncate(key fileKey, fd int, size int64) syscall.Errno {
	u, err := f.lock(key, fd)
	if err != nil {
		return gofs.ToErrno(err)
	}
	defer u.mu.Unlock()
	if err := u.save(size, u.size); err != nil {
		return gofs.ToErrno(err)
	}
	return gofs.ToErrno(unix.Ftruncate(fd, size))
}

// Fail is the power failure: every file gets back its synced size and
// the synced bytes its unsynced writes overwrote. The engine using the
// mount must be dead (its kernel page cache goes with a remount).
//
// In the metadata model the namespace goes back first (the journal,
// latest first), then the contents. The order is free: the contents go
// back through descriptors of the inodes (f.held), whatever their names,
// and a file whose creation was undone is put back, unnamed, harmlessly.
func (f *FS) Fail() (Failure, error) {
	f.nsMu.Lock()
	defer f.nsMu.Unlock()
	var out Failure
	var errs []error
	if f.meta() {
		var err error
		out.RevertedOps, out.SkippedOps, err = f.undoNamespace()
		if err != nil {
			errs = append(errs, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, u := range f.held {
		u.mu.Lock()
		if err := unix.Ftruncate(u.fd, u.size); err != nil {
			errs = append(errs, err)
		}
		for _, e := range u.saved {
			if _, err := unix.Pwrite(u.fd, e.data, e.off); err != nil {
				errs = append(errs, err)
			}
			out.RestoredBytes += int64(len(e.data))
		}
		if err := unix.Fdatasync(u.fd); err != nil {
			errs = append(errs, err)
		}
		out.DroppedBytes += u.held
		out.DroppedFiles++
		f.heldBytes.Add(-u.held)
		unix.Close(u.fd)
		u.dead = true
		u.mu.Unlock()
		delete(f.held, key)
	}
	f.failures.Add(1)
	f.last = out
	if len(errs) > 0 {
		return out, fmt.Errorf("powerfs: putting back unsynced files: %v", errs[0])
	}
	return out, nil
}

// node is a loopback node whose files go through handle.
type node struct {
	gofs.LoopbackNode
	fs *FS
}

func (n *node) path() string { return filepath.Join(n.fs.root, n.EmbeddedInode().Path(nil)) }

// openFlags are what the backing file is opened with: O_DIRECT is the
// engine's wish about the page cache, which the backing file's reads
// through FUSE's buffers would fail (alignment); O_TRUNC is done here,
// as a write.
func openFlags(flags uint32) uint32 {
	return flags &^ (syscall.O_DIRECT | syscall.O_TRUNC | syscall.O_APPEND)
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, ff, errno := n.LoopbackNode.Open(ctx, openFlags(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.fs.wrap(fh, flags)
	return h, ff, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if n.fs.meta() {
		// Journaled unless the name was there already (O_CREAT of an
		// existing file).
		n.fs.nsMu.Lock()
		defer n.fs.nsMu.Unlock()
		dir := n.path()
		p := filepath.Join(dir, name)
		was := !absent(p)
		in, h, ff, errno := n.create(ctx, name, flags, mode, out)
		if errno == 0 && !was {
			n.fs.made(nsMake, dir, p)
		}
		return in, h, ff, errno
	}
	return n.create(ctx, name, flags, mode, out)
}

func (n *node) create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	in, fh, ff, errno := n.LoopbackNode.Create(ctx, name, openFlags(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h, errno := n.fs.wrap(fh, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		out.Size = 0
	}
	return in, h, ff, 0
}

// wrap makes a loopback file a handle whose writes are tracked (and
// truncates it first for O_TRUNC).
func (f *FS) wrap(fh gofs.FileHandle, flags uint32) (*handle, syscall.Errno) {
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		return nil, syscall.EBADF
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		lf.Release(context.Background())
		return nil, gofs.ToErrno(err)
	}
	h := &handle{lf: lf, fd: fd, key: fileKey{st.Dev, st.Ino}, fs: f, durable: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY && st.Size > 0 {
		if errno := f.truncate(h.key, fd, 0); errno != 0 {
			lf.Release(context.Background())
			return nil, errno
		}
	}
	return h, 0
}

// Setattr does a size change as a write; the rest is the loopback's.
func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if errno := n.truncate(f, int64(size)); errno != 0 {
			return errno
		}
		cp := *in
		cp.Valid &^= fuse.FATTR_SIZE
		in = &cp
	}
	if h, ok := f.(*handle); ok {
		f = h.lf
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) truncate(f gofs.FileHandle, size int64) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return n.fs.truncate(h.key, h.fd, size)
	}
	fd, err := unix.Open(n.path(), unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return gofs.ToErrno(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return gofs.ToErrno(err)
	}
	return n.fs.truncate(fileKey{st.Dev, st.Ino}, fd, size)
}

// node answers copy_file_range itself (testdata/interface_bound.txt of
// internal/archtest: the interface fixes CopyFileRange's 8 parameters).
var _ gofs.NodeCopyFileRanger = (*node)(nil)

// CopyFileRange is refused, so that the kernel copies by reads and
// writes that this file system sees.
func (n *node) CopyFileRange(context.Context, gofs.FileHandle, uint64, *gofs.Inode, gofs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// handle is an open file: reads and locks are the loopback's; writes,
// syncs and allocations go through the file system's undo state. It
// offers no passthrough fd (the kernel would write past us).
type handle struct {
	lf      *gofs.LoopbackFile
	fd      int
	key     fileKey
	fs      *FS
	durable bool // O_SYNC or O_DSYNC: each write is synced
}

var (
	_ gofs.FileReader    = (*handle)(nil)
	_ gofs.FileWriter    = (*handle)(nil)
	_ gofs.FileFsyncer   = (*handle)(nil)
	_ gofs.FileAllocater = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.lf.Read(ctx, buf, off)
}

func (h *handle) Write(_ context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return h.fs.write(h.key, h.fd, data, off, h.durable)
}

func (h *handle) Fsync(context.Context, uint32) syscall.Errno { return h.fs.sync(h.key, h.fd) }

func (h *handle) Flush(ctx context.Context) syscall.Errno   { return h.lf.Flush(ctx) }
func (h *handle) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }
func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}
func (h *handle) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Setattr(ctx, in, out)
}
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}
func (h *handle) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return h.lf.Getlk(ctx, owner, lk, flags, out)
}
func (h *handle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlk(ctx, owner, lk, flags)
}
func (h *handle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlkw(ctx, owner, lk, flags)
}

// Allocate keeps what a hole punched, a range zeroed or a range shifted
// drops below the synced size (mode 0 and KEEP_SIZE only reserve).
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		u, err := h.fs.lock(h.key, h.fd)
		if err != nil {
			return gofs.ToErrno(err)
		}
		err = u.save(int64(off), u.size)
		if err == nil {
			err = unix.Fallocate(h.fd, mode, int64(off), int64(size))
		}
		u.mu.Unlock()
		return gofs.ToErrno(err)
	}
	return h.lf.Allocate(ctx, off, size, mode)
}
