// Package crashable runs a managed server (package server) that a crash
// can take: its whole process tree is killed with SIGKILL, and on a power
// loss the data directory, kept on a power-loss mount (package powerfs),
// drops what the server had not fsynced; then the server is started again on
// the same data. It implements fault.Crasher, the optional ability the
// durability workload finds by type assertion on what holds an engine.
package crashable

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"storebench/internal/fault"
	"storebench/internal/measure/procstat"
	"storebench/internal/powerfs"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Server is a managed server started for crash trials.
type Server struct {
	srv   server.Server
	cfg   server.Config
	mount *powerfs.Mount
	last  powerfs.Failure
	inst  *server.Instance
	done  chan struct{}
}

var _ fault.Crasher = (*Server)(nil)

// Start starts server name with cfg (cfg.Log, if it is a file, is kept
// open by the caller). With m set (power loss), the server's data
// directory lives on the power-loss mount: the first start makes it in
// cfg.Dir on the plain disk, the server is stopped cleanly, the
// directory is renamed into the mount's root (same file system: owners
// and modes kept, nothing copied through FUSE) and a symbolic link to its
// place on the mount is left behind; the file system is mounted again so
// that it sees it, and the server started on it.
func Start(ctx context.Context, name string, cfg server.Config, m *powerfs.Mount) (*Server, error) {
	srv, err := server.Lookup(name)
	if err != nil {
		return nil, err
	}
	s := &Server{srv: srv, cfg: cfg, mount: m}
	if m != nil {
		if err := s.moveOnto(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.Restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// moveOnto makes the data directory and moves it onto the mount.
func (s *Server) moveOnto(ctx context.Context) error {
	inst, err := s.srv.Start(ctx, s.cfg)
	if err != nil {
		return err
	}
	src := inst.DataDir
	if err := inst.Stop(ctx); err != nil {
		return err
	}
	dst := filepath.Join(s.mount.Root, "data")
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("moving %s's data onto the power-loss mount: %w", s.srv.Name(), err)
	}
	if err := os.Symlink(filepath.Join(s.mount.Dir, "data"), src); err != nil {
		return err
	}
	// The mount sees what was renamed below it once mounted again.
	return s.mount.Remount(ctx)
}

// URI is where the running server listens.
func (s *Server) URI() string { return s.inst.URI }

// Instance is the running server.
func (s *Server) Instance() *server.Instance { return s.inst }

// Exited is closed once the server's process is gone.
func (s *Server) Exited() <-chan struct{} { return s.done }

// Restart starts the server on its data (after a crash: recovery), on
// the port and with the password of its first start: its URI stays, so
// that clients holding it reconnect.
func (s *Server) Restart(ctx context.Context) error {
	inst, err := s.srv.Start(ctx, s.cfg)
	if err != nil {
		return err
	}
	s.keepURI(inst.URI)
	s.inst, s.done = inst, make(chan struct{})
	done := s.done
	// The server's process is the server package's child, reaped there:
	// polled.
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for proc.Alive(inst.PID) {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		close(done)
	}()
	return nil
}

// keepURI pins the port and the password of uri for the next starts.
func (s *Server) keepURI(uri string) {
	u, err := url.Parse(uri)
	if err != nil {
		return
	}
	if p, err := strconv.Atoi(u.Port()); err == nil && s.cfg.Port == 0 {
		s.cfg.Port = p
	}
	if pw, ok := u.User.Password(); ok && s.cfg.Password == "" {
		s.cfg.Password = pw
	}
}

// Crash kills the server and every process below it (PostgreSQL's
// backends leave its process group) as a power failure takes them: all
// stopped first, so that none acts on another's death, then killed, and
// waited for (the next start must not find one still holding the data:
// PostgreSQL's "pre-existing shared memory block is still in use"). On
// fault.PowerLoss the mount then drops what was not fsynced and is mounted
// again.
func (s *Server) Crash(ctx context.Context, kind string) error {
	if kind == fault.PowerLoss && s.mount == nil {
		return errors.New("power-loss: the server's data is not on a power-loss mount")
	}
	pids := []int{s.inst.PID}
	if d, err := procstat.Descendants(s.inst.PID); err == nil {
		pids = append(pids, d...)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// What the server package holds for the dead process.
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = s.inst.Stop(sctx)
	cancel()
	if kind != fault.PowerLoss {
		return nil
	}
	f, err := s.mount.PowerFail(ctx)
	s.last = f
	return err
}

// LastFailure is what the latest power failure dropped (package powerfs's
// counters).
func (s *Server) LastFailure() powerfs.Failure { return s.last }

// running says whether pid exists and is not a zombie (a zombie holds no
// file and no shared memory).
func running(pid int) bool {
	st, err := procstat.StatOf(pid)
	return err == nil && st.State != "Z" && st.State != "X"
}

// Persistent says whether the server keeps its data across a restart
// (memcached does not: a crash loses everything, by design).
func (s *Server) Persistent() bool {
	return s.inst.Settings[server.Persistence] != server.NoPersistence
}

// Stop shuts the server down cleanly.
func (s *Server) Stop(ctx context.Context) error { return s.inst.Stop(ctx) }
