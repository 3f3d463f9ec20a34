// Package geo is the workload of seed 002 (geo-backtracer, a contact
// tracing store): GPS points of simulated users ingested in batches for a
// duration while a garbage collector drops points older than a retention
// window, then timelines of users who exist and who do not, then
// correlations: the users who were within D meters of a chosen user for
// 15 consecutive minutes or more. The points come from a deterministic
// simulation (sim.go) and every answer is checked against a brute-force
// reference (reference.go).
//
// The ladder is the number of simulated users U. Each user emits one
// point per simulated minute, so simulated time advances by one minute
// every U points ingested: with few users, days of simulated time pass
// in a minute of ingest, and the GC has old points to drop. The seed's
// "moving users" is its insert rate × 60 (one point per user per real
// minute); the report derives it the same way from the measured rate.
package geo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload"
	"storebench/internal/workload/gen"
	"storebench/internal/workload/layout"
)

// Name of the workload.
const Name = "geo"

// Phases.
const (
	PhaseIngest    = "ingest"
	PhaseTimeline  = "timeline"
	PhaseCorrelate = "correlate"
)

// Phases in order.
var Phases = []string{PhaseIngest, PhaseTimeline, PhaseCorrelate}

func init() { workload.Register(Workload{}) }

// Params of the geo workload (see studies/geo.yaml).
type Params struct {
	// Batch is the points per insert request (the seed's API advised 1,000).
	Batch int `yaml:"batch" json:"batch" range:"1..100000"`
	// Layout is the key layout on ordered key-value engines: LayoutStorebench
	// (kvlayout.go: block, zone, time, user) or LayoutBacktracer
	// (btlayout.go: geo-backtracer's timeline and reverse columns). The
	// other engines' layouts (RESP, CQL, SQL) are their own either way.
	Layout string `yaml:"layout" json:"layout,omitempty"`
	// GroupSize is the users per group that meets (correlations).
	GroupSize int `yaml:"group_size" json:"group_size" range:"1..1000"`
	Ingest    struct {
		Duration study.Duration `yaml:"duration" json:"duration" range:"1ms..24h"`
		// Points, when set, ends the ingest after this many points
		// (rounded up to whole batches), the duration still bounding
		// it: the simulated time reached is then the same on a slow
		// machine as on a fast one.
		Points study.Count `yaml:"points" json:"points,omitempty" range:"0..1e12"`
		// Last is the part of the ingest, at its end, the average insert
		// rate is taken over (the seed: the last hour of three).
		Last float64 `yaml:"last" json:"last" range:"0..1"`
		// Write is how a request's points reach an ordered key-value
		// engine: WriteBatch, all of them in one atomic batch
		// (storebench's), or WritePoint, each key of each point a write
		// of its own (geo-backtracer's pusher.cc: a Put per timeline and
		// per reverse key, no batch). Other layouts write their own way
		// and say so.
		Write string `yaml:"write" json:"write,omitempty"`
	} `yaml:"ingest" json:"ingest"`
	GC struct {
		// Retention is simulated time: points older than this behind
		// the newest are deleted.
		Retention study.Duration `yaml:"retention" json:"retention" range:"1h..87600h"`
		// Every is the wall-clock interval between GC passes (0: no GC
		// during ingest; the final pass still runs).
		Every study.Duration `yaml:"every" json:"every" range:"0s..24h"`
		// EverySimulated, when set, runs a pass each time the ingest's
		// newest point has moved on this much simulated time since the
		// last pass (geo-backtracer: delay_between_rounds_sec 3600, an
		// hour of its clock, which here is the data's); Every is then
		// not used.
		EverySimulated study.Duration `yaml:"every_simulated" json:"every_simulated,omitempty" range:"0s..8760h"`
		// Delete is how a pass deletes on the seed's layout (ordered
		// key-value engines): GCRange, whole old blocks as one range per
		// index (storebench's), or GCPoint, one delete per key of every
		// point, no batch (geo-backtracer's gc.cc). Other layouts keep
		// their own GC and say so.
		Delete string `yaml:"delete" json:"delete,omitempty"`
	} `yaml:"gc" json:"gc"`
	Timeline struct {
		// Queries: timelines asked, alternately of a user who exists and
		// of one who does not.
		Queries study.Count `yaml:"queries" json:"queries" range:"2..1e9"`
	} `yaml:"timeline" json:"timeline"`
	Correlate struct {
		Users   int            `yaml:"users" json:"users" range:"1..100000"`
		Window  study.Duration `yaml:"window" json:"window" range:"1h..87600h"`
		Meters  float64        `yaml:"meters" json:"meters" range:"0..1000"`
		Minutes int            `yaml:"minutes" json:"minutes" range:"1..1440"`
		// Rule is which users correlate: RuleStorebench (within Meters
		// for Minutes consecutive minutes), RuleBacktracer
		// (geo-backtracer's: backtracer.go) or RuleBoth, one correlate
		// step for each, side by side in the report.
		Rule string `yaml:"rule" json:"rule,omitempty"`
	} `yaml:"correlate" json:"correlate"`
}

func defaults() Params {
	var p Params
	p.Batch = 1000
	p.GroupSize = 4
	p.Ingest.Duration = study.Duration(60 * time.Second)
	p.Ingest.Last = 1.0 / 3
	p.GC.Retention = study.Duration(24 * time.Hour)
	p.GC.Every = study.Duration(5 * time.Second)
	p.Timeline.Queries = 400
	p.Correlate.Users = 20
	p.Correlate.Window = study.Duration(14 * 24 * time.Hour)
	p.Correlate.Meters = 100
	p.Correlate.Minutes = 15
	p.Correlate.Rule = RuleStorebench
	p.Layout = LayoutStorebench
	p.GC.Delete = GCRange
	p.Ingest.Write = WriteBatch
	return p
}

// Correlation rules (correlate.rule).
const (
	RuleStorebench = "storebench"
	RuleBacktracer = "backtracer"
	RuleBoth       = "both"
)

