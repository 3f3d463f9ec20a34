package coordinator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/kv"
	"storebench/internal/measure/procstat"
	"storebench/internal/progress"
	"storebench/internal/results"
	"storebench/internal/server"
	"storebench/internal/study"
	"storebench/internal/target"
)

// managed is a server storebench started for one target of a run. Its
// process tree and data directory are measured around every step, apart
// from the client worker, so a report can tell whose CPU ran out.
type managed struct {
	inst  *server.Instance
	title string
}

// barWriter prints a server's progress lines above the progress bar.
type barWriter struct{ bar *progress.Bar }

func (w barWriter) Write(p []byte) (int, error) {
	w.bar.Println(string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// startManaged installs the target's server if needed, then starts it
// under dir with the study's durability.
func startManaged(ctx context.Context, o Options, s *study.Study, name string, info target.Info, dir string) (*managed, error) {
	if info.Server == "" {
		return nil, fmt.Errorf("%s has no server storebench can run here: name one by URI (%s://host:port/...)", info.Name, info.Schemes[0])
	}
	srv, err := server.Lookup(info.Server)
	if err != nil {
		return nil, err
	}
	log := barWriter{o.Bar}
	if err := srv.Check(); err != nil {
		o.Bar.Println(fmt.Sprintf("%-10s %v; installing %s", name, err, srv.Title()))
		if ierr := srv.Install(ctx, log); ierr != nil {
			return nil, fmt.Errorf("installing %s: %w", srv.Title(), ierr)
		}
		if err := srv.Check(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	o.Bar.Println(fmt.Sprintf("%-10s starting %s ...", name, srv.Title()))
	t0 := time.Now()
	inst, err := srv.Start(ctx, server.Config{Dir: dir, Durability: kv.Durability(s.Durability), Log: log})
	if err != nil {
		return nil, err
	}
	o.Bar.Println(fmt.Sprintf("%-10s ready at %s in %.1fs (pid %d)", name, target.RedactURI(inst.URI), time.Since(t0).Seconds(), inst.PID))
	title, _, _ := strings.Cut(srv.Title(), " (")
	return &managed{inst: inst, title: title}, nil
}

func (m *managed) describe(runDir string) *results.Server {
	log := m.inst.LogPath
	if rel, err := filepath.Rel(runDir, log); err == nil {
		log = rel
	}
	return &results.Server{Name: m.inst.Name, Managed: true, URI: target.RedactURI(m.inst.URI), Version: m.inst.Version,
		PID: m.inst.PID, Settings: m.inst.Settings, Log: log}
}

func (m *managed) stop(bar *progress.Bar, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
	defer cancel()
	if err := m.inst.Stop(ctx); err != nil {
		bar.Println(fmt.Sprintf("%-10s stopping the server: %v", name, err))
	}
}

// snapshot of the server's process tree (nil-safe: embedded targets
// have no managed server).
func (m *managed) snapshot() procstat.Snapshot {
	if m == nil {
		return procstat.Snapshot{}
	}
	s, _ := procstat.Tree(m.inst.PID)
	return s
}

func (m *managed) resources(before procstat.Snapshot) *results.Resources {
	if m == nil {
		return nil
	}
	after := m.snapshot()
	r := &results.Resources{Before: before, After: after, CPUPercent: procstat.CPUPercent(before, after)}
	r.DiskAllocated, r.DiskApparent, _ = procstat.DiskUsage(m.inst.DataDir)
	r.CacheResident, r.CacheTotal, _ = procstat.PageCache(m.inst.DataDir)
	return r
}
