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

func (Durability) DecodeParams(s *study.Study, e study.Entry) (json.RawMessage, error) {
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

func (Durability) Plan(s *study.Study, raw json.RawMessage) ([]workload.Step, error) {
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
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, err
	}
	if env.Opened == nil {
		return nil, errors.New("durability: the worker did not say how it opened the target")
	}
	if p.Model == "" {
		p.Model = powerfs.ModelData
	}
	info, err := target.Lookup(env.Opened.Target)
	if err != nil {
		return nil, err
	}
	if why := CanCrash(info); why != "" {
		return nil, errors.New("durability: " + why)
	}
	class := kv.Durability(st.Labels[LClass])
	if class == "" {
		class = env.Opened.Options.Durability
	}
	if st.Phase == fault.PowerLoss {
		if why := powerfs.Unavailable(); why != "" {
			return nil, fmt.Errorf("durability: power-loss needs the power-loss file system: %s", why)
		}
	}
	// The engine's directories sit beside the worker's own (which holds
	// the target open), never on a mount of their own making.
	base := env.Opened.Options.Dir + "-durability"
	if env.Opened.Options.Dir != "" {
		if err := os.RemoveAll(base); err != nil {
			return nil, err
		}
	} else {
		// A server target: its trials' data lives beside the worker's
		// temporary files.
		if base, err = os.MkdirTemp("", "storebench-durability-"); err != nil {
			return nil, err
		}
		// A server may run as its own user (postgres): it must reach
		// its directory.
		if err := os.Chmod(base, 0o755); err != nil {
			return nil, err
		}
	}
	defer os.RemoveAll(base)
	res := &results.Step{Workload: st.Workload, Phase: st.Phase, N: st.N, Unit: "write (single put or batch record)", Started: time.Now()}
	var total Counts
	var recov, spans, windows []float64
	var promised time.Duration
	oldestLost := 0.0
	lostTrials, trials, closeErrs, closeErr, unrec, unrecErr := 0, 0, 0, "", 0, ""
	var dropped powerfs.Failure
	noPersistence, declared, mapping := false, "", ""
	for k := 0; k < p.Trials; k++ {
		if err := ctx.Err(); err != nil {
			res.Partial = true
			break
		}
		tr, err := runTrial(ctx, p, st, env.Opened, class, filepath.Join(base, fmt.Sprint(k)), k)
		if err != nil {
			return nil, fmt.Errorf("durability: %s trial %d: %w", st.Phase, k+1, err)
		}
		total = total.Add(tr.Counts)
		dropped.DroppedBytes += tr.Dropped.DroppedBytes
		dropped.DroppedFiles += tr.Dropped.DroppedFiles
		dropped.RestoredBytes += tr.Dropped.RestoredBytes
		noPersistence = noPersistence || tr.NoPersistence
		if tr.Declared != "" {
			declared = tr.Declared
		}
		if tr.Mapping != "" {
			mapping = tr.Mapping
		}
		if tr.Unrecoverable == "" {
			// A trial whose engine never reopened its data has no
			// recovery time (not one of 0 s).
			recov = append(recov, tr.Recovery.Seconds())
		}
		spans = append(spans, tr.Span.Seconds())
		windows = append(windows, tr.OldestLost.Seconds())
		promised = max(promised, tr.Promised)
		oldestLost = max(oldestLost, tr.OldestLost.Seconds())
		if tr.Lost > 0 {
			lostTrials++
		}
		if tr.Unrecoverable != "" {
			unrec++
			if unrecErr == "" {
				unrecErr = tr.Unrecoverable
			}
		}
		if tr.CloseError != "" {
			closeErrs++
			if closeErr == "" {
				closeErr = tr.CloseError
			}
		}
		trials++
		if env.Progress != nil {
			env.Progress(int64(k+1), int64(p.Trials))
		}
	}
	res.Seconds = time.Since(res.Started).Seconds()
	// Operations are the records written; every one was read back.
	// Failures are what no class allows (a corrupted record, a torn
	// batch) and, under sync, a lost acknowledged write.
	res.Ops = total.Acked + total.Unacked
	res.Verify.Checked = res.Ops
	res.Verify.Failed = total.Corrupted + total.Torn
	// A server that keeps nothing across a restart (memcached) loses
	// everything by design: the report says so, it is no failure.
	// A server that says its writes are async whatever the study asked
	// (Aerospike Community Edition) is judged as async: its loss is what
	// it declared.
	weaker := strings.HasPrefix(declared, string(kv.Async)) && class == kv.Sync
	if class == kv.Sync && !noPersistence && !weaker {
		res.Verify.Failed += total.Lost
	}
	if res.Verify.Failed > 0 {
		res.Verify.First = fmt.Sprintf("%s under %s: %d acknowledged writes lost, %d corrupted, %d batches torn", st.Phase, class, total.Lost, total.Corrupted, total.Torn)
	}
	sort.Float64s(recov)
	res.Metrics = map[string]float64{
		"trials": float64(trials), "acked": float64(total.Acked), "unacked": float64(total.Unacked), "write_timeouts": float64(total.TimedOut),
		"lost": float64(total.Lost), "lost_trials": float64(lostTrials), "corrupted": float64(total.Corrupted),
		"torn": float64(total.Torn), "phantom": float64(total.Phantom),
	}
	if len(recov) > 0 {
		res.Metrics["recovery_s_median"] = recov[len(recov)/2]
		res.Metrics["recovery_s_max"] = recov[len(recov)-1]
	}
	if len(spans) > 0 {
		// How long the acknowledged writes ran before the crash, and how
		// far back the losses reached: a loss under a once-a-second
		// fsync is everything when the writes span less than a second.
		sort.Float64s(spans)
		res.Metrics["acked_span_s_min"] = spans[0]
		res.Metrics["acked_span_s_median"] = spans[len(spans)/2]
		res.Metrics["lost_age_s_max"] = oldestLost
		// The loss window: how long before the crash the oldest lost
		// acknowledged write was made, per trial (0: none lost).
		sort.Float64s(windows)
		res.Metrics["lost_age_s_median"] = windows[len(windows)/2]
	}
	if promised > 0 {
		res.Metrics[MetricPromised] = promised.Seconds()
		if WindowExceeded(res.Metrics) {
			res.Verify.Failed++
			if res.Verify.First == "" {
				res.Verify.First = fmt.Sprintf("%s under %s: acknowledged writes lost %.3g s before the crash, where the server promises at most %s", st.Phase, class, oldestLost, promised)
			}
		}
	}
	res.Facts = map[string]string{"durability": string(class), "crash": st.Phase}
	if noPersistence {
		res.Facts[FactPersistence] = NoPersistence
	}
	if weaker {
		res.Facts[FactDeclared] = declared
	}
	if mapping != "" {
		res.Facts[FactMapping] = mapping
	}
	if unrec > 0 {
		res.Metrics["unrecoverable"] = float64(unrec)
		res.Facts["unrecoverable"] = unrecErr
	}
	if st.Phase == fault.PowerLoss {
		// The file system's own counters: what the failures dropped.
		res.Facts[FactModel] = p.Model
		res.Metrics["fs_dropped_bytes"] = float64(dropped.DroppedBytes)
		res.Metrics["fs_dropped_files"] = float64(dropped.DroppedFiles)
		res.Metrics["fs_restored_bytes"] = float64(dropped.RestoredBytes)
	}
	if closeErrs > 0 {
		res.Metrics["close_errors"] = float64(closeErrs)
		res.Facts["close_error"] = closeErr
	}
	if os.Getenv(TestNoSyncEnv) == "1" {
		res.Facts["test_nosync"] = "engine opened async under a declared " + string(class)
	}
	return res, nil
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

// runTrial writes until the crash point, crashes the engine, restarts it
// and reads every record back.
func runTrial(ctx context.Context, p Params, st workload.Step, opened *workload.OpenSpec, class kv.Durability, base string, k int) (Trial, error) {
	var m *powerfs.Mount
	tr, err := trial(ctx, p, st, opened, class, base, k, &m)
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

func trial(ctx context.Context, p Params, st workload.Step, opened *workload.OpenSpec, class kv.Durability, base string, k int, mp **powerfs.Mount) (Trial, error) {
	var tr Trial
	var dataDir string
	var m *powerfs.Mount
	if err := os.MkdirAll(base, 0o755); err != nil {
		return tr, err
	}
	if st.Phase == fault.PowerLoss {
		var err error
		if m, err = powerfs.New(ctx, filepath.Join(base, "powerfs"), p.Model); err != nil {
			return tr, err
		}
		*mp = m // closed by runTrial
		dataDir = filepath.Join(m.Dir, "db")
	} else {
		// kill -9 keeps the page cache: the data needs no mount.
		dataDir = filepath.Join(base, "db")
	}
	logPath := filepath.Join(base, "engine.log")
	var e holder
	var err error
	if opened.Options.Dir == "" {
		e, err = startServer(ctx, opened, filepath.Join(base, "server"), m, class, p.Writers, logPath)
	} else {
		opts := opened.Options
		opts.Dir, opts.Durability = dataDir, class
		e, err = startEngine(ctx, spec{Target: opened.Target, Options: opts, Writers: p.Writers}, nil, logPath, m)
	}
	if err != nil {
		return tr, err
	}
	if !e.atomicBatches() {
		p.BatchEvery = 0
	}
	tr.NoPersistence = !e.persistent()
	tr.Declared, tr.Mapping = e.declared(), e.mapping()
	if class == kv.Async {
		tr.Promised = e.promised()
	}

	ops, at := crashPoint(p, st.Seed, k)
	if st.Phase == fault.PowerLoss && tr.Promised > 0 {
		// A server that fsyncs on a timer loses at most its interval:
		// the writers write for three intervals or more, so that what
		// it kept shows beside what it lost, and the crash comes at a
		// seeded instant within the next half of that.
		ops, at = 0, windowCrash(tr.Promised, st.Seed, k)
	}
	if ops > 0 {
		tr.CrashAfter = fmt.Sprintf("%d acked writes", ops)
	} else {
		tr.CrashAfter = at.String()
	}

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
			attempts[w], errs[w] = write(e.writer(w), w, p, quota, start, reached[w], stop, crashing)
		}()
	}
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
	var cut error
	select {
	case <-allReached:
	case <-timer:
	case <-e.exited():
		cut = fmt.Errorf("the engine process exited before the crash point: %s", proc.LogTail(logPath, 5))
	case <-ctx.Done():
		cut = ctx.Err()
	}
	// The crash: the process holding the data takes it (fault.Crasher).
	crashAt := time.Since(start)
	close(crashing)
	crashErr := e.Crash(ctx, st.Phase)
	close(stop)
	wg.Wait()
	if lf, ok := e.(interface{ LastFailure() powerfs.Failure }); ok && st.Phase == fault.PowerLoss {
		tr.Dropped = lf.LastFailure()
	}
	e.release() // the writers are done with its connections
	if cut == nil {
		cut = crashErr
	}
	if cut != nil {
		return tr, cut
	}
	for w, err := range errs {
		if err != nil {
			return tr, fmt.Errorf("writer %d, before the crash: %w (%s)", w, err, proc.LogTail(logPath, 5))
		}
	}
	var all []Attempt
	for _, a := range attempts {
		all = append(all, a...)
	}
	t0 := time.Now()
	if err = e.Restart(ctx); err != nil {
		if ctx.Err() != nil {
			return tr, ctx.Err()
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
		return tr, nil
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
		return tr, fmt.Errorf("first read after the restart: %w", err)
	}
	tr.Recovery = time.Since(t0)
	var lost []Attempt
	tr.Counts, lost, err = Check(all, p.ValueSize, func(k []byte) ([]byte, error) { return e.get(ctx, k) })
	if err != nil {
		return tr, err
	}
	tr.Window = LossWindow(all, lost, crashAt)
	// A close that fails after the read-back is the engine's own fault
	// after a crash, not the check's: recorded, not fatal.
	if err := e.close(ctx); err != nil {
		tr.CloseError = err.Error()
	}
	live = false
	return tr, nil
}

// write is one writer: single puts, every BatchEvery-th an atomic batch,
// each attempt logged before it is sent and marked acknowledged once the
// engine answers ok, at its time since start. It ends at stop or when the
// engine's pipe breaks. An error after crashing is closed is the crash's,
// not the writer's.
func write(c writerConn, w int, p Params, quota int64, start time.Time, reached chan struct{}, stop, crashing <-chan struct{}) ([]Attempt, error) {
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
