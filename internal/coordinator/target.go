package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"storebench/internal/event"
	"storebench/internal/kv"
	"storebench/internal/machine"
	"storebench/internal/redact"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/target"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// targetRun is one target's part of a run: what runTarget's steps share.
type targetRun struct {
	// opened: every worker opened the target (a server named by URI is
	// then cleaned of what the run wrote, cleanExternal).
	opened bool
	ctx    context.Context
	o      Options
	s      *study.Study
	t      study.Target
	info   target.Info
	run    *results.Run
	tr     *results.Target
	runDir string
	// steps are the study's with this target's faults; runnable[j] says
	// whether it can run steps[j].
	steps    []workload.Step
	runnable []bool
	srv      *managed
	g        *group
	// shape is the machine the target runs on (nil: none), mg its group
	// once made.
	shape *machine.Shape
	mg    *machine.Group
	// machineAt is when the group's counters were read as the step
	// started (machineBefore).
	machineAt time.Time
	// cpus is where the target's sides run on the machine's CPUs, set as
	// its group is made (placement.go).
	cpus *cpuPlacement
	// hold keeps a cache=R shape's page cache to its share of the data
	// through a step (nil: none); cacheLimit is the limit it set at the
	// step's start and hiLimit the highest (nil, 0: none set).
	hold       *machine.CacheHold
	cacheLimit *machine.CacheLimit
	hiLimit    int64
	hiBudget   int64
	// uri is the server's, dir an embedded engine's data directory.
	uri, dir string
	// local: the data is on this machine's data filesystem.
	local    bool
	diskUsed int64
	// The disk taken at each data size so far, per workload (each has its
	// own bytes per item).
	sizes map[string][]footprint
}

func (r *targetRun) dataRoot() string { return filepath.Join(r.runDir, "data") }

// space is the data filesystem's free space: watched during every step,
// and checked before each fresh one. External servers keep their data
// elsewhere.
func (r *targetRun) space() (fsSpace, error) { return statSpace(r.dataRoot()) }

func stepOf(st workload.Step) event.Step {
	return event.Step{Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels}
}

// runTarget drives every step on one target in its own worker, as its
// planner gives them. na[j], when not empty, says why this target cannot
// run steps[j]; search[j] set runs steps[j] as a rate search.
func runTarget(ctx context.Context, o Options, run *results.Run, k int, plan *Plan, runDir string) {
	slot := plan.slots(o.Study)[k]
	i := slot.Target
	var na []string
	if i < len(plan.NA) {
		na = plan.NA[i]
	}
	t := o.Study.Targets[i]
	// Faults name the study's target; the run's name carries the machine.
	steps := faultsOn(plan.Steps, t.Name)
	t.Name = slot.Name
	r := &targetRun{ctx: ctx, o: o, s: o.Study, t: t, info: plan.Targets[i], run: run, tr: run.Targets[k],
		runDir: runDir, steps: steps, uri: t.URI, sizes: map[string][]footprint{}, shape: slot.Machine}
	r.dir = filepath.Join(r.dataRoot(), dataName(t.Name))
	r.markNA(na)
	if !o.KeepData {
		// A target that fails (a full disk) must not leave its data to
		// starve the next one; a successful one destroys its own.
		defer func() {
			if s := r.tr.Status; s == "failed" || s == "partial" || s == results.StatusInterrupted {
				_ = os.RemoveAll(filepath.Join(r.dataRoot(), dataName(t.Name)))
			}
		}()
	}
	_ = o.emit(event.TargetStarted{Run: run, Target: r.tr})
	if r.shape != nil {
		// The group is made before anything of the target starts, and
		// removed after all of it stopped (the deferred teardown below
		// runs first), also after Ctrl-C; a kill -9 leaves its lease to
		// machine.Reap.
		if !r.machineGroup(k) {
			return
		}
		defer r.closeMachine()
	}
	if !r.setUp() {
		return
	}
	// The workers quit before their server stops; on a server named by
	// URI what the run wrote is then removed (also when interrupted).
	defer func() {
		r.g.quit(5 * time.Second)
		r.stopServer()
		if r.opened && r.external() && !r.o.KeepData {
			r.cleanExternal()
		}
	}()
	if !r.open() {
		return
	}
	if !r.runSteps(plan.Search) {
		return
	}
	if _, err := r.g.each(wire.Request{Cmd: wire.CmdDestroy}); err != nil {
		r.o.notice(t.Name, fmt.Sprintf("could not remove its data: %v", err))
	}
}

