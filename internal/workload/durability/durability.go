// Package durability is the workload that checks, rather than declares,
// whether an acknowledged write survives a crash. Concurrent writers
// write numbered, checksummed records (single puts and atomic batches)
// to an engine that runs in a process of its own, its data on
// storebench's power-loss file system (package powerfs); each writer logs every acknowledgement in this
// process, which the crash does not touch. At the crash point the engine
// process is killed with SIGKILL; on a power loss the file system also
// drops what was not synced and is mounted again; then the engine is restarted and
// every record is read back: lost (acknowledged, absent), corrupted
// (wrong checksum), torn (part of an atomic batch) and phantom
// (unacknowledged, present) are counted apart, with the recovery time
// (restart to the first successful read). Each step is K trials of one
// crash kind under one durability class.
package durability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/powerfs"
	"storebench/internal/results"
	"storebench/internal/server/proc"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
)

func init() { workload.Register(Durability{}) }

// Params of the workload.
type Params struct {
	// Trials is K: crashes per crash kind and durability class.
	Trials int `yaml:"trials" json:"trials" range:"1..10000"`
	// Writers write at once, each its own records.
	Writers int `yaml:"writers" json:"writers" range:"1..256"`
	// Crashes are the crash kinds (fault.PowerLoss, fault.Kill9).
	Crashes []string `yaml:"crashes" json:"crashes"`
	// Classes are the durability classes each crash kind runs under
	// (sync, async), whatever the study's own.
	Classes []string `yaml:"classes" json:"classes"`
	// AfterOps: the crash comes once the writers together have this
	// many acknowledged writes (each writer its share); After, if set,
	// at this offset instead.
	AfterOps study.Count    `yaml:"after_ops" json:"after_ops" range:"1..1e9"`
	After    study.Duration `yaml:"after" json:"after" range:"0s..24h"`
	// Random draws each trial's crash point from half to one and a half
	// times AfterOps (or After), with the study's seed and the trial.
	Random bool `yaml:"random" json:"random"`
	// BatchEvery: every BatchEvery-th write of a writer is an atomic
	// batch of BatchSize records (0: single puts only).
	BatchEvery int `yaml:"batch_every" json:"batch_every" range:"0..1000"`
	BatchSize  int `yaml:"batch_size" json:"batch_size" range:"2..1000"`
	// ValueSize is each record's payload in bytes.
	ValueSize int `yaml:"value_size" json:"value_size" range:"0..65536"`
	// Model is the power failure's crash model (powerfs.Models):
	// "data", what was not synced is lost, the namespace persists.
	Model string `yaml:"model" json:"model,omitempty"`
}

// Durability implements workload.Workload.
type Durability struct{}

func (Durability) Name() string { return "durability" }
func (Durability) Describe() string {
	return "acknowledged writes lost after a power failure (storebench's own FUSE file system) or kill -9: writers of checksummed records and batches, K crashes, every record read back"
}

func (Durability) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := Params{Trials: 20, Writers: 4, AfterOps: 1000, BatchEvery: 4, BatchSize: 8, ValueSize: 100,
		Crashes: []string{fault.PowerLoss, fault.Kill9}, Classes: []string{string(kv.Sync), string(kv.Async)}, Model: powerfs.ModelData}
	const path = "workloads.durability.params"
	if err := study.DecodeParams(s.File, e.Params, path, &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: path + "." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(p.Crashes) == 0 {
		return nil, bad("crashes", "want at least one of %s, %s", fault.PowerLoss, fault.Kill9)
	}
	for _, c := range p.Crashes {
		if c != fault.PowerLoss && c != fault.Kill9 {
			return nil, bad("crashes", "%q: want %s or %s", c, fault.PowerLoss, fault.Kill9)
		}
	}
	if len(p.Classes) == 0 {
		return nil, bad("classes", "want sync, async or both")
	}
	if !slices.Contains(powerfs.Models, p.Model) {
		return nil, bad("model", "%q: want one of %s", p.Model, strings.Join(powerfs.Models, ", "))
	}
	for _, c := range p.Classes {
		if c != string(kv.Sync) && c != string(kv.Async) {
			return nil, bad("classes", "%q: want sync or async", c)
		}
	}
	return json.Marshal(p)
}