// Key layouts on ordered key-value engines (layout).
const (
	LayoutStorebench = "storebench"
	LayoutBacktracer = "backtracer"
)

// Ingest writes (ingest.write).
const (
	WriteBatch = "batch"
	WritePoint = "point"
)

// GC deletes (gc.delete).
const (
	GCRange = "range"
	GCPoint = "point"
)

// LRule labels a correlate step with its rule.
const LRule = "rule"

// Workload implements workload.Workload.
type Workload struct{}

func (Workload) Name() string { return Name }
func (Workload) Describe() string {
	return "seed 002 (geo-backtracer): GPS points ingested in batches with a retention GC beside, timelines of users, correlations (within 100 m for 15 minutes, or geo-backtracer's ±30 s / 4e-6° rule), all checked"
}

func (Workload) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := defaults()
	if err := study.DecodeParams(s.File, e.Params, "workloads."+Name+".params", &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads." + Name + ".params." + field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.Batch < 1 || p.Batch > 100000:
		return nil, bad("batch", "%d: want 1..100000", p.Batch)
	case p.GroupSize < 1 || p.GroupSize > 1000:
		return nil, bad("group_size", "%d: want 1..1000", p.GroupSize)
	case p.Ingest.Duration <= 0:
		return nil, bad("ingest.duration", "must be positive")
	case p.Ingest.Points < 0:
		return nil, bad("ingest.points", "must not be negative")
	case !(p.Ingest.Last > 0 && p.Ingest.Last <= 1):
		return nil, bad("ingest.last", "%v: want a fraction in (0, 1]", p.Ingest.Last)
	case time.Duration(p.GC.Retention) < time.Hour:
		return nil, bad("gc.retention", "%v: want at least 1h", time.Duration(p.GC.Retention))
	case p.GC.Every < 0:
		return nil, bad("gc.every", "must not be negative")
	case p.Timeline.Queries < 2:
		return nil, bad("timeline.queries", "%d: want at least 2 (one user who exists, one who does not)", p.Timeline.Queries)
	case p.Correlate.Users < 1 || p.Correlate.Users > 100000:
		return nil, bad("correlate.users", "%d: want 1..100000", p.Correlate.Users)
	case time.Duration(p.Correlate.Window) < time.Hour:
		return nil, bad("correlate.window", "%v: want at least 1h", time.Duration(p.Correlate.Window))
	case !(p.Correlate.Meters > 0 && p.Correlate.Meters <= 1000):
		return nil, bad("correlate.meters", "%v: want (0, 1000]", p.Correlate.Meters)
	case p.Correlate.Minutes < 1 || p.Correlate.Minutes > 24*60:
		return nil, bad("correlate.minutes", "%d: want 1..1440", p.Correlate.Minutes)
	case p.Correlate.Rule != RuleStorebench && p.Correlate.Rule != RuleBacktracer && p.Correlate.Rule != RuleBoth:
		return nil, bad("correlate.rule", "%q: want storebench, backtracer or both", p.Correlate.Rule)
	case p.Layout != LayoutStorebench && p.Layout != LayoutBacktracer:
		return nil, bad("layout", "%q: want storebench or backtracer", p.Layout)
	case p.GC.Delete != GCRange && p.GC.Delete != GCPoint:
		return nil, bad("gc.delete", "%q: want range or point", p.GC.Delete)
	case p.Ingest.Write != WriteBatch && p.Ingest.Write != WritePoint:
		return nil, bad("ingest.write", "%q: want batch or point", p.Ingest.Write)
	case p.GC.EverySimulated < 0:
		return nil, bad("gc.every_simulated", "must not be negative")
	}
	return json.Marshal(p)
}

// RequiresAny is what every step needs of a target, one engine feature
// per layout of this package: ordered keys with atomic batches (the
// seed's layout on a kv.Store), sorted sets (RESP), clustered ranges
// (CQL) or SQL arrays (PostgreSQL, with or without PostGIS).
var RequiresAny = []target.Caps{{target.OrderedScan, target.Batch}, {target.SortedSets}, {target.ClusteredRanges}, {target.SQLArrays}}

// pointBytes is a point's raw size: user, timestamp, latitude, longitude.
const pointBytes = 32

func (Workload) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	rules := []string{p.Correlate.Rule}
	if p.Correlate.Rule == RuleBoth {
		rules = []string{RuleBacktracer, RuleStorebench}
	}
	var steps []workload.Step
	for _, n := range s.Ladder {
		for _, ph := range Phases {
			st := workload.Step{Workload: Name, Phase: ph, N: int64(n), Seed: s.Seed, Concurrency: s.Concurrency,
				Params: raw, Largest: s.Largest(), RequiresAny: Layouts.Needs().Any}
			if ph == PhaseIngest {
				st.Fresh = true
			}
			if ph != PhaseCorrelate {
				steps = append(steps, st)
				continue
			}
			for _, rule := range rules {
				st := st
				if len(rules) > 1 {
					st.Labels = results.Labels{LRule: rule}
				}
				steps = append(steps, st)
			}
		}
	}
	return steps, nil
}

