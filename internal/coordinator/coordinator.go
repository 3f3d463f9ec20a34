// Package coordinator runs a study: it plans the steps, starts one worker
// process per target, drives the steps, enforces the limits, and writes
// the results directory (results.json, report.md, HDR logs, worker logs).
// Targets run one after another so that each has the machine to itself.
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"storebench/internal/progress"
	"storebench/internal/redact"
	"storebench/internal/report"
	"storebench/internal/results"
	sproc "storebench/internal/server/proc"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/sysinfo"
	"storebench/internal/target"
	"storebench/internal/wire"
	"storebench/internal/workload"
)

// Options of one run.
type Options struct {
	Study *study.Study
	// OutDir is the results root; the run writes OutDir/<study>-<time>/.
	OutDir string
	// Exe is the storebench binary to start workers from.
	Exe      string
	Version  string
	Command  []string
	Bar      *progress.Bar
	KeepData bool
	// Profile asks every worker for these pprof profiles of each step
	// (wire.ProfileKinds); they go to profiles/<target>/<step>.<kind>.pprof.
	Profile []string
}

// Plan is the checked, expanded form of a study: what will run.
type Plan struct {
	Steps []workload.Step
	// Search[j], when set, runs Steps[j] as a search for its highest
	// sustainable rate: trials planned one by one from the last result.
	Search  []*sweep.RateSpec
	Targets []target.Info
	// NA[i][j], when not empty, says why target i cannot run step j: the
	// step is recorded as "n/a" with that reason and the target's other
	// steps run.
	NA [][]string
}

// match checks every step against what a target provides and returns,
// per step, why the target cannot run it ("" when it can), and how many
// steps it can run.
func match(info target.Info, steps []workload.Step) (why []string, runnable int) {
	why = make([]string, len(steps))
	for j, st := range steps {
		if why[j] = info.Provides.CannotRun(st.Requires); why[j] == "" {
			runnable++
		}
	}
	return why, runnable
}

// nothingToRun is the one line that refuses a target that can run no step
// of the study: the reasons of each workload, once.
func nothingToRun(name string, steps []workload.Step, why []string) string {
	var parts []string
	seen := map[string]bool{}
	for j, st := range steps {
		k := st.Workload + ": " + why[j]
		if !seen[k] {
			seen[k] = true
			parts = append(parts, k)
		}
	}
	return fmt.Sprintf("%s can run nothing in this study (%s)", name, strings.Join(parts, "; "))
}

// Prepare validates the study against the registries and expands it into
// steps. Its errors are the user's (exit code 2), located: the flag that
// set a bad value, else the file's line (study.Locate).
func Prepare(s *study.Study) (*Plan, error) {
	p, err := prepare(s)
	if err != nil {
		return nil, s.Locate(err)
	}
	return p, nil
}

// planSteps expands the study's workloads into steps, each with its
// labels, and applies each workload's sweep (search[j] set: steps[j] is
// searched for its sustainable rate).
func planSteps(s *study.Study) (out []workload.Step, search []*sweep.RateSpec, err error) {
	for i, e := range s.Workloads {
		w, err := workload.Lookup(e.Name)
		if err != nil {
			return nil, nil, &study.Error{File: s.File, Field: fmt.Sprintf("workloads[%d].name", i), Msg: err.Error()}
		}
		s := s
		if e.Concurrency > 0 {
			// The entry's own concurrency: every workload plans from the
			// study's, so it plans from a copy that carries this one.
			c := *s
			c.Concurrency = e.Concurrency
			s = &c
		}
		raw, err := w.DecodeParams(s, e)
		if err != nil {
			return nil, nil, err
		}
		sp, err := sweep.Decode(s, e)
		if err != nil {
			return nil, nil, err
		}
		steps, err := w.Plan(s, raw)
		if err != nil {
			return nil, nil, err
		}
		steps, marks, err := sweep.Expand(s, e, sp, steps)
		if err != nil {
			return nil, nil, err
		}
		if err := attachFaults(s, e, steps); err != nil {
			return nil, nil, err
		}
		out = append(out, steps...)
		search = append(search, marks...)
	}
	return out, search, nil
}

func phasesOf(steps []workload.Step) map[string]bool {
	phases := map[string]bool{}
	for _, st := range steps {
		phases[st.Workload+"."+st.Phase] = true
	}
	return phases
}

