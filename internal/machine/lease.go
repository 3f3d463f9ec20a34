//go:build linux

package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/home"
	"storebench/internal/measure/procstat"
)

// A lease records the groups a storebench process created, by directory,
// and which process owns them (pid and start time), like a managed
// server's lease (internal/server): should the owner die before it
// closes them (kill -9, a crash), the next storebench's Reap removes
// them. It is written before the first directory is made and removed
// after the last is gone.
type lease struct {
	Owner      int     `json:"owner_pid"`
	OwnerStart uint64  `json:"owner_start_time"`
	Run        string  `json:"run"`
	Shape      string  `json:"shape"`
	Created    string  `json:"created"`
	Groups     []cgDir `json:"groups"`
}

// LeaseDir is where the leases live: machines/ in storebench's own
// directory (package home).
func LeaseDir() string { return home.Sub("machines") }

func (g *Group) writeLease() error {
	st, err := procstat.StatOf(os.Getpid())
	if err != nil {
		return fmt.Errorf("leasing machine %s: %w", g.shape.Title(), err)
	}
	l := lease{Owner: os.Getpid(), OwnerStart: st.StartTicks, Run: g.run, Shape: g.shape.String(),
		Created: time.Now().UTC().Format(time.RFC3339), Groups: g.dirs}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("leasing machine %s: %w", g.shape.Title(), err)
	}
	dir := LeaseDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("leasing machine %s: %w", g.shape.Title(), err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", l.Owner, g.name))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("leasing machine %s: %w", g.shape.Title(), err)
	}
	_, werr := f.Write(append(b, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return fmt.Errorf("leasing machine %s: %w", g.shape.Title(), werr)
	}
	g.leasePath = path
	return nil
}

func (g *Group) releaseLease() {
	if g.leasePath != "" {
		_ = os.Remove(g.leasePath)
		g.leasePath = ""
	}
}

// Leftover is a group Reap found.
type Leftover struct {
	// Lease is the lease file, Owner the storebench process that made the
	// group (gone), Run and Shape what it was for.
	Lease, Run, Shape string
	Owner             int
	// Dirs are its cgroup directories; Procs the processes that were still
	// in them and were moved to their hierarchy's root group.
	Dirs  []string
	Procs []int
}

// Reap removes the groups whose owning storebench process is gone (a run
// killed with kill -9 or crashed before it closed them) and their leases:
// processes still in them are moved to the root group (not killed: a
// managed server left running is reaped by its own lease), then the
// directories are removed. The groups of live owners are left alone; so
// is a lease naming a directory that is not a storebench group under a
// mounted cgroup hierarchy (it is reported, never acted on). It returns
// what it removed.
func Reap() ([]Leftover, error) {
	dir := LeaseDir()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading machine leases: %w", err)
	}
	var out []Leftover
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
			errs = append(errs, fmt.Errorf("machine lease %s: %w", path, err))
			continue
		}
		if sameProcess(l.Owner, l.OwnerStart) {
			continue
		}
		left := Leftover{Lease: path, Run: l.Run, Shape: l.Shape, Owner: l.Owner}
		ok := true
		for _, d := range l.Groups {
			if !ownGroupDir(d) {
				errs = append(errs, fmt.Errorf("machine lease %s names %s, which is not a storebench cgroup: left alone", path, d.Dir))
				ok = false
				continue
			}
			if ps, err := procsOf(d.Dir); err == nil {
				left.Procs = append(left.Procs, ps...)
			}
			if _, err := os.Stat(d.Dir); err == nil {
				left.Dirs = append(left.Dirs, d.Dir)
			}
			if err := removeGroup(d.Dir, d.Mount); err != nil {
				errs = append(errs, err)
				ok = false
			}
		}
		if ok {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		out = append(out, left)
	}
	return out, errors.Join(errs...)
}

// ownGroupDir reports whether d is a group this package makes:
// <mount>/storebench/<name>, mount a mounted cgroup v1 hierarchy.
func ownGroupDir(d cgDir) bool {
	clean := filepath.Clean(d.Dir)
	name := filepath.Base(clean)
	return clean == d.Dir && filepath.IsAbs(clean) && validRunID(name) &&
		filepath.Dir(clean) == filepath.Join(d.Mount, ParentName) && isCgroupMount(d.Mount)
}
