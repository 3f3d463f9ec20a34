// Package coordinator runs a study: it plans the steps, starts one worker
// process per target, drives the steps, enforces the limits, and keeps
// the results directory's study files, HDR logs, profiles and worker
// logs. What happens it tells its outputs as events (package event): the
// console, results.json, the report and the others (internal/output/...)
// render them; the coordinator prints and renders nothing itself.
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
	"sync"
	"time"

	"storebench/internal/event"
	"storebench/internal/kv"
	"storebench/internal/machine"
	"storebench/internal/redact"
	"storebench/internal/results"
	sproc "storebench/internal/server/proc"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/sysinfo"
	"storebench/internal/target"
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
	KeepData bool
	// Profile asks every worker for these pprof profiles of each step
	// (wire.ProfileKinds); they go to profiles/<target>/<step>.<kind>.pprof.
	Profile []string
	// Output is told what happens (package event): the console, the
	// results file, the report and the others the command line chose.
	// The coordinator prints and renders nothing itself.
	Output event.Output

	emit func(event.Event) error
}

// emitter gives events to out one at a time: they come from the run's
// goroutine, a step's progress and a server's or a fault's own.
func emitter(out event.Output) func(event.Event) error {
	var mu sync.Mutex
	return func(e event.Event) error {
		if out == nil {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		return out.Handle(e)
	}
}

// notice tells the outputs a message about a target ("": the run).
func (o Options) notice(target, text string) { _ = o.emit(event.Notice{Target: target, Text: text}) }

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
	// Slots are the target runs, in order: each target once per machine
	// shape of the study (machines:, --machine), or once when it names
	// none. Indexes into Targets and NA by Slot.Target.
	Slots []Slot
}