func prepare(s *study.Study) (*Plan, error) {
	p := &Plan{}
	var err error
	if p.Steps, p.Search, err = planSteps(s); err != nil {
		return nil, err
	}
	phases := phasesOf(p.Steps)
	if err := s.CheckFigures(phases); err != nil {
		// A phase the constraints bound may have been removed by the
		// command line (--set ledger.stress.duration=0s): then the flag
		// is to blame, not the constraint. The file alone tells.
		if s.Overridden() {
			if orig, perr := study.Parse(s.File, []byte(s.Source)); perr == nil {
				if steps, _, perr := planSteps(orig); perr == nil {
					return nil, s.CheckFiguresAfter(phases, phasesOf(steps))
				}
			}
		}
		return nil, err
	}
	names := map[string]int{}
	for i := range s.Targets {
		t := &s.Targets[i]
		ref := t.Name
		if ref == "" {
			ref = t.URI
		}
		info, err := target.Lookup(ref)
		if err != nil {
			return nil, &study.Error{File: s.File, Field: fmt.Sprintf("targets[%d]", i), Msg: err.Error()}
		}
		if t.Name == "" {
			// An external server: name it after its target, numbered if the
			// study has several.
			t.Name = info.Name
			if names[t.Name] > 0 {
				t.Name = fmt.Sprintf("%s-%d", info.Name, names[info.Name]+1)
			}
		}
		names[info.Name]++
		if s.Workers > 1 && info.Embedded() {
			// An embedded engine's files are opened by one process: a
			// second worker would open a store of its own.
			return nil, &study.Error{File: s.File, Line: s.Line("workers"), Field: "workers",
				Msg: fmt.Sprintf("%d: %s is an embedded engine, opened by one process; several workers need a server target", s.Workers, t.Name)}
		}
		if s.Workers > 1 {
			// A step split across the workers needs a target whose data
			// they can share (a server that lets the others attach to
			// the table the first made): refused here, not mid-run.
			if err := splitOn(s, t.Name, info, p.Steps); err != nil {
				return nil, err
			}
		}
		if err := clientsFit(s, t, info, p.Steps); err != nil {
			return nil, err
		}
		// Each step's requirements are matched against what the target
		// provides: a step it cannot run is n/a for it (its other steps
		// run), and a target that can run nothing at all (an
		// authenticated store asked for the ledger) is refused here,
		// before any worker starts.
		why, runnable := match(info, p.Steps)
		if runnable == 0 && len(p.Steps) > 0 {
			return nil, &study.Error{File: s.File, Field: fmt.Sprintf("targets[%d]", i), Msg: nothingToRun(info.Name, p.Steps, why)}
		}
		for k := range t.Options {
			if !contains(info.OptionNames, k) {
				return nil, &study.Error{File: s.File, Field: fmt.Sprintf("targets[%d].options.%s", i, k),
					Msg: fmt.Sprintf("%s has no option %q (it has: %s)", info.Name, k, strings.Join(info.OptionNames, ", "))}
			}
		}
		p.Targets = append(p.Targets, info)
		p.NA = append(p.NA, why)
	}
	return p, nil
}

// splitOn refuses workers > 1 on a target that cannot share the data of
// a step that splits across them, naming the target, the step, what it
// lacks and the targets that have it.
func splitOn(s *study.Study, name string, info target.Info, steps []workload.Step) error {
	for _, st := range steps {
		if info.Provides.CannotRun(st.Requires) != "" {
			continue // n/a on this target: it does not run
		}
		lack := workload.CannotSplitOn(st, info.Provides)
		if lack == "" {
			continue
		}
		var can []string
		for _, o := range target.All() {
			if !o.Embedded() && o.Provides.CannotRun(st.Requires) == "" && workload.CannotSplitOn(st, o.Provides) == "" {
				can = append(can, o.Name)
			}
		}
		return &study.Error{File: s.File, Line: s.Line("workers"), Field: "workers",
			Msg: fmt.Sprintf("%d: %s cannot share its data among worker processes (%s), which step %s.%s split across %d workers needs; use 1 worker on it, or a target that can (%s)",
				s.Workers, name, lack, st.Workload, st.Phase, s.Workers, strings.Join(can, ", "))}
	}
	return nil
}