// Layouts are the geo layouts, in order of preference: the target's
// own, this package's on what the target offers (layout_*.go: RESP, CQL,
// PostgreSQL with PostGIS before PostgreSQL without), or storebench's
// layout on an ordered key-value store (Execute swaps in
// geo-backtracer's for layout: backtracer). Each provides the engine
// feature of RequiresAny it stands on.
var Layouts = layout.NewTable("geo", layout.Needs{Any: RequiresAny},
	layout.Layout[Store]{Name: "own", On: "the target's own geo store (geo.Store)",
		Open: func(h any) (Store, bool) { s, ok := h.(Store); return s, ok }},
	layout.Layout[Store]{Name: "resp", On: "a RESP client's sorted sets (conn.RESP)",
		Open: func(h any) (Store, bool) {
			c, ok := h.(conn.RESP)
			if !ok {
				return nil, false
			}
			return respStore{c.RESPClient()}, true
		},
		Provides: caps(target.SortedSets)},
	layout.Layout[Store]{Name: "cql", On: "a CQL session's clustered rows (conn.CQL)", Open: openCQL,
		Provides: caps(target.ClusteredRanges)},
	layout.Layout[Store]{Name: "postgis", On: "PostgreSQL with PostGIS's GiST (conn.PostGIS)",
		Open: func(h any) (Store, bool) {
			p, ok := h.(conn.PostGIS)
			if !ok {
				return nil, false
			}
			return pgStore{pool: p.PostgresPool(), q: gisSQL, gis: p.PostGIS}, true
		},
		Provides: caps(target.SQLArrays)},
	layout.Layout[Store]{Name: "postgres", On: "PostgreSQL's B-trees (conn.Postgres)",
		Open: func(h any) (Store, bool) {
			p, ok := h.(conn.Postgres)
			if !ok {
				return nil, false
			}
			return pgStore{pool: p.PostgresPool(), q: btreeSQL}, true
		},
		Provides: caps(target.SQLArrays)},
	layout.Layout[Store]{Name: "kv", On: "an ordered key-value store (kv.Store)",
		Open: func(h any) (Store, bool) {
			s, ok := h.(kv.Store)
			if !ok {
				return nil, false
			}
			return KVLayout{S: s}, true
		},
		Provides: caps(target.OrderedScan, target.Batch)},
)

// caps is a layout's Provides that gives the same capabilities whatever
// it opened.
func caps(cs ...target.Cap) func(Store) target.Caps {
	return func(Store) target.Caps { return cs }
}

// openCQL is the CQL layout on h, with the consistency levels the
// target asks for (conn.CQLConsistencies), else its session's default
// for writes and reads alike.
func openCQL(h any) (Store, bool) {
	c, ok := h.(conn.CQL)
	if !ok {
		return nil, false
	}
	s := &cqlStore{s: c.CQLSession(), ks: c.CQLKeyspace()}
	s.cons = s.s.Query("").GetConsistency()
	s.readCons = s.cons
	if cc, ok := h.(conn.CQLConsistencies); ok {
		s.cons, s.readCons = cc.CQLConsistency()
	}
	return s, true
}

// StoreOf finds the geo layout of a target's handle (Layouts).
func StoreOf(h io.Closer) (Store, error) {
	s, _, ok := Layouts.Of(h)
	if !ok {
		return nil, fmt.Errorf("geo: this target has no layout for GPS points")
	}
	return s, nil
}

// held is what the ingest left in a target's store, for the phases after
// it (they run in the same worker, on the same handle).
var (
	heldMu sync.Mutex
	heldBy = map[io.Closer]Held{}
)

func (Workload) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, fmt.Errorf("geo: bad step params: %w", err)
	}
	store, err := StoreOf(env.Target)
	if err != nil {
		return nil, err
	}
	r := &run{env: env, st: st, p: p, store: store, threads: max(st.Concurrency, 1),
		sim: Sim{Seed: uint64(st.Seed), Users: st.N, GroupSize: int64(p.GroupSize)}}
	r.rule = Rule{Meters: p.Correlate.Meters, MinMinutes: p.Correlate.Minutes}
	r.ruleName = p.Correlate.Rule
	if l := st.Labels[LRule]; l != "" {
		r.ruleName = l
	}
	if kl, ok := store.(KVLayout); ok && p.Layout == LayoutBacktracer {
		r.store = BTLayout{S: kl.S}
	}
	r.store, r.gcMode = variant(r.store, p.GC.Delete == GCPoint, func(s Store) (Store, bool) {
		pg, ok := s.(PointGCer)
		if !ok {
			return s, false
		}
		return pg.WithPointGC(), true
	}, "whole old blocks at once (a range delete where the engine has one: see the layout)", "point by point", "gc.delete: point asked, but this layout has only its own GC")
	r.store, r.writeMode = variant(r.store, p.Ingest.Write == WritePoint, func(s Store) (Store, bool) {
		pw, ok := s.(PointWriter)
		if !ok {
			return s, false
		}
		return pw.WithPointWrites(), true
	}, "a request's points in one atomic batch", "point by point (each key of each point a write of its own, as geo-backtracer's pusher.cc)", "ingest.write: point asked, but this layout writes a request its own way")
	res, err := r.phase(ctx)
	// An item is one GPS point: user, time, latitude, longitude.
	workload.SetItemBytes(res, pointBytes)
	return res, err
}

// phase runs the step's phase.
func (r *run) phase(ctx context.Context) (*results.Step, error) {
	if r.st.Phase == PhaseIngest {
		return r.ingest(ctx)
	}
	heldMu.Lock()
	h, ok := heldBy[r.env.Target]
	heldMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("geo: %s needs the ingest phase first (it ran on no store of this worker)", r.st.Phase)
	}
	r.held = h
	switch r.st.Phase {
	case PhaseTimeline:
		return r.timeline(ctx)
	case PhaseCorrelate:
		if r.ruleName == RuleBacktracer {
			return r.correlateBT(ctx)
		}
		return r.correlate(ctx)
	}
	return nil, fmt.Errorf("geo: unknown phase %q", r.st.Phase)
}

// variant is the store with geo-backtracer's way of one operation
// (point-by-point GC or writes) swapped in when asked, and what the
// report says of it: storebench's way (mine), the seed's (seeds), or,
// when the layout has no such variant, its own or that it lacks it.
// with swaps it in and says whether the layout has it.
func variant(s Store, asked bool, with func(Store) (Store, bool), mine, seeds, lacks string) (Store, string) {
	v, has := with(s)
	switch {
	case asked && has:
		return v, seeds
	case asked:
		return s, lacks
	case has:
		return s, mine
	}
	return s, "the layout's own (see its layout)"
}

type run struct {
	env       *workload.Env
	st        workload.Step
	p         Params
	store     Store
	sim       Sim
	rule      Rule
	ruleName  string // RuleStorebench or RuleBacktracer
	gcMode    string
	writeMode string
	threads   int
	held      Held
}

// errGCFailed is a GC pass that failed while faults ran: counted, and
// run again.
var errGCFailed = errors.New("geo: GC pass failed during the faults")

// retryGC runs the final GC pass; while faults run, a failed pass is run
// again with a growing pause until ackTimeout has passed.
func retryGC(ctx context.Context, pass func() error) error {
	t0 := time.Now()
	pause := 20 * time.Millisecond
	for {
		err := pass()
		if err != errGCFailed {
			return err
		}
		if time.Since(t0) > ackTimeout {
			return fmt.Errorf("geo: the final GC pass still failed after %s of retries", ackTimeout)
		}
		if err := workload.Sleep(ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, time.Second)
	}
}

// pass is one GC pass.
type pass struct {
	start, end time.Time
	cutoff     int64
	deleted    int64
	cut        bool // the load ended during the pass
	// behind: the next pass was already due when this one ended (it
	// took longer than the interval between passes: the GC fell behind
	// the ingest).
	behind bool
	final  bool // the pass after the load
}

// Outcomes of a GC pass (fact gc_pass_outcomes, one per pass of fact
// gc_passes): done before the next pass was due, done after it was due,
// cut short by the end of the load, or the final pass after the load.
const (
	PassKeptUp = "kept_up"
	PassBehind = "behind"
	PassCut    = "cut"
	PassFinal  = "final"
)

func (p pass) outcome() string {
	switch {
	case p.final:
		return PassFinal
	case p.cut:
		return PassCut
	case p.behind:
		return PassBehind
	}
	return PassKeptUp
}

// cutoffAt is the GC cutoff when the newest ingested minute is last: the
// start of the time block that holds "newest - retention" (the GC drops
// whole blocks, as the seed's layout does).
func (r *run) cutoffAt(last int64) int64 {
	c := TS(last+1) - int64(time.Duration(r.p.GC.Retention)/time.Second)
	if c <= 0 {
		return 0
	}
	return c / BlockSeconds * BlockSeconds
}

func (r *run) ingest(ctx context.Context) (*results.Step, error) {
	if rt, ok := r.store.(Retainer); ok {
		rt.SetRetention(time.Duration(r.p.GC.Retention))
	}
	layout, err := r.store.PrepareGeo(ctx)
	if err != nil {
		return nil, fmt.Errorf("geo: preparing the layout: %w", err)
	}
	in := &ingestion{r: r, B: int64(r.p.Batch), faulted: len(r.st.Faults) > 0,
		bufs: make([][]Point, r.threads), logs: make([]faultLog, r.threads)}
	B := in.B
	env, crashes := r.env, func() []crashFrontier { return nil }
	if in.faulted {
		env, crashes = r.watchCrashes(&in.done)
	}
	res, err := workload.Measure(ctx, env, in.load(), in.insertBatch)
	frontiers := crashes()
	if err != nil {
		return res, err
	}
	res.Unit = fmt.Sprintf("insert of a batch of %d points", B)
	P := res.Ops * B
	if in.done.Load() != res.Ops || in.claimed.Load() != res.Ops {
		return res, fmt.Errorf("geo: %d batches claimed, %d committed, the runner counted %d", in.claimed.Load(), in.done.Load(), res.Ops)
	}
	// What the load measured is kept before the final pass and the
	// checks, which can take long on a store the GC fell behind on: an
	// interrupt there returns it (the step partial) rather than nothing.
	last := (P - 1) / r.sim.Users
	in.loadMetrics(res, P, last)
	res.Facts["layout"] = layout
	res.Facts["gc"] = r.gcMode
	res.Facts["writes"] = r.writeMode
	if r.everySim() > 0 {
		res.Facts["gc_every"] = fmt.Sprintf("every %s of simulated time", time.Duration(r.p.GC.EverySimulated))
	} else if r.p.GC.Every > 0 {
		res.Facts["gc_every"] = fmt.Sprintf("every %s of wall-clock time", time.Duration(r.p.GC.Every))
	}
	return res, in.finish(ctx, res, P, frontiers)
}

// ingestion is the ingest phase's shared state: the batches claimed and
// committed, each goroutine's buffer and fault log, and the GC passes.
type ingestion struct {
	r       *run
	B       int64 // points a batch
	faulted bool  // faults run during the load
	// Batches are claimed in order from one counter (the runner's
	// sequence numbers are partitioned per goroutine, so a duration-bound
	// run would leave holes): when the load stops, every claimed batch
	// has been committed and the points ingested are exactly 0..P-1.
	claimed atomic.Int64
	done    atomic.Int64 // batches committed
	bufs    [][]Point
	logs    []faultLog

	passMu     sync.Mutex
	passes     []pass
	lastCutoff int64
	// While faults run, a pass that fails (the server down, or loading
	// its data after a crash) is counted and run again by the next tick
	// of the background task (its cutoff not reached); the final pass
	// retries as an insert does (retryGC).
	gcErrs     atomic.Int64
	gcFirstErr atomic.Value
}

// everySim is the simulated seconds between GC passes (0: passes by the
// wall clock, or none).
func (r *run) everySim() int64 { return int64(time.Duration(r.p.GC.EverySimulated) / time.Second) }

// load is the ingest's load: the batches to insert or how long, and the
// GC task (progress counts no total: batches are claimed in order).
func (in *ingestion) load() workload.Load {
	r := in.r
	var batches int64
	if n := int64(r.p.Ingest.Points); n > 0 {
		batches = (n + in.B - 1) / in.B
	}
	d := time.Duration(r.p.Ingest.Duration)
	if r.st.Duration > 0 {
		d = r.st.Duration
	}
	return workload.Closed(r.threads, batches).For(d).Beside(in.gcTasks()...).Expecting(0)
}

// insertBatch claims the next batch and inserts its points (goroutine w).
func (in *ingestion) insertBatch(ctx context.Context, w int, _ int64) error {
	r, B := in.r, in.B
	batch := in.claimed.Add(1) - 1
	pts := in.bufs[w][:0]
	for i := batch * B; i < (batch+1)*B; i++ {
		pts = append(pts, r.sim.Index(i))
	}
	in.bufs[w] = pts
	insert := r.store.InsertPoints
	if in.faulted {
		insert = func(ctx context.Context, pts []Point) error { return r.insertRetrying(ctx, &in.logs[w], pts) }
	}
	if err := insert(ctx, pts); err != nil {
		return err
	}
	in.done.Add(1)
	return nil
}

// gcPass runs one GC pass up to cutoff, unless a pass already went as
// far. due, when not nil, says at a pass's end whether the next pass is
// already due (the pass took longer than the interval between passes);
// nil: the final pass.
func (in *ingestion) gcPass(ctx context.Context, cutoff int64, due func(took time.Duration) bool) error {
	in.passMu.Lock()
	defer in.passMu.Unlock()
	if cutoff <= in.lastCutoff {
		return nil
	}
	t0 := time.Now()
	n, err := in.r.store.DeleteBefore(ctx, cutoff)
	end := time.Now()
	if err != nil && ctx.Err() != nil {
		// The load ended during the pass: it is cut short (the final
		// pass after the load finishes the work) and still counted.
		in.passes = append(in.passes, pass{start: t0, end: end, cutoff: cutoff, deleted: n, cut: true})
		return nil
	}
	if err != nil {
		return fmt.Errorf("geo: GC pass deleting points before %d: %w", cutoff, err)
	}
	in.passes = append(in.passes, pass{start: t0, end: end, cutoff: cutoff, deleted: n,
		behind: due != nil && due(end.Sub(t0)), final: due == nil})
	in.lastCutoff = cutoff
	return nil
}

// tolerant is gcPass that, while faults run, counts a failed pass and
// returns errGCFailed.
func (in *ingestion) tolerant(ctx context.Context, cutoff int64, due func(time.Duration) bool) error {
	err := in.gcPass(ctx, cutoff, due)
	if err == nil || !in.faulted || ctx.Err() != nil {
		return err
	}
	in.gcErrs.Add(1)
	in.gcFirstErr.CompareAndSwap(nil, err.Error())
	return errGCFailed
}

// lastMinute is the newest minute whose points are all committed but for
// the few batches in flight, which are far newer than a cutoff.
func (in *ingestion) lastMinute() int64 { return (in.done.Load()*in.B)/in.r.sim.Users - 1 }

// gcTasks is the GC as the load's background task: passes on the data's
// clock or on the wall clock (none: no GC during the load).
func (in *ingestion) gcTasks() []runner.Task {
	r := in.r
	everySim := r.everySim()
	lastPassSim := Epoch // the simulated time of the last pass (only its task touches it)
	switch {
	case everySim > 0:
		// A pass each time the data's clock has moved on everySim
		// seconds (geo-backtracer's hourly pass, on the data's clock):
		// the task looks often and runs a pass when one is due.
		return []runner.Task{{Name: "gc", Every: 100 * time.Millisecond, Run: func(ctx context.Context, _ int64) error {
			last := in.lastMinute()
			if last < 0 || TS(last+1)-lastPassSim < everySim {
				return nil
			}
			prev := lastPassSim
			lastPassSim = TS(last + 1)
			// Behind: by the pass's end the data's clock has moved on
			// another everySim seconds, so the next pass is due at once.
			due := func(time.Duration) bool { return TS(in.lastMinute()+1)-lastPassSim >= everySim }
			if err := in.tolerant(ctx, r.cutoffAt(last), due); err != errGCFailed {
				return err
			}
			lastPassSim = prev // due again at the next look
			return nil
		}}}
	case r.p.GC.Every > 0:
		return []runner.Task{{Name: "gc", Every: time.Duration(r.p.GC.Every), Run: func(ctx context.Context, _ int64) error {
			last := in.lastMinute()
			// Behind: the pass took longer than the interval, so the
			// next one is due at once.
			due := func(took time.Duration) bool { return took >= time.Duration(r.p.GC.Every) }
			if err := in.tolerant(ctx, r.cutoffAt(last), due); err != errGCFailed {
				return err
			}
			return nil
		}}}
	}
	return nil
}

// loadMetrics adds what the load measured: its size, rates and the GC
// passes during it (P points ingested, the newest of minute last).
func (in *ingestion) loadMetrics(res *results.Step, P, last int64) {
	r := in.r
	res.Metrics = map[string]float64{}
	res.Facts = map[string]string{}
	m := res.Metrics
	for k, v := range map[string]float64{
		"users":               float64(r.sim.Users),
		"batch":               float64(in.B),
		"points":              float64(P),
		"simulated_days":      float64(last+1) / (24 * 60),
		"retention_hours":     time.Duration(r.p.GC.Retention).Hours(),
		"raw_bytes_per_point": pointBytes,
	} {
		m[k] = v
	}
	if res.Seconds > 0 {
		m["qps"] = float64(P) / res.Seconds
	}
	if q, ok := lastPartRate(res.Series, r.p.Ingest.Last); ok {
		m["qps_last"] = q * float64(in.B)
		m["moving_users"] = m["qps_last"] * 60
	}
	in.passMu.Lock()
	during := append([]pass(nil), in.passes...)
	in.passMu.Unlock()
	r.gcMetrics(res, during)
}

// finish runs the final GC pass: everything older than the retention
// behind the newest point goes, so the checks after it are exact. It
// then checks what the store holds (P points ingested) and keeps it for
// the phases after the ingest.
func (in *ingestion) finish(ctx context.Context, res *results.Step, P int64, frontiers []crashFrontier) error {
	r, m := in.r, res.Metrics
	last := (P - 1) / r.sim.Users
	final := r.cutoffAt(last)
	t0 := time.Now()
	if err := retryGC(ctx, func() error { return in.tolerant(ctx, final, nil) }); err != nil {
		return err
	}
	if n := in.gcErrs.Load(); n > 0 {
		m["gc_errors"] = float64(n)
		res.Facts["gc_first_error"], _ = in.gcFirstErr.Load().(string)
	}
	if err := ctx.Err(); err != nil {
		return err // the final pass was cut short: nothing to check
	}
	m["final_gc_seconds"] = time.Since(t0).Seconds()
	h := Held{Points: P, Cutoff: max(final, in.lastCutoff)}
	if in.faulted {
		if err := r.afterFaults(ctx, res, in.logs, h, frontiers); err != nil {
			return err
		}
	}
	checked, err := r.checkHeld(ctx, h)
	if err != nil {
		return err
	}
	heldMu.Lock()
	heldBy[r.env.Target] = h
	heldMu.Unlock()

	res.Verify = results.Verify{Checked: checked}
	m["points_held"] = float64(r.sim.Count(h))
	in.passFacts(res)
	res.Facts["held"] = fmt.Sprintf("points of minutes %d..%d (%d users), cutoff %s", FirstMinute(h), last, r.sim.Users, time.Unix(h.Cutoff, 0).UTC().Format(time.RFC3339))
	return nil
}

// passFacts lists every GC pass: when it ran (seconds from the step's
// start), how it ended, and the points it deleted.
func (in *ingestion) passFacts(res *results.Step) {
	var iv, outcomes, deleted []string
	for _, ps := range in.passes {
		iv = append(iv, fmt.Sprintf("%.1f-%.1f", ps.start.Sub(res.Started).Seconds(), ps.end.Sub(res.Started).Seconds()))
		outcomes = append(outcomes, ps.outcome())
		d := "-" // not counted (a range or partition delete)
		if ps.deleted >= 0 {
			d = strconv.FormatInt(ps.deleted, 10)
		}
		deleted = append(deleted, d)
	}
	res.Facts["gc_passes"] = strings.Join(iv, " ")
	res.Facts["gc_pass_outcomes"] = strings.Join(outcomes, " ")
	res.Facts["gc_pass_deleted"] = strings.Join(deleted, " ")
}

// gcMetrics adds the GC passes run during the load (passes) to res: how
// many, how many were cut short, how many fell behind (the next pass due
// before they ended), how many deleted nothing (where deletes are
// counted), their mean and longest, the points they deleted, and the
// insert rate during them and outside them.
func (r *run) gcMetrics(res *results.Step, passes []pass) {
	m := res.Metrics
	var deleted int64
	var busy, longest float64
	var gcPasses, cut, behind, empty int
	uncounted := false // a store that cannot count its deletes cheaply
	for _, ps := range passes {
		gcPasses++
		if ps.cut {
			cut++
		}
		if ps.behind {
			behind++
		}
		if ps.deleted == 0 && !ps.cut {
			empty++
		}
		d := ps.end.Sub(ps.start).Seconds()
		busy += d
		longest = max(longest, d)
		if ps.deleted > 0 {
			deleted += ps.deleted
		}
		if ps.deleted < 0 {
			uncounted = true
		}
	}
	m["gc_passes"] = float64(gcPasses)
	m["gc_passes_cut"] = float64(cut)
	m["gc_passes_behind"] = float64(behind)
	if !uncounted {
		m["gc_passes_empty"] = float64(empty)
	}
	if gcPasses > 0 {
		m["gc_pass_mean_s"] = busy / float64(gcPasses)
		m["gc_pass_max_s"] = longest
		if !uncounted {
			m["gc_deleted"] = float64(deleted)
		}
	}
	B := float64(r.p.Batch)
	during, outside := splitRate(res.Series, res.Started, passes)
	if during >= 0 {
		m["qps_during_gc"] = during * B
	}
	if outside >= 0 {
		m["qps_outside_gc"] = outside * B
	}
}

// checkHeld checks that the store holds exactly the points it should
// after the GC: none older than the cutoff, every younger one (the count
// and the oldest and newest timestamps).
func (r *run) checkHeld(ctx context.Context, h Held) (int64, error) {
	count, oldest, newest, err := r.store.GeoStats(ctx)
	if err != nil {
		return 0, fmt.Errorf("geo: counting the points held: %w", err)
	}
	want := r.sim.Count(h)
	wantOldest, wantNewest := TS(FirstMinute(h)), TS(r.sim.LastMinute(h))
	key := []byte("points")
	switch {
	case want > 0 && oldest < h.Cutoff:
		return 0, &workload.VerifyError{Phase: r.st.Phase, Key: key, What: fmt.Sprintf("the GC left a point of %d, before its cutoff %d", oldest, h.Cutoff)}
	case count != want:
		return 0, &workload.VerifyError{Phase: r.st.Phase, Key: key, What: fmt.Sprintf("the store holds %d points, %d were ingested and not older than the retention (GC cutoff %d)", count, want, h.Cutoff)}
	case want > 0 && (oldest != wantOldest || newest != wantNewest):
		return 0, &workload.VerifyError{Phase: r.st.Phase, Key: key, What: fmt.Sprintf("points held span %d..%d, want %d..%d", oldest, newest, wantOldest, wantNewest)}
	}
	return count, nil
}

// lastPartRate is the operations per second over the last fraction of a
// series: the ticks that end after its start (at least the last tick).
func lastPartRate(ts []results.Tick, frac float64) (float64, bool) {
	if len(ts) == 0 {
		return 0, false
	}
	end := ts[len(ts)-1].T
	from := end * (1 - frac)
	var ops int64
	t0 := end
	for i := len(ts) - 1; i >= 0; i-- {
		start := 0.0
		if i > 0 {
			start = ts[i-1].T
		}
		if i < len(ts)-1 && ts[i].T <= from+1e-9 {
			break
		}
		ops += ts[i].Ops
		t0 = start
	}
	if end-t0 <= 0 {
		return 0, false
	}
	return float64(ops) / (end - t0), true
}

// splitRate is the operations per second of the ticks mostly inside a GC
// pass and of the others (-1: no such tick).
func splitRate(ts []results.Tick, started time.Time, passes []pass) (during, outside float64) {
	var opsIn, opsOut int64
	var secIn, secOut float64
	for i, t := range ts {
		start := 0.0
		if i > 0 {
			start = ts[i-1].T
		}
		if t.T-start < 0.5 {
			// A partial tick at an edge of the ingest: too short to say
			// whether a pass slowed it.
			continue
		}
		overlap := 0.0
		for _, p := range passes {
			a := max(start, p.start.Sub(started).Seconds())
			b := min(t.T, p.end.Sub(started).Seconds())
			overlap += max(0, b-a)
		}
		if overlap*2 >= t.T-start {
			opsIn += t.Ops
			secIn += t.T - start
		} else {
			opsOut += t.Ops
			secOut += t.T - start
		}
	}
	during, outside = -1, -1
	if secIn > 0 {
		during = float64(opsIn) / secIn
	}
	if secOut > 0 {
		outside = float64(opsOut) / secOut
	}
	return during, outside
}

// window is the span the timelines read: the retained points, up to the
// newest minute.
func (r *run) window() (from, to int64) {
	return r.held.Cutoff, TS(r.sim.LastMinute(r.held) + 1)
}

func (r *run) timeline(ctx context.Context) (*results.Step, error) {
	from, to := r.window()
	verified, points := workload.NewTally(r.threads), workload.NewTally(r.threads)
	load := workload.Closed(r.threads, int64(r.p.Timeline.Queries)).
		Classed([]string{"existing", "missing"}, func(seq int64) int { return int(seq % 2) })
	res, err := workload.Measure(ctx, r.env, load, func(ctx context.Context, w int, seq int64) error {
		pick := int64(gen.Mix(uint64(r.st.Seed), 0x746c, uint64(seq)) % uint64(r.sim.Users))
		user := pick
		if seq%2 == 1 {
			user = r.sim.Users + pick // no such user: ids past the last
		}
		m := FirstMinute(r.held)
		n := 0
		err := r.store.Timeline(ctx, user, from, to, func(p Point) error {
			for ; !r.sim.Has(r.held, user, m) && m <= r.sim.LastMinute(r.held); m++ {
			}
			if want := r.sim.At(user, m); !r.sim.Has(r.held, user, m) || p != want {
				return &workload.VerifyError{Phase: PhaseTimeline, Key: []byte("user/" + strconv.FormatInt(user, 10)),
					What: fmt.Sprintf("timeline point %d is %+v, want %+v", n, p, want)}
			}
			m++
			n++
			return nil
		})
		if err != nil {
			return err
		}
		want := 0
		for m := FirstMinute(r.held); m <= r.sim.LastMinute(r.held); m++ {
			if r.sim.Has(r.held, user, m) {
				want++
			}
		}
		if n != want {
			return &workload.VerifyError{Phase: PhaseTimeline, Key: []byte("user/" + strconv.FormatInt(user, 10)),
				What: fmt.Sprintf("timeline has %d points, want %d", n, want)}
		}
		points.Add(w, int64(n))
		verified.Add(w, 1)
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Unit = "timeline of one user over the retained window"
	res.Verify = results.Verify{Checked: verified.Sum()}
	res.Metrics = map[string]float64{
		"users":                 float64(r.sim.Users),
		"window_hours":          float64(to-from) / 3600,
		"points_per_timeline":   float64(points.Sum()) / float64(max(res.Ops-res.Ops/2, 1)),
		"threads":               float64(r.threads),
		"timelines":             float64(res.Ops),
		"timelines_existing":    float64(res.Ops - res.Ops/2),
		"timelines_nonexisting": float64(res.Ops / 2),
	}
	// The seed quotes the timeline of a user who does not exist
	// ("takes 2 seconds"): its median here, in seconds, for the report's
	// "Against the seed".
	if x, ok := res.ByOp["missing"]; ok && x.Count > 0 {
		res.Metrics["nonexisting_p50_s"] = float64(x.P50) / 1e9
	}
	return res, nil
}

// correlationUsers are the users whose correlations are solved: spread
// over the population, deterministic.
func (r *run) correlationUsers() []int64 {
	k := min(int64(r.p.Correlate.Users), r.sim.Users)
	out := make([]int64, k)
	for i := range out {
		out[i] = int64(i) * r.sim.Users / k
	}
	return out
}

func (r *run) correlate(ctx context.Context) (*results.Step, error) {
	from, to := r.window()
	from = max(from, to-int64(time.Duration(r.p.Correlate.Window)/time.Second))
	users := r.correlationUsers()
	// The reference answers, by brute force, before the timed part.
	want := r.sim.CorrelationsAll(RefQuery{Held: r.held, Users: users, From: from, To: to,
		Parts: runtime.GOMAXPROCS(0), Stop: func() bool { return ctx.Err() != nil }}, r.rule)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	got := make([][]Contact, len(users))
	load := workload.Closed(min(r.threads, len(users)), int64(len(users)))
	nearPoints := workload.NewTally(load.Goroutines)
	res, err := workload.Measure(ctx, r.env, load, func(ctx context.Context, w int, seq int64) error {
		u := users[seq]
		key := []byte("user/" + strconv.FormatInt(u, 10))
		var track, near []Point
		if err := r.store.Timeline(ctx, u, from, to, func(p Point) error { track = append(track, p); return nil }); err != nil {
			return err
		}
		if err := r.store.Near(ctx, track, r.rule.Meters, func(p Point) error { near = append(near, p); return nil }); err != nil {
			return err
		}
		got[seq] = Correlate(track, near, r.rule)
		// Every point the store returned must be one it holds.
		if err := r.checkNear(key, near); err != nil {
			return err
		}
		nearPoints.Add(w, int64(len(near)))
		return nil
	})
	if err != nil {
		return res, err
	}
	contacts := 0
	var answers []string
	for i, u := range users {
		if !equalContacts(got[i], want[i]) {
			return res, &workload.VerifyError{Phase: PhaseCorrelate, Key: []byte("user/" + strconv.FormatInt(u, 10)),
				What: fmt.Sprintf("correlations %s, the reference has %s", formatContacts(got[i]), formatContacts(want[i]))}
		}
		contacts += len(got[i])
		answers = append(answers, fmt.Sprintf("%d: %s", u, formatContacts(got[i])))
	}
	res.Unit = "correlations of one user (timeline, nearby points, runs of 15 minutes)"
	res.Verify = results.Verify{Checked: int64(len(users))}
	res.Metrics = map[string]float64{
		"correlations":     float64(len(users)),
		"contacts":         float64(contacts),
		"window_hours":     float64(to-from) / 3600,
		"near_points":      float64(nearPoints.Sum()),
		"threads":          float64(load.Goroutines),
		"meters":           r.rule.Meters,
		"minutes":          float64(r.rule.MinMinutes),
		"seconds_per_corr": res.Latency.Mean / 1e9,
	}
	res.Facts = map[string]string{"answers": strings.Join(answers, "; "), "rule": RuleStorebench}
	return res, nil
}

func equalContacts(a, b []Contact) bool {
	if len(a) != len(b) {
		return false
	}
	sort.Slice(a, func(i, j int) bool { return a[i].User < a[j].User })
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func formatContacts(cs []Contact) string {
	if len(cs) == 0 {
		return "none"
	}
	var w []string
	for _, c := range cs {
		w = append(w, fmt.Sprintf("%d (%d min)", c.User, c.Minutes))
	}
	return strings.Join(w, ", ")
}

// correlateBT solves the correlations under geo-backtracer's rule
// (backtracer.go): the user's timeline, then every other user's points
// at the minutes around each of the user's within BTBoxMeters (what the
// rule can call nearby, and more), then the mixer's scoring.
func (r *run) correlateBT(ctx context.Context) (*results.Step, error) {
	from, to := r.window()
	from = max(from, to-int64(time.Duration(r.p.Correlate.Window)/time.Second))
	users := r.correlationUsers()
	rule := SeedBTRule()
	want := r.sim.BTCorrelationsAll(RefQuery{Held: r.held, Users: users, From: from, To: to,
		Parts: runtime.GOMAXPROCS(0), Stop: func() bool { return ctx.Err() != nil }}, rule)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	got := make([][]BTContact, len(users))
	load := workload.Closed(min(r.threads, len(users)), int64(len(users)))
	nearPoints, scored := workload.NewTally(load.Goroutines), workload.NewTally(load.Goroutines)
	res, err := workload.Measure(ctx, r.env, load, func(ctx context.Context, w int, seq int64) error {
		u := users[seq]
		key := []byte("user/" + strconv.FormatInt(u, 10))
		var track, near []Point
		if err := r.store.Timeline(ctx, u, from, to, func(p Point) error { track = append(track, p); return nil }); err != nil {
			return err
		}
		if err := r.store.Near(ctx, btTrackForNear(track), BTBoxMeters, func(p Point) error { near = append(near, p); return nil }); err != nil {
			return err
		}
		spans, nearSpans := SpansOf(track), SpansOf(near)
		// One scoring of every user the rule saw: those who scored at
		// all are counted, those who reached the rule's score correlate.
		every := rule
		every.MinScore = 1
		all := BTCorrelate(spans, nearSpans, every)
		scored.Add(w, int64(len(all)))
		got[seq] = btAtLeast(all, rule.MinScore)
		if err := r.checkNear(key, near); err != nil {
			return err
		}
		nearPoints.Add(w, int64(len(near)))
		return nil
	})
	if err != nil {
		return res, err
	}
	contacts := 0
	var answers []string
	for i, u := range users {
		if !equalBT(got[i], want[i]) {
			return res, &workload.VerifyError{Phase: PhaseCorrelate, Key: []byte("user/" + strconv.FormatInt(u, 10)),
				What: fmt.Sprintf("correlations (geo-backtracer's rule) %v, the reference has %v", got[i], want[i])}
		}
		contacts += len(got[i])
		var w []string
		for _, c := range got[i] {
			w = append(w, fmt.Sprintf("%d (score %d)", c.User, c.Score))
		}
		if len(w) == 0 {
			w = []string{"none"}
		}
		answers = append(answers, fmt.Sprintf("%d: %s", u, strings.Join(w, ", ")))
	}
	res.Unit = "correlations of one user (geo-backtracer's rule: timeline, nearby pieces, the mixer's score)"
	res.Verify = results.Verify{Checked: int64(len(users))}
	res.Metrics = map[string]float64{
		"correlations":     float64(len(users)),
		"contacts":         float64(contacts),
		"users_nearby":     float64(scored.Sum()),
		"window_hours":     float64(to-from) / 3600,
		"near_points":      float64(nearPoints.Sum()),
		"threads":          float64(load.Goroutines),
		"nearby_seconds":   float64(rule.Seconds),
		"nearby_degrees":   float64(rule.Degrees),
		"min_score":        float64(rule.MinScore),
		"seconds_per_corr": res.Latency.Mean / 1e9,
	}
	res.Facts = map[string]string{"answers": strings.Join(answers, "; "), "rule": RuleBacktracer}
	return res, nil
}

// checkNear fails unless every point a store returned as nearby is one
// it holds: ingested, and not older than the retention.
func (r *run) checkNear(key []byte, near []Point) error {
	for _, q := range near {
		m := Minute(q.TS)
		if TS(m) != q.TS || !r.sim.Has(r.held, q.User, m) || r.sim.At(q.User, m) != q {
			return &workload.VerifyError{Phase: PhaseCorrelate, Key: key, What: fmt.Sprintf("a nearby point %+v was never ingested or is older than the retention", q)}
		}
	}
	return nil
}

// btAtLeast keeps the contacts (in BTCorrelate's order) whose score
// reaches min; nil when none does, as BTCorrelate answers.
func btAtLeast(cs []BTContact, min int) []BTContact {
	var out []BTContact
	for _, c := range cs {
		if c.Score >= min {
			out = append(out, c)
		}
	}
	return out
}

func equalBT(a, b []BTContact) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