// markNA records the steps the target cannot run as n/a, before anything
// starts, so that a failure later still leaves them in results.json. A
// step that continues on the data of an n/a fresh step is n/a too.
func (r *targetRun) markNA(na []string) {
	r.runnable = make([]bool, len(r.steps))
	freshNA := ""
	for j, st := range r.steps {
		why := ""
		if j < len(na) {
			why = na[j]
		}
		if st.Fresh {
			freshNA = why
		} else if why == "" && freshNA != "" {
			why = freshNA
		}
		if why == "" {
			r.runnable[j] = true
			continue
		}
		r.tr.NA = append(r.tr.NA, results.NA{Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels, Status: "n/a", Reason: why})
		_ = r.o.emit(event.StepNA{Target: r.t.Name, Step: stepOf(st), Reason: why})
	}
}

// failed records a failure to get the target going, or, when the run was
// stopped meanwhile (Ctrl-C during a server's start), the stop: a
// cancelled start is not the target's failure.
func (r *targetRun) failed(how string, err error) {
	if r.ctx.Err() != nil {
		r.tr.Status, r.tr.Reason = stopStatus(r.ctx), "stopped before its first step: "+stopWhy(r.ctx)
		_ = r.o.emit(event.TargetFailed{Target: r.t.Name, Reason: r.tr.Reason, Stopped: true})
		return
	}
	r.tr.Status, r.tr.Reason = "failed", err.Error()
	_ = r.o.emit(event.TargetFailed{Target: r.t.Name, How: how, Reason: r.tr.Reason})
}

// setUp installs what the steps need, starts the target's server (unless
// it is embedded or named by URI) and its workers. On false the target
// failed (r.srv, when set, is stopped).
func (r *targetRun) setUp() bool {
	// Every ssh host is checked before any server is installed or
	// started: a host that cannot be reached costs no server start, and
	// its error comes first.
	if err := checkHosts(r.ctx, r.o, r.s); err != nil {
		r.failed("", err)
		return false
	}
	if err := installStepServers(r.ctx, r.o, r.t.Name, r.steps, r.runnable); err != nil {
		r.failed("", err)
		return false
	}
	if !r.info.Embedded() {
		if err := r.server(); err != nil {
			r.failed("", err)
			return false
		}
		if err := r.placeServer(); err != nil {
			r.failed("", err)
			r.stopServer()
			return false
		}
	}
	if err := checkFaultTargets(r.srv, r.steps); err != nil {
		r.tr.Status, r.tr.Reason = "failed", err.Error()
		_ = r.o.emit(event.TargetFailed{Target: r.t.Name, Reason: r.tr.Reason})
		r.stopServer()
		return false
	}
	if err := r.workers(); err != nil {
		r.failed("", err)
		r.stopServer()
		return false
	}
	if err := r.placeWorker(); err != nil {
		r.failed("", err)
		r.g.quit(5 * time.Second)
		r.stopServer()
		return false
	}
	if err := r.pinClients(); err != nil {
		r.failed("", err)
		r.g.quit(5 * time.Second)
		r.stopServer()
		return false
	}
	return true
}

// stopServer stops the target's managed server, if it has one.
func (r *targetRun) stopServer() {
	if r.srv != nil {
		r.srv.stop(r.o.emit, r.t.Name)
	}
}

// server starts the target's managed server, or describes the one its
// URI names.
func (r *targetRun) server() error {
	t := r.t
	if r.uri == "" {
		srv, err := r.startManaged()
		if err != nil {
			return err
		}
		r.srv, r.uri = srv, srv.inst.URI
		r.tr.Server = srv.describe(r.runDir)
	} else {
		r.tr.Server = &results.Server{Name: r.info.Name, URI: redact.Text(r.uri)}
		if t.Cache > 0 {
			// Said rather than silently dropped: the server's own
			// cache is its operator's setting.
			r.tr.Server.Settings = map[string]string{"cache": fmt.Sprintf("%s asked, not applied: a server named by URI is sized by whoever runs it", human(int64(t.Cache)))}
		}
	}
	r.dir = ""
	return nil
}

// workers starts the target's worker processes.
func (r *targetRun) workers() error {
	r.tr.Log = filepath.Join("logs", r.t.Name+".log")
	g, err := startGroup(r.ctx, r.o, r.s, r.t.Name, r.runDir)
	if err != nil {
		return err
	}
	r.g = g
	r.tr.WorkerPID = g.procs[0].hello.PID
	if len(g.procs) > 1 || g.remote[0] {
		for _, p := range g.procs {
			r.tr.Workers = append(r.tr.Workers, results.WorkerProc{Host: p.host, PID: p.hello.PID})
		}
	}
	if r.dir != "" && g.remote[0] {
		// An embedded engine on a remote worker keeps its data on that
		// host, under the worker's login directory.
		cache := r.s.SSH.CacheDir
		if cache == "" {
			cache = defaultRemoteCache
		}
		r.dir = filepath.Join(cache, "data", filepath.Base(r.runDir), r.t.Name)
	}
	r.local = (r.info.Embedded() && !g.remote[0]) || r.srv != nil
	return nil
}

// open opens the store in every worker.
func (r *targetRun) open() bool {
	s, t := r.s, r.t
	ev, err := r.g.each(wire.Request{Cmd: wire.CmdOpen, Open: &wire.OpenArgs{
		Target: r.info.Name, Dir: r.dir, URI: r.uri, Durability: string(durabilityOf(s, r.info)), CacheBytes: int64(t.Cache), Options: t.Options,
		Concurrency: maxConcurrency(r.steps), ClientCPUs: s.ClientCPUs, External: r.external(),
	}})
	if err != nil {
		r.failed(" to open", err)
		return false
	}
	r.opened = true
	r.tr.Title, r.tr.Version, r.tr.Settings = ev.Opened.Title, ev.Opened.Version, ev.Opened.Settings
	if s.Durability == string(kv.Default) {
		// What the engine's default is, beside the class it ran in.
		if r.tr.Settings == nil {
			r.tr.Settings = map[string]string{}
		}
		r.tr.Settings["durability_default"] = r.info.DefaultNote
		r.tr.Settings["durability_class"] = string(r.info.Default)
	}
	if r.srv != nil && !strings.Contains(r.tr.Title, r.srv.title) {
		// Name the column after the server that was measured: the mongodb
		// target on FerretDB is FerretDB, never MongoDB. A title that
		// already names its server stays (PostGIS on PostgreSQL is not the
		// postgres target's column).
		r.tr.Title = r.srv.title
	}
	if r.shape != nil {
		r.tr.Title += " on " + r.shape.Title()
		r.machineNotes()
	}
	return true
}

// runSteps runs the steps the target can run as the planner gives them
// (a search's trials are planned from the last result); false when the
// target stopped or failed on the way.
func (r *targetRun) runSteps(search []*sweep.RateSpec) bool {
	var mine []workload.Step
	var mineSearch []*sweep.RateSpec
	for j, st := range r.steps {
		if r.runnable[j] {
			mine = append(mine, st)
			var sp *sweep.RateSpec
			if j < len(search) {
				sp = search[j]
			}
			mineSearch = append(mineSearch, sp)
		}
	}
	planner := sweep.NewAdaptive(mine, mineSearch)
	defer func() { r.tr.Searches = planner.Searches() }()
	var last *results.Step
	// A step's end is told once the planner has judged it: the step (and
	// a search's curve so far, with the trial just judged) reaches
	// results.json before the next step starts, so that a kill -9 loses
	// at most the step under way.
	var pending *event.StepFinished
	for {
		if r.ctx.Err() != nil {
			if pending != nil {
				_ = r.o.emit(*pending)
			}
			r.tr.Status, r.tr.Reason = stopStatus(r.ctx), "stopped: "+stopWhy(r.ctx)
			return false
		}
		st, ok := planner.Next(last)
		if pending != nil {
			r.tr.Searches = planner.Searches()
			_ = r.o.emit(*pending)
			pending = nil
		}
		if !ok {
			return true
		}
		if !r.fits(st) {
			return false
		}
		res, fin := r.step(st)
		if fin.Outcome != event.StepOK {
			_ = r.o.emit(fin)
			return false
		}
		last, pending = res, &fin
	}
}

// fits checks a fresh step's disk before it starts (the last footprint
// scaled to its size, or the workload's bytes per item): one that would
// exceed the disk limit or the free space, and the larger ones after it,
// are not started.
func (r *targetRun) fits(st workload.Step) bool {
	if !st.Fresh {
		return true
	}
	var sp *fsSpace
	if r.local {
		if x, err := r.space(); err == nil {
			sp = &x
		}
	}
	least, scaled := estimateDisk(r.sizes[st.Workload], st.N, st.ItemBytes)
	refuse, warn := checkFits(least, scaled, int64(r.s.Limits.Disk), sp, r.diskUsed, st.N)
	if refuse != "" {
		r.tr.Status, r.tr.Reason = "partial", refuse
		r.o.notice(r.t.Name, r.tr.Reason)
		return false
	}
	if warn != "" {
		r.o.notice(r.t.Name, "warning: "+warn)
	}
	return true
}

// step runs one step and records it; it returns the step's result and
// how it ended (the target's status set when it stopped or failed).
func (r *targetRun) step(st workload.Step) (*results.Step, event.StepFinished) {
	_ = r.o.emit(event.StepStarted{Study: r.s.Name, Target: r.t.Name, Step: stepOf(st)})
	res, err := r.measure(st)
	if res != nil {
		r.record(st, res)
	}
	fin := event.StepFinished{Study: r.s.Name, Target: r.t.Name, Step: stepOf(st), Result: res, Run: r.run, Outcome: event.StepOK}
	stopped := fmt.Sprintf("stopped during %s N=%s: %s", st.Phase, study.FormatCount(st.N), stopWhy(r.ctx))
	switch {
	case err != nil && r.ctx.Err() != nil:
		r.tr.Status, r.tr.Reason = stopStatus(r.ctx), stopped
		fin.Outcome, fin.Why = event.StepStopped, stopWhy(r.ctx)
	case err != nil:
		r.tr.Status, r.tr.Reason = "failed", fmt.Sprintf("%s N=%s: %v", st.Phase, study.FormatCount(st.N), err)
		fin.Outcome, fin.Why = event.StepFailed, err.Error()
	case res != nil && res.Partial:
		r.tr.Status, r.tr.Reason = stopStatus(r.ctx), stopped
		fin.Outcome, fin.Why = event.StepPartial, stopWhy(r.ctx)
	}
	return res, fin
}

// measure has the workers run the step, with its faults and the disk
// watched, and adds the server's resources to what they measured.
func (r *targetRun) measure(st workload.Step) (*results.Step, error) {
	before, beforeNodes := r.srv.snapshot(), r.srv.nodeSnapshots()
	machineBefore := r.machineBefore(st.Fresh)
	stepCtx, cancelStep := context.WithCancelCause(r.ctx)
	faults := startFaults(stepCtx, r.srv, st.Faults, r.o.emit, r.t.Name)
	var done atomic.Int64
	stopWatch := func() {}
	if r.local {
		stopWatch = watchDisk(stepCtx, cancelStep, r.space, &done)
	}
	t0, ev := time.Now(), stepOf(st)
	res, profiles, err := r.g.step(stepCtx, st, r.o.Profile, func(n, total int64) {
		done.Store(n)
		_ = r.o.emit(event.Tick{Target: r.t.Name, Step: ev, Done: n, Total: total, Elapsed: time.Since(t0)})
	}, faults.begin)
	// The group's counters are read again at once: the scans of the
	// server's files below take time the step did not, and a server's
	// background work (a fork saving its data) would be charged to it.
	r.machineMetrics(res, machineBefore)
	stopWatch()
	events := faults.finish()
	err = r.diskError(stepCtx, err)
	cancelStep(nil)
	if res != nil && r.srv != nil {
		res.ServerResources = r.srv.resources(before)
		if len(beforeNodes) > 0 && res.ServerResources != nil {
			clusterResources(res, r.srv, beforeNodes)
		}
		if res.ServerResources != nil {
			r.diskUsed = res.ServerResources.DiskAllocated
		}
	}
	r.endHold()
	err = r.machineError(res, err, machineBefore)
	if res != nil {
		res.Events = eventsOf(events, res.Started)
		r.writeFiles(res, profiles)
		if err == nil && !res.Partial && r.ctx.Err() == nil {
			if why := unstruck(st, res); why != "" {
				res.Error, err = why, errors.New(why)
			}
		}
	}
	if len(st.Faults) > 0 && r.ctx.Err() == nil {
		// A step cut short may have left a node down or paused.
		rctx, cancel := context.WithTimeout(r.ctx, 3*time.Minute)
		if rerr := restoreNodes(rctx, r.srv); rerr != nil && err == nil {
			err = fmt.Errorf("bringing the cluster back after the faults: %w", rerr)
		}
		cancel()
	}
	return res, err
}

// diskError is the step's error with the full disk that stopped it, or
// that it failed on, said.
func (r *targetRun) diskError(stepCtx context.Context, err error) error {
	var noSpace *NoSpaceError
	if c := context.Cause(stepCtx); r.ctx.Err() == nil && errors.As(c, &noSpace) {
		// The step was stopped because the disk is full: that fails
		// the target, whatever the worker answered.
		if err == nil {
			return noSpace
		}
		return fmt.Errorf("%w: %v", noSpace, err)
	}
	if err != nil && r.local {
		// A step that failed on its own on a full disk says so.
		if sp, serr := r.space(); serr == nil && sp.Free < diskFullBelow && !strings.Contains(err.Error(), "bytes free on") {
			return fmt.Errorf("%w: %v", &NoSpaceError{Free: sp.Free, Mount: sp.Mount}, err)
		}
	}
	return err
}

// writeFiles writes a step's HDR interval log and profiles beside
// results.json.
func (r *targetRun) writeFiles(res *results.Step, profiles map[string][]byte) {
	if herr := writeHlog(r.runDir, r.t.Name, r.tr.Machine, res); herr != nil {
		r.o.notice("", "warning: "+herr.Error())
	}
	if perr := writeProfiles(r.runDir, r.t.Name, res, profiles); perr != nil {
		r.o.notice("", "warning: "+perr.Error())
	}
}

// record adds a measured step to the target's results and its footprint
// to the disk estimates.
func (r *targetRun) record(st workload.Step, res *results.Step) {
	r.tr.Steps = append(r.tr.Steps, res)
	if res.ServerResources == nil {
		r.diskUsed = res.Resources.DiskAllocated
	}
	r.sizes[st.Workload] = record(r.sizes[st.Workload], st.N, r.diskUsed)
}
