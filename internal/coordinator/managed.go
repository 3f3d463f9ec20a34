package coordinator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/event"
	"storebench/internal/fault"
	"storebench/internal/home"
	"storebench/internal/machine"
	"storebench/internal/measure/procstat"
	"storebench/internal/powerfs"
	"storebench/internal/redact"
	"storebench/internal/results"
	"storebench/internal/server"
	"storebench/internal/server/crashable"
	"storebench/internal/workload"
)

// managed is a server storebench started for one target of a run. Its
// process tree and data directory are measured around every step, apart
// from the client worker, so a report can tell whose CPU ran out.
type managed struct {
	inst  *server.Instance
	title string
	// elsewhere is the data directory when it had to live outside the run
	// directory; it is removed after the server stops unless data is kept.
	elsewhere string
	keep      bool
	// release removes the lease that lets a later run stop this server
	// should this process die without stopping it; remove is the
	// directory that lease names.
	release func()
	remove  string
	// crash, set when a step has a crash action (fault.Kill9,
	// fault.PowerLoss), is the server started to take it; mount is the
	// power-loss mount (package powerfs) its data lives on when one is a
	// power loss.
	crash *crashable.Server
	mount *powerfs.Mount
	// mg is the machine group the server runs in (nil: none): a restarted
	// server is placed in it again.
	mg *machine.Group
	// nodeMG is, on a cluster, each node's own machine group (node i+1's
	// at i; machine_nodes.go), nodeBefore their counters as the step
	// started.
	nodeMG     []*machine.Group
	nodeBefore []machine.Stats
	// nodeHolds is, under a cache shape, each node's page-cache hold
	// through the step (machine_nodes.go).
	nodeHolds *nodeHolds
}

// logWriter turns a server's progress lines into events.
type logWriter struct{ emit func(event.Event) error }

