package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/home"
	"storebench/internal/server/proc"
)

// A lease records a server that a storebench process (a run) started for
// itself: which process owns it and which process the server is, each by
// PID and start time. Servers die with their owner (proc.StartTied), but
// should one survive (a kernel that drops the parent-death signal, a
// server that double-forks), the next start finds the lease of a dead
// owner and stops what is left. `storebench server status` lists leases
// too, so a run's servers are never invisible.
type lease struct {
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	PIDStart   uint64 `json:"pid_start_time"`
	Owner      int    `json:"owner_pid"`
	OwnerStart uint64 `json:"owner_start_time"`
	// StopSignal is the server's clean-shutdown signal ("SIGTERM").
	StopSignal string `json:"stop_signal"`
	// Dir is the instance directory (for messages).
	Dir string `json:"dir"`
	// Remove is a directory to delete once the server is stopped (data
	// kept outside the run directory), or "".
	Remove string `json:"remove,omitempty"`
}

// LeaseDir is where leases live: managed/ in storebench's own
// directory (package home). One place per user, whatever the
// working directory, so that any later run finds them.
func LeaseDir() string { return home.Sub("managed") }

// Lease records inst as owned by this process, in LeaseDir. remove is a
// directory to delete if the server has to be cleaned up after its owner
// died ("" for none). Call the returned release once the server is
// stopped.
func Lease(inst *Instance, remove string) (release func(), err error) {
	if inst == nil || inst.PID <= 0 {
		return nil, errors.New("leasing a server: no instance")
	}
	return leasePID(inst.Name, inst.PID, filepath.Dir(inst.DataDir), remove)
}

// LeaseProcess records a process this storebench has just started for
// the server name in the instance directory dir, like Lease: should this
// process die before it releases the lease, the next start of any
// storebench (ReapLeftovers) stops it. `storebench server start` holds
// one on each process of a detached server until the instance's state is
// saved.
func LeaseProcess(name string, pid int, dir string) (release func(), err error) {
	if pid <= 0 {
		return nil, fmt.Errorf("leasing %s: no process", name)
	}
	return leasePID(name, pid, dir, "")
}

func leasePID(name string, pid int, dir, remove string) (release func(), err error) {
	l := lease{Name: name, PID: pid, Owner: os.Getpid(), Dir: dir, Remove: remove,
		StopSignal: unix.SignalName(stopSignal(name))}
	if l.PIDStart, err = proc.StartTime(pid); err != nil {
		return nil, fmt.Errorf("leasing %s: %w", name, err)
	}
	if l.OwnerStart, err = proc.StartTime(l.Owner); err != nil {
		return nil, fmt.Errorf("leasing %s: %w", name, err)
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("leasing %s: %w", name, err)
	}
	leases := LeaseDir()
	if err := os.MkdirAll(leases, 0o700); err != nil {
		return nil, fmt.Errorf("leasing %s: %w", name, err)
	}
	path := filepath.Join(leases, fmt.Sprintf("%d-%s-%d.json", l.Owner, l.Name, l.PID))
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("leasing %s: %w", name, err)
	}
	return func() { _ = os.Remove(path) }, nil
}

func stopSignal(name string) syscall.Signal {
	if s, err := Lookup(name); err == nil {
		if ss, ok := s.(StopSignaler); ok {
			return ss.StopSignal()
		}
	}
	return syscall.SIGTERM
}

// LeasedServer is a server a run started, as `server status` shows it.
type LeasedServer struct {
	Name  string
	PID   int // 0 once the server is gone
	Owner int // the storebench process that started it
	// OwnerAlive is false for a leftover: its run died without stopping it.
	OwnerAlive bool
	Dir        string
}

// Leased lists the leases in LeaseDir, by server name.
func Leased() ([]LeasedServer, error) {
	ls, err := readLeases()
	var out []LeasedServer
	for _, l := range ls {
		pid := l.PID
		if !sameProcess(pid, l.PIDStart) {
			pid = 0
		}
		out = append(out, LeasedServer{Name: l.Name, PID: pid, Owner: l.Owner, OwnerAlive: sameProcess(l.Owner, l.OwnerStart), Dir: l.Dir})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].PID < out[j].PID
	})
	return out, err
}

type leaseFile struct {
	lease
	path string
}

func readLeases() ([]leaseFile, error) {
	dir := LeaseDir()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading leases: %w", err)
	}
	var out []leaseFile
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var l lease
		if err := json.Unmarshal(b, &l); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		out = append(out, leaseFile{l, path})
	}
	return out, errors.Join(errs...)
}

// leftoverStopTimeout is how long a leftover server gets to stop cleanly
// before its process group is killed: its run is dead, nobody waits for
// its data.
const leftoverStopTimeout = 5 * time.Second

// ReapLeftovers stops the servers whose owning storebench process is gone
// (a run killed with kill -9, or a crash) and removes their leases, saying
// so on log. A lease whose server is gone too is just removed. Servers of
// live storebench processes are left alone, and a PID now held by another
// process (start time differs) is never signalled.
func ReapLeftovers(ctx context.Context, log io.Writer) error {
	ls, err := readLeases()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range ls {
		if sameProcess(l.Owner, l.OwnerStart) {
			continue
		}
		if sameProcess(l.PID, l.PIDStart) {
			sig := unix.SignalNum(l.StopSignal)
			if sig == 0 {
				sig = syscall.SIGTERM
			}
			proc.Logf(log, "%s: stopping pid %d, left running in %s by storebench pid %d, which is gone", l.Name, l.PID, l.Dir, l.Owner)
			if err := proc.StopPID(ctx, l.PID, sig, leftoverStopTimeout); err != nil && sameProcess(l.PID, l.PIDStart) {
				errs = append(errs, fmt.Errorf("stopping the leftover %s (pid %d): %w", l.Name, l.PID, err))
				continue
			}
		}
		if l.Remove != "" {
			_ = os.RemoveAll(l.Remove)
		}
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