// LClass is the label of a step's durability class.
const LClass = "durability"

// FactDeclared is the fact of a step whose server declared its writes
// async although the class asked was sync: its own words.
const FactDeclared = "server_durability"

// MetricPromised is the longest, in seconds, a server promises to hold an
// acknowledged write unsynced under the step's class.
const MetricPromised = "promised_window_s"

// WindowExceeded says whether a step's worst loss window broke its
// server's promise: older than two intervals (a timer's fsync that began
// just before the crash may not finish: Redis documents two seconds for
// everysec at worst).
func WindowExceeded(m map[string]float64) bool {
	p, ok := m[MetricPromised]
	return ok && p > 0 && m["lost"] > 0 && m["lost_age_s_max"] > 2*p
}

// FactModel is a power failure's crash model (powerfs.Models).
const FactModel = "crash_model"

// FactMapping is a server's durability mapping in the step's trials
// (Redis: "async: appendonly yes, appendfsync everysec (...)").
const FactMapping = "durability_mapping"

// FactRefused is the fact of a step not run, and why: kept runs made
// while LazyFS (the file system before package powerfs) mis-served
// O_DIRECT refused MariaDB's and Aerospike's power failure, and their
// reports still say so.
const FactRefused = "not_run"

// FactPersistence is the fact of a step whose server keeps nothing
// across a restart (NoPersistence): what it lost is no failure.
const (
	FactPersistence = "persistence"
	NoPersistence   = "none: keeps nothing across a restart"
)

// RequiresAny is what a durability step needs of a target: single
// key-value writes, or an append-only log.
var RequiresAny = []target.Caps{{target.KeyValue}, {target.Log}}

func (Durability) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var steps []workload.Step
	for _, class := range p.Classes {
		for _, crash := range p.Crashes {
			steps = append(steps, workload.Step{Workload: "durability", Phase: crash, N: int64(p.AfterOps), Fresh: true, Seed: s.Seed,
				Concurrency: p.Writers, Params: raw, Largest: int64(p.AfterOps),
				Labels: results.Labels{LClass: class},
				// Batches: the engine's own (kv.Batch), a server's
				// transaction (Redis MULTI/EXEC). Records are written
				// as single key-value writes or produced to a log
				// (Kafka), read back by key.
				RequiresAny: RequiresAny})
		}
	}
	return steps, nil
}

// Trial is one crash and its read-back.
type Trial struct {
	Counts
	// CrashAfter is the crash point: acknowledged writes or the offset.
	CrashAfter string
	// Window places the acknowledged writes and the losses in time
	// before the crash.
	Window
	// Recovery is from the engine's restart to its first read.
	Recovery time.Duration
	// CloseError is how closing the engine after the read-back failed.
	CloseError string
	// Unrecoverable is why the engine could not open its data after the
	// crash ("": it could); every acknowledged write counts as lost.
	Unrecoverable string
	// Dropped is what the power failure's file system dropped.
	Dropped powerfs.Failure
	// NoPersistence: the server keeps nothing across a restart.
	NoPersistence bool
	// Declared is the server's own statement of its durability, Mapping
	// how it mapped the class onto its settings.
	Declared, Mapping string
	// Promised is the longest the server promises to hold an
	// acknowledged write unsynced (0: no such promise).
	Promised time.Duration
}

func (Durability) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	p, class, base, err := prepare(env, st)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	res := &results.Step{Workload: st.Workload, Phase: st.Phase, N: st.N, Unit: "write (single put or batch record)", Started: time.Now()}
	var t tally
	for k := 0; k < p.Trials; k++ {
		if err := ctx.Err(); err != nil {
			res.Partial = true
			break
		}
		tr, err := runTrial(ctx, &trialSpec{p: p, st: st, opened: env.Opened, class: class, base: filepath.Join(base, fmt.Sprint(k)), k: k})
		if err != nil {
			return nil, fmt.Errorf("durability: %s trial %d: %w", st.Phase, k+1, err)
		}
		t.add(tr)
		if env.Progress != nil {
			env.Progress(int64(k+1), int64(p.Trials))
		}
	}
	res.Seconds = time.Since(res.Started).Seconds()
	t.verify(res, st.Phase, class)
	t.metrics(res)
	t.facts(res, st.Phase, p.Model, class)
	return res, nil
}

// prepare reads a step's params and the durability class it runs under,
// checks that the target and the crash kind can be run here, and makes
// the directory its trials' data go under (base: the caller removes it).
func prepare(env *workload.Env, st workload.Step) (p Params, class kv.Durability, base string, err error) {
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return p, "", "", err
	}
	if env.Opened == nil {
		return p, "", "", errors.New("durability: the worker did not say how it opened the target")
	}
	if p.Model == "" {
		p.Model = powerfs.ModelData
	}
	info, err := target.Lookup(env.Opened.Target)
	if err != nil {
		return p, "", "", err
	}
	if why := CanCrash(info); why != "" {
		return p, "", "", errors.New("durability: " + why)
	}
	class = kv.Durability(st.Labels[LClass])
	if class == "" {
		class = env.Opened.Options.Durability
	}
	if st.Phase == fault.PowerLoss {
		if why := powerfs.Unavailable(); why != "" {
			return p, "", "", fmt.Errorf("durability: power-loss needs the power-loss file system: %s", why)
		}
	}
	// The engine's directories sit beside the worker's own (which holds
	// the target open), never on a mount of their own making.
	base = env.Opened.Options.Dir + "-durability"
	if env.Opened.Options.Dir != "" {
		if err := os.RemoveAll(base); err != nil {
			return p, "", "", err
		}
		return p, class, base, nil
	}
	// A server target: its trials' data lives beside the worker's
	// temporary files.
	if base, err = os.MkdirTemp("", "storebench-durability-"); err != nil {
		return p, "", "", err
	}
	// A server may run as its own user (postgres): it must reach its
	// directory.
	if err := os.Chmod(base, 0o755); err != nil {
		return p, "", "", err
	}
	return p, class, base, nil
}

// tally sums a step's trials: their counts, recovery times, loss windows
// and what the engine said of itself, the first error of each kind kept
// as its example.
type tally struct {
	total                 Counts
	recov, spans, windows []float64
	promised              time.Duration
	oldestLost            float64
	lostTrials, trials    int
	closeErrs, unrec      int
	closeErr, unrecErr    string
	dropped               powerfs.Failure
	noPersistence         bool
	declared, mapping     string
}

// add counts trial tr in.
func (t *tally) add(tr Trial) {
	t.total = t.total.Add(tr.Counts)
	t.dropped.DroppedBytes += tr.Dropped.DroppedBytes
	t.dropped.DroppedFiles += tr.Dropped.DroppedFiles
	t.dropped.RestoredBytes += tr.Dropped.RestoredBytes
	t.noPersistence = t.noPersistence || tr.NoPersistence
	if tr.Declared != "" {
		t.declared = tr.Declared
	}
	if tr.Mapping != "" {
		t.mapping = tr.Mapping
	}
	if tr.Unrecoverable == "" {
		// A trial whose engine never reopened its data has no
		// recovery time (not one of 0 s).
		t.recov = append(t.recov, tr.Recovery.Seconds())
	}
	t.spans = append(t.spans, tr.Span.Seconds())
	t.windows = append(t.windows, tr.OldestLost.Seconds())
	t.promised = max(t.promised, tr.Promised)
	t.oldestLost = max(t.oldestLost, tr.OldestLost.Seconds())
	if tr.Lost > 0 {
		t.lostTrials++
	}
	if tr.Unrecoverable != "" {
		t.unrec++
		if t.unrecErr == "" {
			t.unrecErr = tr.Unrecoverable
		}
	}
	if tr.CloseError != "" {
		t.closeErrs++
		if t.closeErr == "" {
			t.closeErr = tr.CloseError
		}
	}
	t.trials++
}

// weaker is whether the server declared its writes async where the
// class asked was sync: it is judged as async.
func (t *tally) weaker(class kv.Durability) bool {
	return strings.HasPrefix(t.declared, string(kv.Async)) && class == kv.Sync
}

// verify sets what res checked and what failed: what no class allows (a
// corrupted record, a torn batch) and, under sync, a lost acknowledged
// write.
func (t *tally) verify(res *results.Step, phase string, class kv.Durability) {
	// Operations are the records written; every one was read back.
	res.Ops = t.total.Acked + t.total.Unacked
	res.Verify.Checked = res.Ops
	res.Verify.Failed = t.total.Corrupted + t.total.Torn
	// A server that keeps nothing across a restart (memcached) loses
	// everything by design: the report says so, it is no failure.
	// A server that says its writes are async whatever the study asked
	// (Aerospike Community Edition) is judged as async: its loss is what
	// it declared.
	if class == kv.Sync && !t.noPersistence && !t.weaker(class) {
		res.Verify.Failed += t.total.Lost
	}
	if res.Verify.Failed > 0 {
		res.Verify.First = fmt.Sprintf("%s under %s: %d acknowledged writes lost, %d corrupted, %d batches torn", phase, class, t.total.Lost, t.total.Corrupted, t.total.Torn)
	}
}

// metrics sets res's metrics: the counts, the recovery times and the
// loss windows.
func (t *tally) metrics(res *results.Step) {
	total := t.total
	sort.Float64s(t.recov)
	res.Metrics = map[string]float64{
		"trials": float64(t.trials), "acked": float64(total.Acked), "unacked": float64(total.Unacked), "write_timeouts": float64(total.TimedOut),
		"lost": float64(total.Lost), "lost_trials": float64(t.lostTrials), "corrupted": float64(total.Corrupted),
		"torn": float64(total.Torn), "phantom": float64(total.Phantom),
	}
	if len(t.recov) > 0 {
		res.Metrics["recovery_s_median"] = t.recov[len(t.recov)/2]
		res.Metrics["recovery_s_max"] = t.recov[len(t.recov)-1]
	}
	if len(t.spans) > 0 {
		// How long the acknowledged writes ran before the crash, and how
		// far back the losses reached: a loss under a once-a-second
		// fsync is everything when the writes span less than a second.
		sort.Float64s(t.spans)
		res.Metrics["acked_span_s_min"] = t.spans[0]
		res.Metrics["acked_span_s_median"] = t.spans[len(t.spans)/2]
		res.Metrics["lost_age_s_max"] = t.oldestLost
		// The loss window: how long before the crash the oldest lost
		// acknowledged write was made, per trial (0: none lost).
		sort.Float64s(t.windows)
		res.Metrics["lost_age_s_median"] = t.windows[len(t.windows)/2]
	}
}

// facts sets the rest of res, after its metrics: a loss window that broke
// the server's promise (a failure too), and the facts of the step: the
// class and crash, what the server said of itself, the engines that
// could not reopen or close their data, and the file system's counters
// of a power failure under model.
func (t *tally) facts(res *results.Step, phase, model string, class kv.Durability) {
	if t.promised > 0 {
		res.Metrics[MetricPromised] = t.promised.Seconds()
		if WindowExceeded(res.Metrics) {
			res.Verify.Failed++
			if res.Verify.First == "" {
				res.Verify.First = fmt.Sprintf("%s under %s: acknowledged writes lost %.3g s before the crash, where the server promises at most %s", phase, class, t.oldestLost, t.promised)
			}
		}
	}
	res.Facts = map[string]string{"durability": string(class), "crash": phase}
	if t.noPersistence {
		res.Facts[FactPersistence] = NoPersistence
	}
	if t.weaker(class) {
		res.Facts[FactDeclared] = t.declared
	}
	if t.mapping != "" {
		res.Facts[FactMapping] = t.mapping
	}
	if t.unrec > 0 {
		res.Metrics["unrecoverable"] = float64(t.unrec)
		res.Facts["unrecoverable"] = t.unrecErr
	}
	if phase == fault.PowerLoss {
		// The file system's own counters: what the failures dropped.
		res.Facts[FactModel] = model
		res.Metrics["fs_dropped_bytes"] = float64(t.dropped.DroppedBytes)
		res.Metrics["fs_dropped_files"] = float64(t.dropped.DroppedFiles)
		res.Metrics["fs_restored_bytes"] = float64(t.dropped.RestoredBytes)
	}
	if t.closeErrs > 0 {
		res.Metrics["close_errors"] = float64(t.closeErrs)
		res.Facts["close_error"] = t.closeErr
	}
	if os.Getenv(TestNoSyncEnv) == "1" {
		res.Facts["test_nosync"] = "engine opened async under a declared " + string(class)
	}
}