// match checks every step against what a target provides and returns,
// per step, why the target cannot run it ("" when it can), and how many
// steps it can run.
func match(info target.Info, steps []workload.Step) (why []string, runnable int) {
	why = make([]string, len(steps))
	for j, st := range steps {
		if why[j] = st.CannotRunOn(info.Provides); why[j] == "" {
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
	// Every workload plans from the study's planning, built once: the
	// entry's own concurrency plans from a copy that carries it
	// (pl.Planning).
	planning := sweep.PlanningOf(s)
	for i, e := range s.Workloads {
		w, err := workload.Lookup(e.Name)
		if err != nil {
			return nil, nil, &study.Error{File: s.File, Field: fmt.Sprintf("workloads[%d].name", i), Msg: err.Error()}
		}
		pl, err := sweep.PlanEntry(planning, e, w)
		if err != nil {
			return nil, nil, err
		}
		if err := attachFaults(s, e, pl.Steps); err != nil {
			return nil, nil, err
		}
		out = append(out, pl.Steps...)
		search = append(search, pl.Search...)
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
	if err := checkSizing(s); err != nil {
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
		if err := refuseTarget(s, i, t, info, p.Steps); err != nil {
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
		if s.Durability == string(kv.Default) && info.Default == "" {
			return nil, &study.Error{File: s.File, Line: s.Line("durability"), Field: "durability",
				Msg: fmt.Sprintf("default: %s does not state what its engine's own default is; run it with sync or async", t.Name)}
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
	if err := planSlots(s, p); err != nil {
		return nil, err
	}
	return p, nil
}

// refuseTarget says why the study's i-th target t (looked up as info)
// cannot run the steps at all, before any target starts: a target only
// reached by URI without one, an embedded engine or a store the workers
// cannot share under several workers, clients that do not fit, or a crash
// fault it cannot take; nil when none holds.
func refuseTarget(s *study.Study, i int, t *study.Target, info target.Info, steps []workload.Step) error {
	if t.URI == "" && info.ByURIOnly() {
		// No server storebench can start (Aerospike: no package
		// ships one): refused here, before any target runs.
		field := fmt.Sprintf("targets[%d]", i)
		return &study.Error{File: s.File, Line: s.Line(field), Field: field, Msg: info.NeedsURI().Error()}
	}
	if s.Workers > 1 && info.Embedded() {
		// An embedded engine's files are opened by one process: a
		// second worker would open a store of its own.
		return &study.Error{File: s.File, Line: s.Line("workers"), Field: "workers",
			Msg: fmt.Sprintf("%d: %s is an embedded engine, opened by one process; several workers need a server target", s.Workers, t.Name)}
	}
	if s.Workers > 1 {
		// A step split across the workers needs a target whose data
		// they can share (a server that lets the others attach to
		// the table the first made): refused here, not mid-run.
		if err := splitOn(s, t.Name, info, steps); err != nil {
			return err
		}
	}
	if err := clientsFit(s, t, info, steps); err != nil {
		return err
	}
	if err := checkCrashTargets(info, t.URI, t.Options, faultsOn(steps, t.Name)); err != nil {
		// The study's to fix (exit 2), refused before anything starts.
		field := fmt.Sprintf("targets[%d]", i)
		return &study.Error{File: s.File, Line: s.Line(field), Field: field, Msg: fmt.Sprintf("target %s: %v", t.Name, err)}
	}
	return nil
}

// durabilityOf is the class target info writes in: the study's, or under
// durability "default" the class of the engine's own default (Prepare
// refused a target that states none).
func durabilityOf(s *study.Study, info target.Info) kv.Durability {
	if s.Durability == string(kv.Default) {
		return info.Default
	}
	return kv.Durability(s.Durability)
}

// splitOn refuses workers > 1 on a target that cannot share the data of
// a step that splits across them, naming the target, the step, what it
// lacks and the targets that have it.
func splitOn(s *study.Study, name string, info target.Info, steps []workload.Step) error {
	for _, st := range steps {
		if st.CannotRunOn(info.Provides) != "" {
			continue // n/a on this target: it does not run
		}
		lack := workload.CannotSplitOn(st, info.Provides)
		if lack == "" {
			continue
		}
		var can []string
		for _, o := range target.All() {
			if !o.Embedded() && st.CannotRunOn(o.Provides) == "" && workload.CannotSplitOn(st, o.Provides) == "" {
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
		if st.CannotRunOn(info.Provides) == "" {
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
	o.emit = emitter(o.Output)
	runDir, source, err := startDir(o)
	if err != nil {
		return nil, "", err
	}
	run := newRun(o, plan, runDir, source)
	// What the run sets out to do, and every target pending, reach
	// results.json before anything runs: a run killed on the way is then
	// read back as interrupted, with what it never ran (results.Decode).
	if err := o.emit(event.RunPlanned{Run: run, Dir: runDir}); err != nil {
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
	// Machine groups a killed run left behind are removed first (their
	// servers are reaped by their own leases when started).
	if left, err := machine.Reap(); err != nil {
		o.notice("", "warning: "+err.Error())
	} else {
		for _, l := range left {
			o.notice("", fmt.Sprintf("removed machine %s of run %s, left by storebench pid %d, which is gone", l.Shape, l.Run, l.Owner))
		}
	}
	for k := range plan.slots(s) {
		runTargetIn(ctx, runCtx, running{o: o, plan: plan, run: run, dir: runDir}, k)
	}
	run.Finished = time.Now()
	run.Status, run.Reason = runStatus(run.Targets, runCtx.Err() != nil, ctx.Err() != nil, stopReason(ctx))
	run.ListNotRun()
	project(run, s)
	if !o.KeepData {
		_ = os.RemoveAll(filepath.Join(runDir, "data"))
	}
	var end event.Event = event.RunFinished{Run: run, Dir: runDir}
	if ctx.Err() != nil {
		end = event.RunInterrupted{Run: run, Dir: runDir}
	}
	if err := o.emit(end); err != nil {
		return run, runDir, err
	}
	if ctx.Err() != nil {
		return run, runDir, ErrInterrupted
	}
	return run, runDir, nil
}

// running is a run under way: its options, plan, results and directory.
type running struct {
	o    Options
	plan *Plan
	run  *results.Run
	dir  string
}

// runTargetIn runs the run's target k (plan.slots: a target, on a
// machine when the study names machines) within runCtx (ctx is the
// user's), with its own time limit: an unavailable target is said, one
// reached once the run was stopped is skipped.
func runTargetIn(ctx, runCtx context.Context, r running, k int) {
	o, run, plan := r.o, r.run, r.plan
	slot := plan.slots(o.Study)[k]
	t, info, tr := o.Study.Targets[slot.Target], plan.Targets[slot.Target], run.Targets[k]
	t.Name = slot.Name
	if info.Open == nil {
		tr.Status, tr.Reason = "unavailable", info.Unavailable
		_ = o.emit(event.TargetUnavailable{Target: t.Name, Reason: info.Unavailable})
		return
	}
	if runCtx.Err() != nil {
		tr.Status, tr.Reason = "skipped", stopReason(ctx)
		return
	}
	targetCtx, cancelTarget := runCtx, context.CancelFunc(func() {})
	if lim := o.Study.Limits.TargetTime; lim > 0 {
		targetCtx, cancelTarget = context.WithTimeoutCause(runCtx, time.Duration(lim),
			fmt.Errorf("target time limit %s reached", lim))
	}
	defer cancelTarget()
	tr.Status = results.StatusRunning
	runTarget(targetCtx, o, run, k, plan, r.dir)
	if tr.Status == results.StatusRunning {
		tr.Status = "ok"
	}
	// Results after every target so that a kill -9 of the coordinator
	// still leaves every finished target on disk; the report once, at the
	// end.
	_ = o.emit(event.TargetFinished{Run: run, Target: tr})
}

// startDir creates the run's results directory with its logs/, hdr/ and
// data/, and writes the study there: the text as given, and the study as
// it runs (scale and overrides applied), which `storebench run` takes
// back. What a run stores of its study never holds a password from a
// target's URI. It returns the directory and the text as stored.
func startDir(o Options) (runDir, source string, err error) {
	s := o.Study
	stamp := time.Now().Format("20060102-150405")
	runDir, err = makeRunDir(o.OutDir, s.Name+"-"+stamp)
	if err != nil {
		return "", "", err
	}
	for _, d := range []string{"logs", "hdr", "data"} {
		if err := os.MkdirAll(filepath.Join(runDir, d), 0o755); err != nil {
			return "", "", fmt.Errorf("creating results directory: %w", err)
		}
	}
	source = redact.Text(s.Source)
	if err := os.WriteFile(filepath.Join(runDir, "study.original.yaml"), []byte(source), 0o644); err != nil {
		return "", "", err
	}
	effective, err := s.Effective(redact.Text)
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(runDir, "study.yaml"), []byte(redact.Text(string(effective))), 0o644); err != nil {
		return "", "", err
	}
	return runDir, source, nil
}

// newRun is the run's results as it starts: status running, the plan,
// every target pending.
func newRun(o Options, plan *Plan, runDir, source string) *results.Run {
	s := o.Study
	storage, _ := sysinfo.StorageOf(filepath.Join(runDir, "data"))
	run := &results.Run{
		SchemaVersion: results.SchemaVersion,
		Study:         s.Name, Title: s.Title, StudyFile: s.File, StudySource: source,
		Command: redact.Args(o.Command), Started: time.Now(), Status: results.StatusRunning,
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
	run.Plan = &results.Plan{}
	for j, st := range plan.Steps {
		run.Plan.Steps = append(run.Plan.Steps, results.PlannedStep{Labels: st.Labels, RateSearch: j < len(plan.Search) && plan.Search[j] != nil})
	}
	for _, slot := range plan.slots(s) {
		info := plan.Targets[slot.Target]
		run.Plan.Targets = append(run.Plan.Targets, slot.Name)
		tr := &results.Target{Name: slot.Name, Title: info.Title, Version: info.Version, Kind: info.Kind, Status: results.StatusPending}
		if slot.Machine != nil {
			tr.Machine = slot.Machine.String()
			tr.Title += " on " + slot.Machine.Title()
		}
		run.Targets = append(run.Targets, tr)
	}
	return run
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