// clientsFit refuses a run whose worker processes, each with a
// connection per load goroutine, would open more connections than the
// managed server of target t accepts (target.Info.ManagedClients).
func clientsFit(s *study.Study, t *study.Target, info target.Info, steps []workload.Step) error {
	if info.ManagedClients == 0 || t.URI != "" {
		return nil
	}
	var runs []workload.Step
	for _, st := range steps {
		if info.Provides.CannotRun(st.Requires) == "" {
			runs = append(runs, st)
		}
	}
	c := maxConcurrency(runs)
	need := s.Workers * c
	if need <= info.ManagedClients {
		return nil
	}
	field := "concurrency"
	if s.Workers > 1 {
		field = "workers"
	}
	return &study.Error{File: s.File, Line: s.Line(field), Field: field,
		Msg: fmt.Sprintf("%s: %d worker process(es) × %d connections (the most load goroutines of a step) = %d, more than the managed %s server accepts (%d); lower workers or concurrency, or name a server of your own by URI",
			t.Name, s.Workers, c, need, info.Server, info.ManagedClients)}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ErrInterrupted marks a run stopped by the user.
var ErrInterrupted = errors.New("interrupted")

// Run executes the plan. It always returns the run directory and the Run
// it wrote, also when interrupted (status partial) or when targets failed.
func Run(ctx context.Context, o Options, plan *Plan) (*results.Run, string, error) {
	s := o.Study
	stamp := time.Now().Format("20060102-150405")
	runDir, err := makeRunDir(o.OutDir, s.Name+"-"+stamp)
	if err != nil {
		return nil, "", err
	}
	for _, d := range []string{"logs", "hdr", "data"} {
		if err := os.MkdirAll(filepath.Join(runDir, d), 0o755); err != nil {
			return nil, "", fmt.Errorf("creating results directory: %w", err)
		}
	}
	// The text as given, and the study as it runs (scale and overrides
	// applied), which `storebench run` takes back. What a run stores of
	// its study and command line never holds a password from a target's
	// URI.
	source, command := redact.Text(s.Source), redact.Args(o.Command)
	if err := os.WriteFile(filepath.Join(runDir, "study.original.yaml"), []byte(source), 0o644); err != nil {
		return nil, "", err
	}
	effective, err := s.Effective(redact.Text)
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(filepath.Join(runDir, "study.yaml"), []byte(redact.Text(string(effective))), 0o644); err != nil {
		return nil, "", err
	}
	dataRoot := filepath.Join(runDir, "data")
	storage, _ := sysinfo.StorageOf(dataRoot)
	run := &results.Run{
		SchemaVersion: results.SchemaVersion,
		Study:         s.Name, Title: s.Title, StudyFile: s.File, StudySource: source,
		Command: command, Started: time.Now(), Status: results.StatusRunning,
		Storebench: o.Version, Host: sysinfo.Collect(), Storage: storage,
		Seed: s.Seed, Durability: s.Durability, Concurrency: s.Concurrency,
		Constraints: s.Constraints, PID: os.Getpid(),
	}
	run.PIDStart, _ = sproc.StartTime(run.PID)
	for _, c := range s.Ladder {
		run.Ladder = append(run.Ladder, int64(c))
	}
	for _, e := range s.Workloads {
		if e.Concurrency > 0 {
			if run.WorkloadConcurrency == nil {
				run.WorkloadConcurrency = map[string]int{}
			}
			run.WorkloadConcurrency[e.Name] = e.Concurrency
		}
	}

	// What the run sets out to do, and every target pending, reach
	// results.json before anything runs: a run killed on the way is then
	// read back as interrupted, with what it never ran (results.Decode).
	run.Plan = &results.Plan{}
	for j, st := range plan.Steps {
		run.Plan.Steps = append(run.Plan.Steps, results.PlannedStep{Labels: st.Labels, RateSearch: j < len(plan.Search) && plan.Search[j] != nil})
	}
	for i, t := range s.Targets {
		info := plan.Targets[i]
		run.Plan.Targets = append(run.Plan.Targets, t.Name)
		run.Targets = append(run.Targets, &results.Target{Name: t.Name, Title: info.Title, Version: info.Version, Kind: info.Kind, Status: results.StatusPending})
	}
	if err := writeRun(run, runDir, false); err != nil {
		return nil, "", err
	}

	// The time limit is a deadline on everything; an interrupt (ctx) is
	// told apart from it for the report.
	runCtx := ctx
	var cancelLimit context.CancelFunc = func() {}
	if s.Limits.Time > 0 {
		runCtx, cancelLimit = context.WithTimeout(ctx, time.Duration(s.Limits.Time))
	}
	defer cancelLimit()

	for i, t := range s.Targets {
		info := plan.Targets[i]
		tr := run.Targets[i]
		if info.Open == nil {
			tr.Status, tr.Reason = "unavailable", info.Unavailable
			o.Bar.Println(fmt.Sprintf("%-10s unavailable: %s", t.Name, info.Unavailable))
			continue
		}
		if runCtx.Err() != nil {
			tr.Status, tr.Reason = "skipped", stopReason(ctx)
			continue
		}
		targetCtx, cancelTarget := runCtx, context.CancelFunc(func() {})
		if s.Limits.TargetTime > 0 {
			targetCtx, cancelTarget = context.WithTimeoutCause(runCtx, time.Duration(s.Limits.TargetTime),
				fmt.Errorf("target time limit %s reached", s.Limits.TargetTime))
		}
		var na []string
		if i < len(plan.NA) {
			na = plan.NA[i]
		}
		tr.Status = results.StatusRunning
		runTarget(targetCtx, o, s, t, info, plan.Steps, plan.Search, na, tr, runDir, func() { _ = run.Write(filepath.Join(runDir, "results.json")) })
		if tr.Status == results.StatusRunning {
			tr.Status = "ok"
		}
		cancelTarget()
		// Results after every target so that a kill -9 of the
		// coordinator still leaves every finished target on disk; the
		// report once, at the end.
		_ = writeRun(run, runDir, false)
	}
	run.Finished = time.Now()
	run.Status, run.Reason = runStatus(run.Targets, runCtx.Err() != nil, ctx.Err() != nil, stopReason(ctx))
	run.ListNotRun()
	if !o.KeepData {
		_ = os.RemoveAll(dataRoot)
	}
	if err := writeRun(run, runDir, true); err != nil {
		return run, runDir, err
	}
	if ctx.Err() != nil {
		return run, runDir, ErrInterrupted
	}
	return run, runDir, nil
}

// maxRunDirAttempts bounds the search for a free results directory name:
// more runs of one study started within the same second than this is not
// a name clash but a fault.
const maxRunDirAttempts = 100

// makeRunDir creates a new, empty directory base, base-2, base-3 ... under
// out. Creating it (rather than testing for it) cannot race with another
// run, and any error other than "exists" (out is a file, a name the file
// system refuses) stops at once instead of trying the next name forever.
func makeRunDir(out, base string) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("results directory %s: %w", out, unwrapPath(err))
	}
	for i := 1; i <= maxRunDirAttempts; i++ {
		dir := filepath.Join(out, base)
		if i > 1 {
			dir = filepath.Join(out, fmt.Sprintf("%s-%d", base, i))
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating results directory %s: %w", dir, unwrapPath(err))
		}
	}
	return "", fmt.Errorf("creating results directory: %s and %d others like it exist already", filepath.Join(out, base), maxRunDirAttempts-1)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// runStatus is the run's status from its targets': failed when any target
