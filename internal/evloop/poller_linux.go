package evloop

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"storebench/internal/runner"
)

// Poller is one loop's epoll set: non-blocking sockets, each registered
// under the number of its slot in the loop, and the wait loop around it.
// Drive runs request/reply sessions on it; a client with a protocol of
// its own (the HTTP workload's, which opens a connection per request in
// ab's close mode and counts failures rather than stopping) runs its own
// state machine on it through a Handler.
type Poller struct {
	ep  int
	evs []unix.EpollEvent
}

// Interest bits for Set.
const (
	In    = unix.EPOLLIN
	Out   = unix.EPOLLOUT
	RDHup = unix.EPOLLRDHUP
	// Gone is what a closed or failed socket reports besides In.
	Gone = unix.EPOLLHUP | unix.EPOLLERR
)

// NewPoller makes an epoll set for up to slots sockets.
func NewPoller(slots int) (*Poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("evloop: epoll_create1: %w", err)
	}
	return &Poller{ep: ep, evs: make([]unix.EpollEvent, max(slots, 1))}, nil
}

// Close closes the epoll set (the sockets stay open).
func (p *Poller) Close() error { return unix.Close(p.ep) }

// Set registers fd under slot with the interest ev (In, Out, RDHup), or
// changes its interest when registered is true. A socket leaves the set
// when it is closed.
func (p *Poller) Set(fd int, slot int32, ev uint32, registered bool) error {
	op := unix.EPOLL_CTL_ADD
	if registered {
		op = unix.EPOLL_CTL_MOD
	}
	e := unix.EpollEvent{Events: ev, Fd: slot}
	// epoll_ctl never blocks: no runtime syscall bookkeeping (see rawRead).
	if _, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.ep), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&e)), 0, 0); errno != 0 {
		return fmt.Errorf("evloop: epoll_ctl: %w", errno)
	}
	return nil
}

// Handler is the protocol side of a Run.
type Handler interface {
	// Live starts what is queued and says whether any operation is still
	// in flight; Run ends (nil) when none is.
	Live() (bool, error)
	// Ready handles a ready socket: its slot and its events.
	Ready(slot int32, events uint32) error
	// Scan runs every Tick with the Mono time: deadlines.
	Scan(now time.Duration) error
}

// Tick is the longest a Run goes without noticing a stop or a deadline.
const Tick = 50 * time.Millisecond

// Run waits on the set and hands ready sockets to h until h has nothing
// in flight (nil), h fails (its error), or rl is stopping because ctx
// ended (ctx.Err(): what is in flight is abandoned, not counted).
func (p *Poller) Run(ctx context.Context, rl *runner.Loop, h Handler) error {
	nextScan := Mono() + Tick
	for {
		live, err := h.Live()
		if err != nil || !live {
			return err
		}
		n, err := unix.EpollWait(p.ep, p.evs, int(Tick/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("evloop: epoll_wait: %w", err)
		}
		for i := 0; i < n; i++ {
			if err := h.Ready(p.evs[i].Fd, p.evs[i].Events); err != nil {
				return err
			}
		}
		if rl.Stopping() && ctx.Err() != nil {
			return ctx.Err()
		}
		if now := Mono(); now >= nextScan {
			nextScan = now + Tick
			if err := h.Scan(now); err != nil {
				return err
			}
		}
	}
}

var base = time.Now()

// Mono reads only the monotonic clock (half the cost of time.Now): the
// time since the process started.
func Mono() time.Duration { return time.Since(base) }

// Addr is a TCP address in the kernel's own form, for Connect.
type Addr struct {
	sa     unsafe.Pointer // *unix.RawSockaddrInet4 or 6
	salen  uintptr
	family int
}

// ResolveAddr resolves host:port for Connect.
func ResolveAddr(hostport string) (*Addr, error) {
	ta, err := net.ResolveTCPAddr("tcp", hostport)
	if err != nil {
		return nil, err
	}
	if ta.IP == nil {
		return nil, fmt.Errorf("evloop: %s names no host", hostport)
	}
	port := uint16(ta.Port)
	if ip4 := ta.IP.To4(); ip4 != nil {
		sa := &unix.RawSockaddrInet4{Family: unix.AF_INET}
		copy(sa.Addr[:], ip4)
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], port)
		return &Addr{sa: unsafe.Pointer(sa), salen: unsafe.Sizeof(*sa), family: unix.AF_INET}, nil
	}
	sa := &unix.RawSockaddrInet6{Family: unix.AF_INET6}
	copy(sa.Addr[:], ta.IP.To16())
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], port)
	return &Addr{sa: unsafe.Pointer(sa), salen: unsafe.Sizeof(*sa), family: unix.AF_INET6}, nil
}

// Connect opens a non-blocking socket and starts connecting it to a, for
// a connection per request (ab's close mode): the connect goes on in the
// background, and the first write answers EAGAIN until it is done, or
// its error. fd is -1 when the socket could not be made; otherwise the
// caller closes it, errno or not.
func (a *Addr) Connect() (fd int, errno unix.Errno) {
	s, _, errno := unix.RawSyscall(unix.SYS_SOCKET, uintptr(a.family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_CONNECT, s, uintptr(a.sa), a.salen); errno != 0 && errno != unix.EINPROGRESS {
		return int(s), errno
	}
	return int(s), 0
}

// Reads, writes and closes of non-blocking sockets never block (nor do
// socket, a non-blocking connect and epoll_ctl), so they go straight to
// the kernel without the runtime's syscall bookkeeping
// (entersyscall/exitsyscall), which costs more than the call saves here.

// Read reads a non-blocking socket.
func Read(fd int, p []byte) (int, unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

// Write writes to a non-blocking socket.
func Write(fd int, p []byte) (int, unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

// CloseRaw closes a socket (it leaves any epoll set with it).
func CloseRaw(fd int) { unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }
