// Package workload defines what a workload is to storebench and keeps the
// registry of them. A workload plans its steps in the coordinator (from the
// study's Planning) and executes each step inside a target's worker process.
package workload

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/target"
)

// Step is one unit of work the coordinator sends to a worker: a phase at a
// ladder size. It travels as JSON, so a worker may one day run elsewhere.
type Step struct {
	Workload string `json:"workload"`
	Phase    string `json:"phase"`
	N        int64  `json:"n"`
	// Fresh asks the worker to start this step on an empty database.
	Fresh       bool            `json:"fresh,omitempty"`
	Seed        int64           `json:"seed"`
	Concurrency int             `json:"concurrency"`
	Params      json.RawMessage `json:"params"`
	// Largest is the top of the ladder (some phases run only there).
	Largest int64 `json:"largest"`
	// Requires is what a target must provide to run this step (its
	// phase or operation mix); the coordinator matches it against each
	// target's target.Info.Provides and records the steps a target
	// cannot run as "n/a" with the reason.
	Requires target.Caps `json:"requires,omitempty"`
	// RequiresAny: besides Requires, the target must provide every
	// capability of at least one of these sets: a workload with a layout
	// on each of several engine features (geo: ordered keys with atomic
	// batches, sorted sets, clustered ranges or SQL arrays).
	RequiresAny []target.Caps `json:"requires_any,omitempty"`
	// ItemBytes, when the workload can tell, is the least disk one item
	// of a fresh step takes (its raw key and value bytes): the
	// coordinator refuses a first step whose N items cannot fit in the
	// free space before starting it.
	ItemBytes int64 `json:"item_bytes,omitempty"`
	// Adds, when the workload can tell, is how many items a step that is
	// not fresh adds to the database it runs on (a ledger chain step's
	// sample chains): the largest database (Records), which a disk
	// estimate counts, holds them too.
	Adds int64 `json:"adds,omitempty"`
	// Labels are the step's identity (results.Labels): workload, phase
	// and n, and whatever else tells it apart from the study's other
	// steps (a chain length, a sweep's concurrency, a trial's rate). A
	// workload sets the labels beyond workload, phase and n; the
	// coordinator fills in those three and the sweeps' own.
	Labels results.Labels `json:"labels,omitempty"`
	// OpenLoop says the phase can run open loop at Rate operations per
	// second (Rate 0: closed loop): the rate search sets Rate on such
	// phases, so a workload must take its rate from the step, not from
	// its params.
	OpenLoop bool    `json:"open_loop,omitempty"`
	Rate     float64 `json:"rate,omitempty"`
	// Duration, when set, bounds the timed part of a phase that can run
	// for a duration (the rate search's trials); 0: the phase's own bound.
	Duration time.Duration `json:"duration,omitempty"`
	// Faults are the node actions the coordinator takes during this step
	// (package fault), at offsets from its start. A workload that sees
	// them retries and counts the errors they cause instead of failing,
	// and checks afterwards that no acknowledged write was lost.
	Faults []fault.Action `json:"faults,omitempty"`
	// Part and Parts split the step across worker processes (Parts > 1:
	// this worker is number Part of Parts driving one target at once).
	// Only a workload that implements Splitter gets them; each process
	// then takes a disjoint, deterministic share of the operations (see
	// runner.Config.Part).
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
}

// Splitter is implemented by a workload whose steps several worker
// processes can share. Split says whether step st can be split (nil) or
// why not; a step that cannot runs on one worker alone.
type Splitter interface {
	Split(st Step) error
	// SplitNeeds is what a target must provide for step st to be split
	// across its worker processes (target.Shared where the processes
	// share one table): the coordinator refuses, before anything starts,
	// workers > 1 on a target that lacks it.
	SplitNeeds(st Step) target.Caps
	// MergeMetric says how the parts' figures of one of the step's
	// metrics combine into the whole's.
	MergeMetric(name string) Merge
}

// Merge is how the parts of a split step combine one metric.
type Merge int

const (
	// Sum adds the parts' figures (a count of each part's own).
	Sum Merge = iota
	// Same is a figure of the whole that every part reports alike (the
	// record count, a mix's proportions); parts that differ are an error.
	Same
	// Max keeps the largest (a duration the parts spent side by side).
	Max
)

// CanSplit says whether step st can be shared by several worker
// processes, and if not why.
func CanSplit(st Step) error {
	w, err := Lookup(st.Workload)
	if err != nil {
		return err
	}
	sp, ok := w.(Splitter)
	if !ok {
		return fmt.Errorf("workload %s runs in one worker process (its operations are not split across processes)", st.Workload)
	}
	return sp.Split(st)
}

// CannotSplitOn says why step st, which splits (CanSplit), cannot be
// split across the worker processes of a target that provides caps (""
// when it can, or when the step does not split and so runs on one worker
// alone).
func CannotSplitOn(st Step, caps target.Caps) string {
	if CanSplit(st) != nil {
		return ""
	}
	w, _ := Lookup(st.Workload)
	return caps.CannotRun(w.(Splitter).SplitNeeds(st))
}

// Env is what a step runs against inside the worker.
type Env struct {
	// Target is the open target's handle; workloads find the interfaces
	// they need on it by type assertion (kv.Store, ledger.Store, ...).
	Target io.Closer
	// Progress reports operations done out of total (total 0: unknown).
	Progress func(done, total int64)
	// Sample is called once per tick by the runner; the worker uses it to
	// record RSS and CPU in the step's time series.
	Sample func() (rssBytes int64, cpuPercent float64)
	// Window, if set, is called by Measure right before (begin) and right
	// after the timed part of a step, so the worker can count CPU and I/O
	// over that part alone, apart from the step's setup.
	Window func(begin bool)
	// Part and Parts are the step's (Parts > 1: shared with other
	// worker processes); Measure hands them to the runner.
	Part, Parts int
	// Sync, set when Parts > 1, is the barrier between the processes
	// sharing the step: it returns when every one of them has called it
	// (the same number of times), with the instant all of them start the
	// next part at. A workload calls it where every process must have
	// finished something before any goes on (the table exists); Measure
	// calls it before every timed part.
	// timed says the barrier is the one right before a timed part.
	Sync func(ctx context.Context, timed bool) (time.Time, error)
	// Opened is how the worker opened Target: a workload that runs the
	// engine in a process of its own (durability, which crashes it)
	// opens it there alike, in a directory of its own. Nil when unknown.
	Opened *OpenSpec
}

// CrashLosses is fault.CrashLosses for step st's crashes under the
// durability the target was opened with (unknown: sync, the strict one):
// whether the acknowledged writes they lose are the measured figure or
// the step's failure, and the report's line saying which ("": no crash).
func CrashLosses(env *Env, st Step) (measured bool, why string) {
	class := kv.Sync
	if env.Opened != nil && env.Opened.Options.Durability != "" {
		class = env.Opened.Options.Durability
	}
	return fault.CrashLosses(st.Faults, class)
}

// OpenSpec names a target and the options it was opened with.
type OpenSpec struct {
	Target  string         `json:"target"`
	Options target.Options `json:"options"`
}

// ServerUser is implemented by a workload whose steps start a managed
// server of their own inside the worker, apart from the target's (the
// tripcache study's Kafka). Servers names the servers step st will start
// (server.Lookup names); the coordinator installs any that are missing
// before the target's steps run, as it installs a target's server.
type ServerUser interface {
	Servers(st Step) []string
}

// Workload is one registered workload.
type Workload interface {
	Name() string
	// Describe is one line for `storebench list`.
	Describe() string
	// DecodeParams decodes and validates the params of the study's entry
	// e (defaults for anything absent) and returns them as JSON for the
	// steps, through study.DecodeParams: every numeric field of the
	// params declares its range (`range:"lo..hi"`), which the decoder
	// checks and `storebench list` shows (workload/all
	// TestEveryNumericParameterHasARange). Errors name the study by
	// s.File.
	DecodeParams(s Planning, e study.Entry) (json.RawMessage, error)
	// Plan lists the steps of this workload for one target.
	Plan(s Planning, params json.RawMessage) ([]Step, error)
	// Execute runs one step in the worker. It fills the result's figures;
	// the worker adds resources around it.
	Execute(ctx context.Context, env *Env, step Step) (*results.Step, error)
}

// TargetCrasher is implemented by a workload whose steps crash the
// target's server themselves (the durability workload's trials start it,
// SIGKILL it and start it again on its data): the coordinator refuses
// such a step, when the plan is made, on a server storebench does not
// start (one named by URI), as it refuses a crash fault action there.
type TargetCrasher interface {
	// CrashesTarget is the crash step st takes on the target
	// (fault.Kill9, fault.PowerLoss); "": none.
	CrashesTarget(st Step) string
}

// Lengther is implemented by a workload that can tell, when the plan is
// made, how long a step's timed part lasts (a load of N records at a
// fixed rate: N/rate; an ingest bound by a duration): the coordinator
// refuses a fault action that could strike only after it. 0: not known.
type Lengther interface {
	Length(st Step) (time.Duration, string)
}

var registry = map[string]Workload{}

// Register adds a workload; called from the workload package's init.
func Register(w Workload) {
	if _, dup := registry[w.Name()]; dup {
		panic("workload registered twice: " + w.Name())
	}
	registry[w.Name()] = w
}

// Lookup finds a workload by name.
func Lookup(name string) (Workload, error) {
	w, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (see `storebench list`)", name)
	}
	return w, nil
}

// All returns the workloads sorted by name.
func All() []Workload {
	out := make([]Workload, 0, len(registry))
	for _, w := range registry {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// VerifyError is a read that did not return what was written. It fails
// the phase loudly, naming the phase and the key: a benchmark that
// silently loses data is worse than none.
type VerifyError struct {
	Phase string
	Key   []byte
	What  string
}

func (e *VerifyError) Error() string {
	k := hex.EncodeToString(e.Key)
	if len(k) > 26 {
		k = k[:26] + "…"
	}
	return fmt.Sprintf("verification failed in phase %s: key %s: %s", e.Phase, k, e.What)
}

// CannotRunOn says why a target providing p cannot run the step ("" when
// it can): what it lacks of Requires, else of RequiresAny.
func (st Step) CannotRunOn(p target.Caps) string {
	if why := p.CannotRun(st.Requires); why != "" {
		return why
	}
	return p.CannotRunAny(st.RequiresAny)
}

// Records is the most items one database holds over steps: a fresh
// step's N, plus what the steps after it on that database add (Adds).
func Records(steps []Step) int64 {
	var records, db int64
	for _, st := range steps {
		if st.Fresh {
			db = st.N
		}
		db += st.Adds
		records = max(records, db)
	}
	return records
}