// failed (a failure is never hidden by a later stop), else interrupted when
// the user stopped it, else partial when a target was cut short or the run
// was stopped (stopped: the run's context ended, for why), else complete.
func runStatus(targets []*results.Target, stopped, interrupted bool, why string) (status, reason string) {
	var failed []string
	status = "complete"
	for _, tr := range targets {
		switch {
		case tr.Status == "failed":
			failed = append(failed, tr.Name)
		case tr.Status == "partial" && status == "complete":
			status, reason = "partial", tr.Name+": "+tr.Reason
		}
	}
	if stopped {
		status, reason = "partial", why
	}
	if interrupted {
		status, reason = results.StatusInterrupted, why
	}
	if len(failed) > 0 {
		r := fmt.Sprintf("target %s failed: see its reason", strings.Join(failed, ", "))
		if len(failed) > 1 {
			r = fmt.Sprintf("targets %s failed: see their reasons", strings.Join(failed, ", "))
		}
		if status == "partial" || status == results.StatusInterrupted {
			r += "; and " + reason
		}
		return "failed", r
	}
	return status, reason
}

// stopWhy says why a target's context ended: the user, the run's time
// limit or the target's own.
func stopWhy(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && c != context.Canceled && c != context.DeadlineExceeded {
		return c.Error()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "study time limit reached"
	}
	return "interrupted by the user"
}