// crashPoint is trial k's: acknowledged writes (ops > 0) or an offset.
func crashPoint(p Params, seed int64, k int) (ops int64, at time.Duration) {
	ops, at = int64(p.AfterOps), time.Duration(p.After)
	if p.Random {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(k)))
		f := 0.5 + r.Float64()
		ops = max(1, int64(float64(ops)*f))
		at = time.Duration(float64(at) * f)
	}
	if at > 0 {
		ops = 0
	}
	return ops, at
}

// windowCrash is trial k's crash instant when the server promises to
// lose at most promised: drawn from [3, 4.5) x promised by the seed.
func windowCrash(promised time.Duration, seed int64, k int) time.Duration {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(k)^0x5eed))
	return time.Duration(float64(3*promised) * (1 + r.Float64()/2))
}

// trialSpec is one trial of a step: the step's params and identity, how
// the worker opened the target, the durability class the engine runs
// under, the directory of the trial's files and its number k (which,
// with the study's seed, draws its crash point).
type trialSpec struct {
	p      Params
	st     workload.Step
	opened *workload.OpenSpec
	class  kv.Durability
	base   string
	k      int
}

// runTrial writes until the crash point, crashes the engine, restarts it
// and reads every record back.
func runTrial(ctx context.Context, ts *trialSpec) (Trial, error) {
	var m *powerfs.Mount
	tr, err := trial(ctx, ts, &m)
	if m != nil {
		// Asked before the unmount, which would end the server anyway:
		// the file system failing is the harness's fault, and says so.
		if died, tail := m.Died(); died && err != nil {
			err = fmt.Errorf("the power-loss file system exited during the trial (%w); its log: %s", err, tail)
		}
		if cerr := m.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	return tr, err
}

// trial is runTrial's trial, the power-loss mount it made (if any) left
// in *mp for runTrial to close, whatever the outcome.
func trial(ctx context.Context, ts *trialSpec, mp **powerfs.Mount) (Trial, error) {
	var tr Trial
	e, logPath, err := ts.start(ctx, mp)
	if err != nil {
		return tr, err
	}
	p := ts.p
	if !e.atomicBatches() {
		p.BatchEvery = 0
	}
	tr.NoPersistence = !e.persistent()
	tr.Declared, tr.Mapping = e.declared(), e.mapping()
	if ts.class == kv.Async {
		tr.Promised = e.promised()
	}

	ops, at := crashPoint(p, ts.st.Seed, ts.k)
	if ts.st.Phase == fault.PowerLoss && tr.Promised > 0 {
		// A server that fsyncs on a timer loses at most its interval:
		// the writers write for three intervals or more, so that what
		// it kept shows beside what it lost, and the crash comes at a
		// seeded instant within the next half of that.
		ops, at = 0, windowCrash(tr.Promised, ts.st.Seed, ts.k)
	}
	if ops > 0 {
		tr.CrashAfter = fmt.Sprintf("%d acked writes", ops)
	} else {
		tr.CrashAfter = at.String()
	}
	r := &trialRun{p: p, phase: ts.st.Phase, e: e, logPath: logPath, tr: &tr}
	all, crashAt, err := r.writeAndCrash(ctx, ops, at)
	if err != nil {
		return tr, err
	}
	err = r.readBack(ctx, all, crashAt)
	return tr, err
}

// start makes the trial's directories, its data on a power-loss mount of
// its own for a power failure (left in *mp), and starts the engine, or
// the target's server, on them, its output to the log at logPath.
func (ts *trialSpec) start(ctx context.Context, mp **powerfs.Mount) (e holder, logPath string, err error) {
	var dataDir string
	var m *powerfs.Mount
	if err := os.MkdirAll(ts.base, 0o755); err != nil {
		return nil, "", err
	}
	if ts.st.Phase == fault.PowerLoss {
		if m, err = powerfs.New(ctx, filepath.Join(ts.base, "powerfs"), ts.p.Model); err != nil {
			return nil, "", err
		}
		*mp = m // closed by runTrial
		dataDir = filepath.Join(m.Dir, "db")
	} else {
		// kill -9 keeps the page cache: the data needs no mount.
		dataDir = filepath.Join(ts.base, "db")
	}
	logPath = filepath.Join(ts.base, "engine.log")
	if ts.opened.Options.Dir == "" {
		e, err = startServer(ctx, ts, m, logPath)
	} else {
		opts := ts.opened.Options
		opts.Dir, opts.Durability = dataDir, ts.class
		e, err = startEngine(ctx, spec{Target: ts.opened.Target, Options: opts, Writers: ts.p.Writers}, nil, logPath, m)
	}
	return e, logPath, err
}

// trialRun is a trial once its engine runs: the params it writes by
// (no batches where the engine has no atomic ones), the crash kind, the
// engine and its log, and the trial's findings, filled in as it goes.
type trialRun struct {
	p       Params
	phase   string
	e       holder
	logPath string
	tr      *Trial
}

// writeAndCrash runs the writers until the crash point (ops acknowledged
// writes, or the offset at), crashes the engine under them, and returns
// every attempt, writer by writer, with the crash's time since the
// writing started.
func (r *trialRun) writeAndCrash(ctx context.Context, ops int64, at time.Duration) (all []Attempt, crashAt time.Duration, err error) {
	p, e := r.p, r.e
	// Writers: each its own records, attempts and quota; a quota met is
	// said by closing the writer's own channel, and it goes on writing
	// so that the crash finds writes in flight.
	attempts := make([][]Attempt, p.Writers)
	reached := make([]chan struct{}, p.Writers)
	errs := make([]error, p.Writers)
	stop, crashing := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < p.Writers; w++ {
		reached[w] = make(chan struct{})
		quota := (ops + int64(p.Writers) - 1) / int64(p.Writers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			attempts[w], errs[w] = write(e.writer(w), w, p, quota, reached[w], trialClock{start: start, stop: stop, crashing: crashing})
		}()
	}
	cut := r.awaitCrashPoint(ctx, ops, at, reached)
	// The crash: the process holding the data takes it (fault.Crasher).
	crashAt = time.Since(start)
	close(crashing)
	crashErr := e.Crash(ctx, r.phase)
	close(stop)
	wg.Wait()
	if lf, ok := e.(interface{ LastFailure() powerfs.Failure }); ok && r.phase == fault.PowerLoss {
		r.tr.Dropped = lf.LastFailure()
	}
	e.release() // the writers are done with its connections
	if cut == nil {
		cut = crashErr
	}
	if cut != nil {
		return nil, crashAt, cut
	}
	for w, err := range errs {
		if err != nil {
			return nil, crashAt, fmt.Errorf("writer %d, before the crash: %w (%s)", w, err, proc.LogTail(r.logPath, 5))
		}
	}
	for _, a := range attempts {
		all = append(all, a...)
	}
	return all, crashAt, nil
}

// awaitCrashPoint waits for the crash point: every writer's quota met
// (reached) when ops > 0, else the offset at. Non-nil, it is why the
// trial stops there instead: the engine exited, or ctx ended.
func (r *trialRun) awaitCrashPoint(ctx context.Context, ops int64, at time.Duration, reached []chan struct{}) error {
	// The crash point is the writers' quotas or the offset, never both:
	// with an offset every quota is 0, met at once, and would crash the
	// engine before the first write.
	var allReached chan struct{}
	var timer <-chan time.Time
	if ops > 0 {
		allReached = make(chan struct{})
		go func() {
			for _, c := range reached {
				<-c
			}
			close(allReached)
		}()
	} else {
		t := time.NewTimer(at)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-allReached:
	case <-timer:
	case <-r.e.exited():
		return fmt.Errorf("the engine process exited before the crash point: %s", proc.LogTail(r.logPath, 5))
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// readBack restarts the crashed engine and reads every attempt back
// (Check), timing the recovery; an engine that cannot reopen its data
// is the finding, every acknowledged write lost. The engine is closed
// after, or killed where the read-back fails.
func (r *trialRun) readBack(ctx context.Context, all []Attempt, crashAt time.Duration) error {
	e, tr := r.e, r.tr
	t0 := time.Now()
	if err := e.Restart(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// An engine that cannot open its data after the crash has lost
		// every acknowledged write: that is the finding, not a failure
		// of the check.
		tr.Unrecoverable = err.Error()
		var lost []Attempt
		for _, a := range all {
			if a.Acked {
				tr.Acked++
				tr.Lost++
				lost = append(lost, a)
			} else {
				tr.Unacked++
			}
		}
		tr.Window = LossWindow(all, lost, crashAt)
		return nil
	}
	live := true
	defer func() {
		if live {
			_ = e.Crash(context.Background(), fault.Kill9)
			e.release()
		}
	}()
	first := Key(0, 0)
	if len(all) > 0 {
		first = Key(all[0].Writer, all[0].Seq)
	}
	if _, err := e.get(ctx, first); err != nil && !errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("first read after the restart: %w", err)
	}
	tr.Recovery = time.Since(t0)
	counts, lost, err := Check(all, r.p.ValueSize, func(k []byte) ([]byte, error) { return e.get(ctx, k) })
	tr.Counts = counts
	if err != nil {
		return err
	}
	tr.Window = LossWindow(all, lost, crashAt)
	// A close that fails after the read-back is the engine's own fault
	// after a crash, not the check's: recorded, not fatal.
	if err := e.close(ctx); err != nil {
		tr.CloseError = err.Error()
	}
	live = false
	return nil
}

// trialClock is what a trial's writers share with its crash: when the
// writing started (each acknowledgement's time is since then), and the
// channels closed when the crash begins (crashing) and once it is done
// (stop).
type trialClock struct {
	start          time.Time
	stop, crashing <-chan struct{}
}

// write is one writer: single puts, every BatchEvery-th an atomic batch,
// each attempt logged before it is sent and marked acknowledged once the
// engine answers ok, at its time since clk.start. It closes reached once
// quota writes are acknowledged, and ends at clk.stop or when the
// engine's pipe breaks. An error after clk.crashing is closed is the
// crash's, not the writer's.
func write(c writerConn, w int, p Params, quota int64, reached chan struct{}, clk trialClock) ([]Attempt, error) {
	start, stop, crashing := clk.start, clk.stop, clk.crashing
	var out []Attempt
	var seq uint64
	var acked int64
	timeouts := 0 // in a row
	signalled := quota <= 0
	defer func() {
		if !signalled {
			close(reached)
		}
	}()
	if quota <= 0 {
		close(reached)
	}
	var kvs [][]byte
	for op := 1; ; op++ {
		select {
		case <-stop:
			return out, nil
		default:
		}
		size := 1
		if p.BatchEvery > 0 && op%p.BatchEvery == 0 {
			size = p.BatchSize
		}
		first := len(out)
		batch := seq
		kvs = kvs[:0]
		for i := 0; i < size; i++ {
			out = append(out, Attempt{Writer: w, Seq: seq, Batch: batch, BatchSize: size})
			kvs = append(kvs, Key(w, seq), Value(w, seq, batch, size, p.ValueSize))
			seq++
		}
		if err := c.write(kvs); err != nil {
			select {
			case <-crashing:
				return out, nil
			default:
			}
			if tc, ok := c.(timeouter); ok && tc.timedOut(err) && timeouts < maxTimeouts {
				timeouts++
				for i := first; i < len(out); i++ {
					out[i].TimedOut = true
				}
				continue
			}
			return out, err
		}
		timeouts = 0
		at := time.Since(start)
		for i := first; i < len(out); i++ {
			out[i].Acked, out[i].At = true, at
		}
		acked += int64(size)
		if !signalled && acked >= quota {
			close(reached)
			signalled = true
		}
	}
}
