package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/server/proc"
)

// StopSignaler is implemented by servers whose clean shutdown is not
// SIGTERM (PostgreSQL's fast shutdown is SIGINT). SaveState records the
// signal so that a later `storebench server stop` sends the right one.
type StopSignaler interface {
	StopSignal() syscall.Signal
}

// stateFile is dir/<name>/instance.json: what a later storebench
// invocation needs to report on and stop an instance it did not start.
type stateFile struct {
	Name    string `json:"name"`
	URI     string `json:"uri"`
	PID     int    `json:"pid"`
	DataDir string `json:"data_dir"`
	LogPath string `json:"log_path"`
	Version string `json:"version"`
	// Settings as the server package stated them.
	Settings map[string]string `json:"settings"`
	// StopSignal is the clean-shutdown signal ("SIGTERM", "SIGINT").
	StopSignal string `json:"stop_signal"`
	// PIDStart is the process's start time (clock ticks since boot):
	// with PID it tells the server from a later process given its PID.
	PIDStart uint64 `json:"pid_start_time,omitempty"`
	// Nodes are a cluster's processes, each stopped by a later
	// `storebench server stop` (PID is the first node's only).
	Nodes []nodeState `json:"nodes,omitempty"`
}

type nodeState struct {
	Name     string `json:"name"`
	Addr     string `json:"addr"`
	DataDir  string `json:"data_dir"`
	Role     string `json:"role,omitempty"`
	PID      int    `json:"pid"`
	PIDStart uint64 `json:"pid_start_time,omitempty"`
}

func statePath(dir, name string) string {
	return filepath.Join(dir, name, "instance.json")
}

// SaveState records inst in dir/<inst.Name>/instance.json, readable by
// us only (the URI may carry a password).
func SaveState(dir string, inst *Instance) error {
	if inst == nil || inst.Name == "" {
		return errors.New("saving server state: no instance")
	}
	sig := syscall.SIGTERM
	if s, err := Lookup(inst.Name); err == nil {
		if ss, ok := s.(StopSignaler); ok {
			sig = ss.StopSignal()
		}
	}
	st := stateFile{
		Name: inst.Name, URI: inst.URI, PID: inst.PID, DataDir: inst.DataDir, LogPath: inst.LogPath,
		Version: inst.Version, Settings: inst.Settings, StopSignal: unix.SignalName(sig),
	}
	if start, err := proc.StartTime(inst.PID); err == nil {
		st.PIDStart = start
	}
	for _, n := range inst.Nodes {
		ns := nodeState{Name: n.Name, Addr: n.Addr, DataDir: n.DataDir, Role: n.Role, PID: n.PID()}
		if start, err := proc.StartTime(ns.PID); err == nil {
			ns.PIDStart = start
		}
		st.Nodes = append(st.Nodes, ns)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("saving %s state: %w", inst.Name, err)
	}
	path := statePath(dir, inst.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("saving %s state: %w", inst.Name, err)
	}
	// Written aside then renamed: a concurrent status never reads half a
	// file.
	tmp, err := os.CreateTemp(filepath.Dir(path), "instance.json.tmp-")
	if err != nil {
		return fmt.Errorf("saving %s state: %w", inst.Name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("saving %s state: %w", inst.Name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving %s state: %w", inst.Name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("saving %s state: %w", inst.Name, err)
	}
	return nil
}

// LoadState reads the instance SaveState recorded for name. Its StopFunc
// stops the recorded PID with the recorded signal, killing it after
// DefaultStopTimeout (or the context's deadline, if sooner). When the
// recorded process is gone, or its PID now belongs to another process,
// the Instance's PID is 0 (Alive(0) is false) and StopFunc does nothing:
// a stale file never leads to signalling a stranger. A missing file is
// an error satisfying errors.Is(err, os.ErrNotExist).
func LoadState(dir, name string) (*Instance, error) {
	path := statePath(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no saved %s instance: %w", name, err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	sig := syscall.SIGTERM
	if st.StopSignal != "" {
		if sig = unix.SignalNum(st.StopSignal); sig == 0 {
			return nil, fmt.Errorf("reading %s: unknown stop signal %q", path, st.StopSignal)
		}
	}
	pid := st.PID
	if !sameProcess(pid, st.PIDStart) {
		pid = 0
	}
	inst := &Instance{
		Name: st.Name, URI: st.URI, PID: pid, DataDir: st.DataDir, LogPath: st.LogPath,
		Version: st.Version, Settings: st.Settings,
	}
	if len(st.Nodes) > 0 {
		return loadCluster(inst, st, sig), nil
	}
	inst.StopFunc = func(ctx context.Context) error {
		if pid == 0 || !sameProcess(pid, st.PIDStart) {
			return nil
		}
		if err := StopPID(ctx, pid, sig, DefaultStopTimeout); err != nil {
			return fmt.Errorf("stopping %s: %w", st.Name, err)
		}
		return nil
	}
	return inst, nil
}

// loadCluster fills a recorded cluster's nodes: the instance runs while
// any node does (its PID is the first live node's), and stopping it stops
// every live node at once.
func loadCluster(inst *Instance, st stateFile, sig syscall.Signal) *Instance {
	inst.PID = 0
	for _, ns := range st.Nodes {
		pid := ns.PID
		if !sameProcess(pid, ns.PIDStart) {
			pid = 0
		}
		if inst.PID == 0 {
			inst.PID = pid
		}
		inst.Nodes = append(inst.Nodes, &Node{Name: ns.Name, Addr: ns.Addr, DataDir: ns.DataDir, Role: ns.Role, pid: pid, stopSignal: sig})
	}
	inst.StopFunc = func(ctx context.Context) error {
		errs := make(chan error, len(st.Nodes))
		for _, ns := range st.Nodes {
			go func() {
				if !sameProcess(ns.PID, ns.PIDStart) {
					errs <- nil
					return
				}
				if err := StopPID(ctx, ns.PID, sig, DefaultStopTimeout); err != nil {
					errs <- fmt.Errorf("stopping %s %s: %w", st.Name, ns.Name, err)
					return
				}
				errs <- nil
			}()
		}
		var all []error
		for range st.Nodes {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	}
	return inst
}

// sameProcess reports whether pid is alive and, when start is known, is
// still the process that was recorded.
func sameProcess(pid int, start uint64) bool {
	if !Alive(pid) {
		return false
	}
	if start == 0 {
		return true
	}
	now, err := proc.StartTime(pid)
	return err != nil || now == start
}

// RemoveState deletes name's saved instance (after a stop).
func RemoveState(dir, name string) error {
	if err := os.RemoveAll(filepath.Join(dir, name, "instance.json")); err != nil {
		return fmt.Errorf("removing %s state: %w", name, err)
	}
	return nil
}

// StopPID stops a process by PID: sig (SIGTERM when 0), then SIGKILL to
// its process group once timeout passes or ctx ends. It returns nil once
// the process is gone after sig, an error if it had to be killed.
func StopPID(ctx context.Context, pid int, sig syscall.Signal, timeout time.Duration) error {
	return proc.StopPID(ctx, pid, sig, timeout)
}

// Alive reports whether a process with that PID runs (zombies excluded).
func Alive(pid int) bool { return proc.Alive(pid) }