func (w logWriter) Write(p []byte) (int, error) {
	_ = w.emit(event.ServerLog{Line: string(trimNL(p))})
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// startManaged installs the target's server if needed, then starts it
// under the target's data directory (r.dir) with the study's durability
// and the target's cache (which sizes the server's own cache: see
// server.Config.MemoryBytes).
func (r *targetRun) startManaged() (*managed, error) {
	ctx, o, info, dir, name := r.ctx, r.o, r.info, r.dir, r.t.Name
	if info.Server == "" {
		return nil, info.NeedsURI()
	}
	srv, err := server.Lookup(info.Server)
	if err != nil {
		return nil, err
	}
	log := logWriter{o.emit}
	if err := ensureInstalled(ctx, o, name, srv); err != nil {
		return nil, err
	}
	elsewhere := ""
	if !home.OthersTraverse(filepath.Dir(dir)) {
		// Servers that drop privileges (PostgreSQL, MariaDB) cannot reach a
		// data directory under a private one (a 0700 home): keep the
		// server's data in a world-traversable place instead, and say so.
		alt, err := dataElsewhere(dir)
		if err != nil {
			return nil, fmt.Errorf("%s is not reachable by other users, and a data directory elsewhere could not be made: %w", filepath.Dir(dir), err)
		}
		o.notice(name, fmt.Sprintf("%s is not reachable by other users; server data goes to %s", filepath.Dir(dir), alt))
		dir = alt
		elsewhere = alt
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Servers a killed run left behind (they die with it, but belt and
	// braces) are stopped before another is started.
	if err := server.ReapLeftovers(ctx, log); err != nil {
		o.notice(name, err.Error())
	}
	_ = o.emit(event.ServerStarting{Target: name, Title: srv.Title()})
	t0 := time.Now()
	m := &managed{elsewhere: elsewhere, keep: o.KeepData}
	if !o.KeepData && elsewhere != "" {
		m.remove = filepath.Dir(elsewhere)
	}
	cfg := server.Config{Dir: dir, Durability: durabilityOf(r.s, info), MemoryBytes: int64(r.t.Cache), Options: r.t.Options, Log: log}
	if err := m.start(ctx, srv, cfg, r.steps); err != nil {
		m.stopQuietly()
		return nil, err
	}
	release, err := server.Lease(m.inst, m.remove)
	if err != nil {
		m.stopQuietly()
		return nil, err
	}
	m.release = release
	_ = o.emit(event.ServerReady{Target: name, URI: redact.Text(m.inst.URI), Took: time.Since(t0), PID: m.inst.PID})
	m.title, _, _ = strings.Cut(srv.Title(), " (")
	return m, nil
}

// start starts srv with cfg; when a step has a crash action, as a
// crashable server, on a power-loss mount (in cfg.Dir) when one is a power
// loss. What it started is in m, for stopQuietly should it fail.
func (m *managed) start(ctx context.Context, srv server.Server, cfg server.Config, steps []workload.Step) error {
	var crash, powerLoss bool
	for _, st := range steps {
		c, p := fault.Crashes(st.Faults)
		crash, powerLoss = crash || c, powerLoss || p
	}
	if !crash {
		inst, err := srv.Start(ctx, cfg)
		m.inst = inst
		return err
	}
	if powerLoss {
		// powerfs can mount here: checkCrashTargets said so.
		mnt, err := powerfs.New(ctx, filepath.Join(cfg.Dir, "powerfs"), powerfs.ModelData)
		if err != nil {
			return err
		}
		m.mount = mnt
	}
	cs, err := crashable.Start(ctx, srv.Name(), cfg, m.mount)
	if err != nil {
		return err
	}
	m.crash, m.inst = cs, cs.Instance()
	return nil
}

// crashAndRestart takes a crash action (fault.Kill9, fault.PowerLoss) on
// the server and starts it again on its data, under a new lease.
func (m *managed) crashAndRestart(ctx context.Context, kind string) error {
	if m.crash == nil {
		return fmt.Errorf("%s: the server was not started to take a crash", kind)
	}
	if err := m.crash.Crash(ctx, kind); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	if err := m.crash.Restart(ctx); err != nil {
		return fmt.Errorf("restarting after %s: %w", kind, err)
	}
	m.inst = m.crash.Instance()
	if err := m.place(); err != nil {
		return fmt.Errorf("restarting after %s: %w", kind, err)
	}
	m.release()
	release, err := server.Lease(m.inst, m.remove)
	if err != nil {
		m.release = func() {}
		return err
	}
	m.release = release
	return nil
}

// stopQuietly stops what a failed start left: the server, its mount.
func (m *managed) stopQuietly() {
	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
	defer cancel()
	if m.inst != nil {
		_ = m.inst.Stop(ctx)
	}
	if m.mount != nil {
		_ = m.mount.Close()
	}
}

// ensureInstalled installs srv when its check fails, with its progress
// lines above the bar, and checks it again.
func ensureInstalled(ctx context.Context, o Options, name string, srv server.Server) error {
	err := srv.Check()
	if err == nil {
		return nil
	}
	o.notice(name, fmt.Sprintf("%v; installing %s", err, srv.Title()))
	if ierr := srv.Install(ctx, logWriter{o.emit}); ierr != nil {
		return fmt.Errorf("installing %s: %w", srv.Title(), ierr)
	}
	return srv.Check()
}

// installStepServers installs the servers the runnable steps start in
// the worker themselves (workload.ServerUser): a study's Kafka
// transport installs Kafka on demand as a Kafka target would.
func installStepServers(ctx context.Context, o Options, name string, steps []workload.Step, runnable []bool) error {
	seen := map[string]bool{}
	for j, st := range steps {
		if !runnable[j] {
			continue
		}
		w, err := workload.Lookup(st.Workload)
		if err != nil {
			return err
		}
		su, ok := w.(workload.ServerUser)
		if !ok {
			continue
		}
		for _, sn := range su.Servers(st) {
			if seen[sn] {
				continue
			}
			seen[sn] = true
			srv, err := server.Lookup(sn)
			if err != nil {
				return fmt.Errorf("%s %s: %w", st.Workload, st.Phase, err)
			}
			if err := ensureInstalled(ctx, o, name, srv); err != nil {
				return fmt.Errorf("%s %s needs %s: %w", st.Workload, st.Phase, srv.Title(), err)
			}
		}
	}
	return nil
}

// dataElsewhere is the server's data directory when dir is out of other
// users' reach: one of its own under the temporary directory, named
// after the run and unique (the same study run in the same second
// elsewhere gets another), removed with the run.
func dataElsewhere(dir string) (string, error) {
	run := filepath.Base(filepath.Dir(filepath.Dir(dir)))
	d, err := home.SharedTemp("storebench-data-" + run + "-")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, filepath.Base(dir)), nil
}

func (m *managed) describe(runDir string) *results.Server {
	log := m.inst.LogPath
	if rel, err := filepath.Rel(runDir, log); err == nil {
		log = rel
	}
	return &results.Server{Name: m.inst.Name, Managed: true, URI: redact.Text(m.inst.URI), Version: m.inst.Version,
		PID: m.inst.PID, Settings: m.inst.Settings, Log: log}
}

func (m *managed) stop(emit func(event.Event) error, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
	defer cancel()
	err := m.inst.Stop(ctx)
	if m.mount != nil {
		// After the server: nothing holds the mount's files now.
		if merr := m.mount.Close(); merr != nil && err == nil {
			err = fmt.Errorf("unmounting the power-loss file system: %w", merr)
		}
	}
	_ = emit(event.ServerStopped{Target: name, Err: err})
	if !server.Alive(m.inst.PID) {
		m.release()
	}
	if m.elsewhere != "" && !m.keep {
		// The directory made for it (dataElsewhere) goes with it.
		_ = os.RemoveAll(filepath.Dir(m.elsewhere))
	}
}

// snapshot of the server's process tree (nil-safe: embedded targets
// have no managed server).
func (m *managed) snapshot() serverSample {
	if m == nil {
		return serverSample{}
	}
	s, _ := procstat.Tree(m.inst.PID)
	d, _ := procstat.DeviceOf(m.inst.DataDir)
	return serverSample{proc: s, dev: d}
}

// serverSample is a managed server's process tree and the device under
// its data directory at one moment.
type serverSample struct {
	proc procstat.Snapshot
	dev  procstat.DeviceIO
}

func (m *managed) resources(b serverSample) *results.Resources {
	if m == nil {
		return nil
	}
	a := m.snapshot()
	before, after := b.proc, a.proc
	r := &results.Resources{Before: before, After: after, CPUPercent: procstat.CPUPercent(before, after),
		Seconds: after.At.Sub(before.At).Seconds()}
	if b.dev.Device != "" {
		r.SetDevice(b.dev, a.dev)
	}
	r.DiskAllocated, r.DiskApparent, _ = procstat.DiskUsage(m.inst.DataDir)
	r.CacheResident, r.CacheTotal, _ = procstat.PageCache(m.inst.DataDir)
	return r
}