// stopStatus is the status of a target whose context ended: interrupted
// when the user stopped it (cancelled), else partial (a limit: a
// deadline).
func stopStatus(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return results.StatusInterrupted
	}
	return "partial"
}

func stopReason(userCtx context.Context) string {
	if userCtx.Err() != nil {
		return "interrupted by the user"
	}
	return "study time limit reached"
}

// runTarget drives every step on one target in its own worker, as its
// planner gives them. na[j], when not empty, says why this target cannot
// run steps[j]; search[j] set runs steps[j] as a rate search. save writes
// results.json so far (after each rate search's trial).
func runTarget(ctx context.Context, o Options, s *study.Study, t study.Target, info target.Info, steps []workload.Step, search []*sweep.RateSpec, na []string, tr *results.Target, runDir string, save func()) {
	bar := o.Bar
	steps = faultsOn(steps, t.Name)
	uri, dir := t.URI, filepath.Join(runDir, "data", t.Name)
	dataRoot := filepath.Join(runDir, "data")
	// Steps the target cannot run are n/a, recorded before anything
	// starts so that a failure later still leaves them in results.json. A
	// step that continues on the data of an n/a fresh step is n/a too.
	runnable := make([]bool, len(steps))
	freshNA := ""
	for j, st := range steps {
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
			runnable[j] = true
			continue
		}
		tr.NA = append(tr.NA, results.NA{Workload: st.Workload, Phase: st.Phase, N: st.N, Labels: st.Labels, Status: "n/a", Reason: why})
		bar.Println(fmt.Sprintf("%-10s %s %s N=%s: n/a: %s", t.Name, st.Workload, st.Phase, study.FormatCount(st.N), why))
	}
	if !o.KeepData {
		// A target that fails (a full disk) must not leave its data to
		// starve the next one; a successful one destroys its own.
		defer func() {
			if tr.Status == "failed" || tr.Status == "partial" || tr.Status == results.StatusInterrupted {
				_ = os.RemoveAll(filepath.Join(dataRoot, t.Name))
			}
		}()
	}
	save()
	// failed records a failure to get the target going, or, when the
	// run was stopped meanwhile (Ctrl-C during a server's start), the
	// stop: a cancelled start is not the target's failure.
	failed := func(how string, err error) {
		if ctx.Err() != nil {
			tr.Status, tr.Reason = stopStatus(ctx), "stopped before its first step: "+stopWhy(ctx)
			bar.Println(fmt.Sprintf("%-10s %s", t.Name, tr.Reason))
			return
		}
		tr.Status, tr.Reason = "failed", err.Error()
		bar.Println(fmt.Sprintf("%-10s FAILED%s: %s", t.Name, how, tr.Reason))
	}
	if err := installStepServers(ctx, o, t.Name, steps, runnable); err != nil {
		failed("", err)
		return
	}
	var srv *managed
	if !info.Embedded() {
		if uri == "" {
			var err error
			if srv, err = startManaged(ctx, o, s, t.Name, int64(t.Cache), t.Options, info, dir); err != nil {
				failed("", err)
				return
			}
			defer srv.stop(bar, t.Name)
			uri = srv.inst.URI
			tr.Server = srv.describe(runDir)
		} else {
			tr.Server = &results.Server{Name: info.Name, URI: redact.Text(uri)}
			if t.Cache > 0 {
				// Said rather than silently dropped: the server's own
				// cache is its operator's setting.
				tr.Server.Settings = map[string]string{"cache": fmt.Sprintf("%s asked, not applied: a server named by URI is sized by whoever runs it", human(int64(t.Cache)))}
			}
		}
		dir = ""
	}
	if err := checkFaultTargets(srv, steps); err != nil {
		tr.Status, tr.Reason = "failed", err.Error()
		bar.Println(fmt.Sprintf("%-10s FAILED: %s", t.Name, tr.Reason))
		return
	}
	tr.Log = filepath.Join("logs", t.Name+".log")
	g, err := startGroup(ctx, o, s, t.Name, runDir)
	if err != nil {
		failed("", err)
		return
	}
	tr.WorkerPID = g.procs[0].hello.PID
	if len(g.procs) > 1 || g.remote[0] {
		for _, p := range g.procs {
			tr.Workers = append(tr.Workers, results.WorkerProc{Host: p.host, PID: p.hello.PID})
		}
	}
	defer g.quit(5 * time.Second)
	if dir != "" && g.remote[0] {
		// An embedded engine on a remote worker keeps its data on that
		// host, under the worker's login directory.
		cache := s.SSH.CacheDir
		if cache == "" {
			cache = defaultRemoteCache
		}
		dir = filepath.Join(cache, "data", filepath.Base(runDir), t.Name)
	}

	ev, err := g.each(wire.Request{Cmd: wire.CmdOpen, Open: &wire.OpenArgs{
		Target: info.Name, Dir: dir, URI: uri, Durability: s.Durability, CacheBytes: int64(t.Cache), Options: t.Options,
		Concurrency: maxConcurrency(steps), ClientCPUs: s.ClientCPUs,
	}})
	if err != nil {
		failed(" to open", err)
		return
	}
	tr.Title, tr.Version, tr.Settings = ev.Opened.Title, ev.Opened.Version, ev.Opened.Settings
	if srv != nil && !strings.Contains(tr.Title, srv.title) {
		// Name the column after the server that was measured: the mongodb
		// target on FerretDB is FerretDB, never MongoDB. A title that
		// already names its server stays (PostGIS on PostgreSQL is not the
		// postgres target's column).
		tr.Title = srv.title
	}

	var diskUsed int64
	// The disk taken at each data size so far, per workload (each has its
	// own bytes per item).
	sizes := map[string][]footprint{}
	// The data filesystem's free space: watched during every step, and
	// checked before each fresh one. External servers keep their data
	// elsewhere.
	space := func() (fsSpace, error) { return statSpace(dataRoot) }
	local := (info.Embedded() && !g.remote[0]) || srv != nil
	// The planner sees only the steps this target can run; a search's
	// trials are planned from the last result.
	var mine []workload.Step
	var mineSearch []*sweep.RateSpec
	for j, st := range steps {
		if runnable[j] {
			mine = append(mine, st)
			var sp *sweep.RateSpec
			if j < len(search) {
				sp = search[j]
			}
			mineSearch = append(mineSearch, sp)
		}
	}
	planner := sweep.NewAdaptive(mine, mineSearch)
	defer func() { tr.Searches = planner.Searches() }()
	var last *results.Step
	for {
		if ctx.Err() != nil {
			tr.Status, tr.Reason = stopStatus(ctx), "stopped: "+stopWhy(ctx)
			return
		}
		st, ok := planner.Next(last)
		if last != nil {
			// The step just run (and a search's curve so far, with the
			// trial just judged) reaches results.json before the next
			// step starts: a kill -9 loses at most the step under way.
			tr.Searches = planner.Searches()
			save()
		}
		if !ok {
			break
		}
		last = nil
		// A fresh step's disk is estimated before it starts (the last
		// footprint scaled to its size, or the workload's bytes per
		// item): one that would exceed the disk limit or the free space,
		// and the larger ones after it, are not started.
		if st.Fresh {
			var sp *fsSpace
			if local {
				if x, err := space(); err == nil {
					sp = &x
				}
			}
			least, scaled := estimateDisk(sizes[st.Workload], st.N, st.ItemBytes)
			refuse, warn := checkFits(least, scaled, int64(s.Limits.Disk), sp, diskUsed, st.N)
			if refuse != "" {
				tr.Status, tr.Reason = "partial", refuse
				bar.Println(fmt.Sprintf("%-10s %s", t.Name, tr.Reason))
				return
			}
			if warn != "" {
				bar.Println(fmt.Sprintf("%-10s warning: %s", t.Name, warn))
			}
		}
		label := fmt.Sprintf("%-10s %-8s N=%-6s", t.Name, st.Phase, study.FormatCount(st.N))
		if x := st.Labels.Extra(); x != "" {
			label += " " + x
		}
		bar.Begin(label)
		stCopy := st
		before := srv.snapshot()
		beforeNodes := srv.nodeSnapshots()
		stepCtx, cancelStep := context.WithCancelCause(ctx)
		faults := startFaults(stepCtx, srv, st.Faults, bar, t.Name)
		var progress atomic.Int64
		stopWatch := func() {}
		if local {
			stopWatch = watchDisk(stepCtx, cancelStep, space, &progress)
		}
		res, profiles, err := g.step(stepCtx, stCopy, o.Profile, func(done, total int64) {
			progress.Store(done)
			bar.Update(done, total)
		}, faults.begin)
		stopWatch()
		events := faults.finish()
		var noSpace *NoSpaceError
		if c := context.Cause(stepCtx); ctx.Err() == nil && errors.As(c, &noSpace) {
			// The step was stopped because the disk is full: that fails
			// the target, whatever the worker answered.
			if err == nil {
				err = noSpace
			} else {
				err = fmt.Errorf("%w: %v", noSpace, err)
			}
		} else if err != nil && local {
			// A step that failed on its own on a full disk says so.
			if sp, serr := space(); serr == nil && sp.Free < diskFullBelow && !strings.Contains(err.Error(), "bytes free on") {
				err = fmt.Errorf("%w: %v", &NoSpaceError{Free: sp.Free, Mount: sp.Mount}, err)
			}
		}
		cancelStep(nil)
		if res != nil && srv != nil {
			res.ServerResources = srv.resources(before)
			if len(beforeNodes) > 0 && res.ServerResources != nil {
				clusterResources(res, srv, beforeNodes)
			}
			if res.ServerResources != nil {
				diskUsed = res.ServerResources.DiskAllocated
			}
		}
		if res != nil {
			res.Events = eventsOf(events, res.Started)
		}
		if len(st.Faults) > 0 && ctx.Err() == nil {
			// A step cut short may have left a node down or paused.
			rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			if rerr := restoreNodes(rctx, srv); rerr != nil && err == nil {
				err = fmt.Errorf("bringing the cluster back after the faults: %w", rerr)
			}
			cancel()
		}
		if res != nil {
			last = res
			tr.Steps = append(tr.Steps, res)
			if res.ServerResources == nil {
				diskUsed = res.Resources.DiskAllocated
			}
			sizes[st.Workload] = record(sizes[st.Workload], st.N, diskUsed)
			if herr := writeHlog(runDir, t.Name, res); herr != nil {
				bar.Println("warning: " + herr.Error())
			}
			if perr := writeProfiles(runDir, t.Name, res, profiles); perr != nil {
				bar.Println("warning: " + perr.Error())
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				tr.Status, tr.Reason = stopStatus(ctx), fmt.Sprintf("stopped during %s N=%s: %s", st.Phase, study.FormatCount(st.N), stopWhy(ctx))
				bar.End(label + "  stopped: " + stopWhy(ctx))
				return
			}
			tr.Status, tr.Reason = "failed", fmt.Sprintf("%s N=%s: %v", st.Phase, study.FormatCount(st.N), err)
			bar.End(fmt.Sprintf("%s  FAILED: %v", label, err))
			return
		}
		if res != nil && res.Partial {
			tr.Status, tr.Reason = stopStatus(ctx), fmt.Sprintf("stopped during %s N=%s: %s", st.Phase, study.FormatCount(st.N), stopWhy(ctx))
			bar.End(label + "  stopped (partial): " + stopWhy(ctx))
			return
		}
		bar.End(fmt.Sprintf("%s  %s", label, summary(res)))
	}
	if _, err := g.each(wire.Request{Cmd: wire.CmdDestroy}); err != nil {
		bar.Println(fmt.Sprintf("%-10s could not remove its data: %v", t.Name, err))
	}
}

func summary(r *results.Step) string {
	s := fmt.Sprintf("%8.3fs  %s ops/s", r.Seconds, fmtRate(float64(r.Ops)/max(r.Seconds, 1e-9)))
	// Steps without per-operation timings (the token invariants) have no
	// percentile to print.
	if r.Latency.Count > 0 {
		s += "  p99 " + report.Latency(r.Latency.P99)
	}
	if r.Intended != nil {
		s += fmt.Sprintf("  (from intended start: p99 %s, %d late)", report.Latency(r.Intended.P99), r.Late)
	}
	if r.Verify.Checked > 0 {
		s += fmt.Sprintf("  verified %d", r.Verify.Checked)
	}
	return s
}

func fmtRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

func human(b int64) string {
	const u = 1024
	if b < u {
		return fmt.Sprintf("%dB", b)
	}
	div, exp := int64(u), 0
	for n := b / u; n >= u; n /= u {
		div *= u
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

// maxConcurrency is the most load goroutines any of the steps drives (a
// sweep's levels included): a server client sizes its pool to it.
func maxConcurrency(steps []workload.Step) int {
	m := 0
	for _, st := range steps {
		m = max(m, st.Concurrency)
	}
	return m
}
