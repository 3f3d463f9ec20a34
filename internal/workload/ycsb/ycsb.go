package ycsb

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

func init() { workload.Register(YCSB{}) }

// Core workloads of YCSB (workloads/workloada … workloadf).
type proportions struct {
	read, update, insert, scan, rmw float64
	dist                            string
}

var core = map[string]proportions{
	"a": {read: 0.5, update: 0.5, dist: "zipfian"},
	"b": {read: 0.95, update: 0.05, dist: "zipfian"},
	"c": {read: 1, dist: "zipfian"},
	"d": {read: 0.95, insert: 0.05, dist: "latest"},
	"e": {scan: 0.95, insert: 0.05, dist: "zipfian"},
	"f": {read: 0.5, rmw: 0.5, dist: "zipfian"},
}

// Operation classes, as YCSB names them.
const (
	opRead = iota
	opUpdate
	opInsert
	opScan
	opRMW
)

var classNames = []string{"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"}

// Params of the ycsb workload.
type Params struct {
	// Workloads to run after loading, in order (a–f).
	Workloads []string `yaml:"workloads" json:"workloads"`
	// Operations per workload.
	Operations study.Count `yaml:"operations" json:"operations" range:"0..1e12"`
	// Fields per record and bytes per field (YCSB: 10 × 100).
	Fields      int `yaml:"fields" json:"fields" range:"1..1000"`
	FieldLength int `yaml:"field_length" json:"field_length" range:"16..1048576"`
	// Distribution overrides each workload's own (uniform, zipfian, latest).
	Distribution string `yaml:"distribution" json:"distribution"`
	// MaxScanLength: scan lengths are uniform in [1, max].
	MaxScanLength int `yaml:"max_scan_length" json:"max_scan_length" range:"1..1e6"`
	// Rate > 0 runs the workloads open-loop at this many operations/s.
	Rate float64 `yaml:"rate" json:"rate" range:"0..1e8"`
	// LoadRate > 0 runs the load open-loop at this many inserts/s, e.g.
	// so that a load under fault actions lasts past them whatever the
	// machine's speed.
	LoadRate float64 `yaml:"load_rate" json:"load_rate" range:"0..1e8"`
	// Client: "events" (default: event loops where the target can, see
	// events.go) or "goroutines" (a goroutine per connection, always).
	Client string `yaml:"client" json:"client"`
	// Loops is how many event loops share the connections (0: half the
	// cores, at least one).
	Loops int `yaml:"loops" json:"loops,omitempty" range:"0..1024"`
}

func defaults() Params {
	return Params{Workloads: []string{"a", "b", "c", "f", "d", "e"}, Operations: 100000, Fields: 10, FieldLength: 100, MaxScanLength: 100}
}

// YCSB implements workload.Workload. The ladder gives the record count:
// at each size the table is loaded fresh, then each workload runs.
type YCSB struct{}

func (YCSB) Name() string { return "ycsb" }
func (YCSB) Describe() string {
	return "YCSB core workloads A–F (read/update/insert/scan/read-modify-write; zipfian, uniform, latest)"
}

func (YCSB) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := defaults()
	if err := study.DecodeParams(s.File, e.Params, "workloads.ycsb.params", &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads.ycsb.params." + field, Msg: fmt.Sprintf(format, args...)}
	}
	for i, w := range p.Workloads {
		p.Workloads[i] = strings.ToLower(w)
		if _, ok := core[p.Workloads[i]]; !ok {
			return nil, bad("workloads", "%q: the core workloads are a, b, c, d, e, f", w)
		}
	}
	switch {
	case p.Fields < 1 || p.Fields > 1000:
		return nil, bad("fields", "%d: want 1..1000", p.Fields)
	case p.FieldLength < fieldHeader || p.FieldLength > 1<<20:
		return nil, bad("field_length", "%d: want %d..1MiB (each field carries a %d-byte verification header)", p.FieldLength, fieldHeader, fieldHeader)
	case p.Distribution != "" && p.Distribution != "uniform" && p.Distribution != "zipfian" && p.Distribution != "latest":
		return nil, bad("distribution", "%q: want uniform, zipfian or latest", p.Distribution)
	case p.MaxScanLength < 1:
		return nil, bad("max_scan_length", "want at least 1")
	case p.Rate < 0:
		return nil, bad("rate", "must not be negative")
	case p.LoadRate < 0:
		return nil, bad("load_rate", "must not be negative")
	case p.Loops < 0 || p.Loops > 1024:
		return nil, bad("loops", "%d: want 0 (half the cores) to 1024", p.Loops)
	}
	switch p.Client {
	case "":
		p.Client = "events"
	case "events", "goroutines":
	default:
		return nil, bad("client", "%q: want events or goroutines", p.Client)
	}
	return json.Marshal(p)
}

func (YCSB) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var steps []workload.Step
	record := recordBytes(p)
	for _, c := range s.Ladder {
		steps = append(steps, workload.Step{Workload: "ycsb", Phase: "load", N: int64(c), Fresh: true, Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(),
			Requires: Requires("load"), ItemBytes: record})
		for _, w := range p.Workloads {
			// Each core workload can run open loop: at the params' rate
			// (0: closed loop), or at the rate a search sets on the step.
			steps = append(steps, workload.Step{Workload: "ycsb", Phase: w, N: int64(c), Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(),
				Requires: Requires(w), OpenLoop: true, Rate: p.Rate})
		}
	}
	return steps, nil
}

// recordBytes is a record's raw bytes: its key ("user" + 20 digits, see
// key) and its fields.
func recordBytes(p Params) int64 { return int64(keyLen + p.Fields*p.FieldLength) }

// Requires is what a target must provide to run workload w (or the load):
// records read and written one by one, and ordered scans for a mix that
// scans (E).
func Requires(w string) target.Caps {
	need := Layouts.Needs().All
	if core[w].scan > 0 {
		return append(slices.Clip(need), target.OrderedScan)
	}
	return need
}

// Layouts are the YCSB tables, in order of preference: those Redis,
// Redis Cluster and memcached hold themselves (layout_targets.go), a
// handle that is a DB itself (no target is: internal/archtest fails on
// one that the table does not name; a test's DB may be), this
// package's on a target's SQL (target.SQLDB, layout_sql.go), on its CQL
// session (conn.CQL, layout_cql.go), on its MongoDB database
// (conn.Mongo, layout_mongo.go), on its Aerospike client
// (conn.Aerospike, layout_aerospike.go) or on its ordered keys
// (kv.Store). Each provides what its table offers (dbCaps).
var Layouts = layout.NewTable("ycsb", layout.Needs{All: target.Caps{target.KeyValue}},
	redisLayout, redisClusterLayout, memcachedLayout,
	layout.Layout[DB]{Name: "own", On: "a handle that is a YCSB table itself (ycsb.DB)", Provides: dbCaps,
		Open: func(h any) (DB, bool) { db, ok := h.(DB); return db, ok }},
	layout.Layout[DB]{Name: "sql", On: "an SQL database (target.SQLDB)", Provides: dbCaps,
		Open: func(h any) (DB, bool) {
			db, ok := h.(target.SQLDB)
			if !ok {
				return nil, false
			}
			return sqlDBOf(db), true
		}},
	layout.Layout[DB]{Name: "cql", On: "a CQL session (conn.CQL)", Provides: dbCaps,
		Open: func(h any) (DB, bool) {
			c, ok := h.(conn.CQL)
			if !ok {
				return nil, false
			}
			return cqlDBOf(c), true
		}},
	layout.Layout[DB]{Name: "mongo", On: "a MongoDB database (conn.Mongo)", Provides: dbCaps,
		Open: func(h any) (DB, bool) {
			m, ok := h.(conn.Mongo)
			if !ok {
				return nil, false
			}
			return mongoDBOf(m), true
		}},
	layout.Layout[DB]{Name: "aerospike", On: "an Aerospike client (conn.Aerospike)", Provides: dbCaps,
		Open: func(h any) (DB, bool) {
			a, ok := h.(conn.Aerospike)
			if !ok {
				return nil, false
			}
			return aerospikeDBOf(a), true
		}},
	layout.Layout[DB]{Name: "kv", On: "an ordered key-value store (kv.Store)", Provides: dbCaps,
		Open: func(h any) (DB, bool) {
			s, ok := h.(kv.Store)
			if !ok {
				return nil, false
			}
			return KVDB{KV: s}, true
		}},
)

// dbCaps is what a YCSB table offers: records one by one, ordered scans
// where it is a Scanner, and one dataset driven by several worker
// processes where it is an Attacher (captest leaves that out on an
// embedded engine, which is one process's whatever its table says).
func dbCaps(db DB) target.Caps {
	cs := target.Caps{target.KeyValue}
	if _, ok := db.(Scanner); ok {
		cs = append(cs, target.OrderedScan)
	}
	if _, ok := db.(Attacher); ok {
		cs = append(cs, target.Shared)
	}
	return cs
}

// Of is the YCSB table on a target handle (Layouts); false when it
// offers none.
func Of(h any) (DB, bool) {
	db, _, ok := Layouts.Of(h)
	return db, ok
}

// CanRun says whether a target handle can run YCSB workload w ("" for
// any), and if not, why.
func CanRun(h any, w string) error {
	db, ok := Of(h)
	if !ok {
		return fmt.Errorf("offers no YCSB table")
	}
	if m := core[w]; m.scan > 0 {
		if _, ok := db.(Scanner); !ok {
			return fmt.Errorf("has no ordered scan, which workload %s needs", strings.ToUpper(w))
		}
	}
	return nil
}

func (YCSB) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, fmt.Errorf("ycsb: bad step params: %w", err)
	}
	db, ok := Of(env.Target)
	if !ok {
		return nil, fmt.Errorf("ycsb: target offers no YCSB table")
	}
	if err := CanRun(env.Target, st.Phase); err != nil {
		return nil, fmt.Errorf("ycsb: this target %v", err)
	}
	r := &run{db: db, p: p, seed: uint64(st.Seed), n: st.N, goroutines: max(st.Concurrency, 1), rate: st.Rate, duration: st.Duration,
		part: st.Part, parts: max(st.Parts, 1), phase: st.Phase}
	var res *results.Step
	var err error
	switch {
	case st.Phase == "load" && len(st.Faults) > 0:
		res, err = r.loadUnderFaults(ctx, env, st)
	case st.Phase == "load":
		res, err = r.load(ctx, env)
	default:
		res, err = r.workload(ctx, env, st.Phase)
	}
	workload.SetItemBytes(res, float64(recordBytes(p)))
	return res, err
}

type run struct {
	db         DB
	p          Params
	seed       uint64
	n          int64
	goroutines int
	// rate > 0 runs a core workload open loop; duration > 0 bounds it by
	// time instead of by Operations.
	rate     float64
	duration time.Duration
	// part of parts: the worker processes sharing the step (see Split).
	part, parts int
	phase       string
}

// Split implements workload.Splitter: every YCSB step can be shared by
// several worker processes. The operations are split as the runner splits
// them among goroutines (see runner.Config.Part), so records 0..N-1 are
// loaded once whatever the number of processes, and a core workload does
// the same operations; the records workloads D and E insert are numbered
// by global goroutine, so they are the same data for the same total
// number of goroutines (processes × concurrency).
func (YCSB) Split(workload.Step) error { return nil }

// SplitNeeds: every process but the first attaches to the table the
// first one made (Attacher), which the target declares as target.Shared.
func (YCSB) SplitNeeds(workload.Step) target.Caps { return target.Caps{target.Shared} }

// MergeMetric: the record count and the mix are the whole's; the load
// under faults counts each part's own inserts, errors and losses.
func (YCSB) MergeMetric(name string) workload.Merge {
	switch name {
	case "records", "read", "update", "insert", "scan", "rmw", workload.MetricItemBytes:
		return workload.Same
	case "verify_seconds", "cluster_not_ok_seconds":
		return workload.Max
	}
	return workload.Sum
}

// global is load goroutine w's index among every process's goroutines,
// and G their number.
func (r *run) global(w int) (g, G int64) {
	return int64(r.part*r.goroutines + w), int64(r.parts * r.goroutines)
}

// insertSpan is how many record numbers each core workload's inserts may
// use: the inserts of workload x are records N + (x-'a')·insertSpan +
// g + k·G (goroutine g of G, its k-th insert), so that D and E, both run
// on the table loaded for the size, insert records of their own instead
// of D's again (a duplicate key on a SQL table, an overwrite elsewhere).
const insertSpan = 1 << 40

// inserted is the number of goroutine w's k-th insert in workload name.
func (r *run) inserted(name string, w int, k int64) uint64 {
	g, G := r.global(w)
	return uint64(r.n) + uint64(name[0]-'a')*insertSpan + uint64(g+k*G)
}

// RecordKey is record i's key (see key), for a bare loop over the same
// records (storebench overhead --workload ycsb-c).
func RecordKey(dst []byte, i uint64) []byte { return key(dst, i) }

// keyLen is the length of every record's key.
const keyLen = len(keyZero)

const keyZero = "user00000000000000000000"

// key of record i: "user" + a scattered number (20 digits, zero-padded),
// as YCSB's hashed order; built into dst with no allocation once dst
// holds 24 bytes.
func key(dst []byte, i uint64) []byte {
	dst = append(dst[:0], keyZero...)
	for j, h := len(dst)-1, fnv64(i); h > 0; j, h = j-1, h/10 {
		dst[j] = byte('0' + h%10)
	}
	return dst
}

// Each field value carries a 16-byte header — a tag binding it to its key
// and field number, and a nonce that changes on every write — then bytes
// generated from (tag, nonce). A read checks every field it gets against
// that, so a lost, torn or misdirected write shows, even while other
// goroutines update the same records concurrently.
const fieldHeader = 16

func fieldTag(k []byte, field int) uint64 { return tagOf(keyHash(k), field) }

// keyHash is FNV-1a of a record's key; tagOf(keyHash(k), i) is field i's
// tag, so a record's fields hash the key once.
func keyHash(k []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range k {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return h
}

func tagOf(h uint64, field int) uint64 { return gen.SplitMix(h ^ uint64(field)) }

func fillField(dst []byte, k []byte, field int, nonce uint64) {
	fillTagged(dst, fieldTag(k, field), nonce)
}

// fillTagged writes a field of tag and nonce: the header, then the bytes
// generated from them.
func fillTagged(dst []byte, tag, nonce uint64) {
	binary.BigEndian.PutUint64(dst[0:], tag)
	binary.BigEndian.PutUint64(dst[8:], nonce)
	s := gen.Mix(tag, nonce) | 1
	b := dst[fieldHeader:]
	for len(b) >= 8 {
		s ^= s >> 12
		s ^= s << 25
		s ^= s >> 27
		binary.LittleEndian.PutUint64(b, s*0x2545f4914f6cdd1d)
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(s >> (8 * i))
	}
}

// generated says whether f's bytes after the header are those fillTagged
// writes for tag and nonce, compared as they are generated.
func generated(f []byte, tag, nonce uint64) bool {
	s := gen.Mix(tag, nonce) | 1
	b := f[fieldHeader:]
	for len(b) >= 8 {
		s ^= s >> 12
		s ^= s << 25
		s ^= s >> 27
		if binary.LittleEndian.Uint64(b) != s*0x2545f4914f6cdd1d {
			return false
		}
		b = b[8:]
	}
	for i := range b {
		if b[i] != byte(s>>(8*i)) {
			return false
		}
	}
	return true
}

func (r *run) checkFields(phase string, k []byte, fields [][]byte, _ []byte) error {
	if len(fields) != r.p.Fields {
		return &workload.VerifyError{Phase: phase, Key: k, What: fmt.Sprintf("record has %d fields, %d were written", len(fields), r.p.Fields)}
	}
	h := keyHash(k)
	for i, f := range fields {
		if len(f) != r.p.FieldLength {
			return &workload.VerifyError{Phase: phase, Key: k, What: fmt.Sprintf("field%d has %d bytes, %d were written", i, len(f), r.p.FieldLength)}
		}
		tag := tagOf(h, i)
		if binary.BigEndian.Uint64(f) != tag {
			return &workload.VerifyError{Phase: phase, Key: k, What: fmt.Sprintf("field%d belongs to another record or field", i)}
		}
		if !generated(f, tag, binary.BigEndian.Uint64(f[8:])) {
			return &workload.VerifyError{Phase: phase, Key: k, What: fmt.Sprintf("field%d is corrupt", i)}
		}
	}
	return nil
}

type wstate struct {
	key, scratch []byte
	fields       [][]byte
	slab         []byte
	inserted     int64  // records this goroutine inserted during the workload
	nonce        uint64 // the planned insert's record nonce
	// An embedded engine's reads (kv.View): the function given to the
	// engine, made once, and the fields it decodes.
	w       int
	view    func([]byte) error
	decoded [][]byte
}

func (r *run) states() []wstate {
	ws := make([]wstate, r.goroutines)
	for i := range ws {
		ws[i].slab = make([]byte, r.p.Fields*r.p.FieldLength)
		ws[i].fields = make([][]byte, r.p.Fields)
		ws[i].scratch = make([]byte, r.p.FieldLength)
	}
	return ws
}

// record fills every field of record k with fresh values.
func (r *run) record(s *wstate, k []byte, nonce uint64) [][]byte {
	h := keyHash(k)
	for i := range s.fields {
		f := s.slab[i*r.p.FieldLength : (i+1)*r.p.FieldLength]
		fillTagged(f, tagOf(h, i), nonce+uint64(i))
		s.fields[i] = f
	}
	return s.fields
}

// load inserts records 0..N-1 with every goroutine, into a fresh table.
func (r *run) load(ctx context.Context, env *workload.Env) (*results.Step, error) {
	if err := r.prepareTable(ctx, env, func(f func() error) error { return f() }); err != nil {
		return nil, err
	}
	ws := r.states()
	m := &mix{
		plan: func(_ int, s *wstate, seq int64) int {
			s.key = key(s.key, uint64(seq))
			s.nonce = gen.Mix(r.seed, uint64(seq))
			return opInsert
		},
		insert: func(s *wstate) [][]byte { return r.record(s, s.key, s.nonce) },
	}
	load := workload.Closed(r.goroutines, r.n).At(r.p.LoadRate)
	loops, done, err := r.driven(ctx, env, &load, ws, m, r.p.LoadRate == 0)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := workload.Measure(ctx, env, load, r.op(load, ws, m))
	res.Unit = fmt.Sprintf("insert a record of %d×%d bytes", r.p.Fields, r.p.FieldLength)
	res.Metrics = map[string]float64{"records": float64(r.n), "event_loops": float64(loops)}
	return res, err
}

// prepareTable makes the load's fresh table. Shared by several
// processes, the first prepares it and the others attach to it once it
// exists (Init empties the table). try runs each statement (with retries
// while nodes fail).
func (r *run) prepareTable(ctx context.Context, env *workload.Env, try func(func() error) error) error {
	if r.part == 0 {
		if err := try(func() error { return r.db.Init(ctx, r.p.Fields) }); err != nil {
			return fmt.Errorf("ycsb: preparing the table: %w", err)
		}
	}
	if r.parts > 1 {
		if _, err := env.Sync(ctx, false); err != nil {
			return err
		}
	}
	if r.part > 0 {
		a, ok := r.db.(Attacher)
		if !ok {
			return fmt.Errorf("ycsb: this target cannot share its table with other worker processes (no Attach)")
		}
		if err := try(func() error { return a.Attach(ctx, r.p.Fields) }); err != nil {
			return fmt.Errorf("ycsb: attaching to the table: %w", err)
		}
	}
	return nil
}

func (r *run) workload(ctx context.Context, env *workload.Env, name string) (*results.Step, error) {
	m0 := core[name]
	x := r.newChoices(name)
	ws := r.states()
	load := workload.Closed(r.goroutines, int64(r.p.Operations)).At(r.rate)
	if r.duration > 0 {
		// A rate search's trial: bounded by its duration alone.
		load = workload.Open(r.rate, r.duration).On(r.goroutines)
	}
	load = load.Classed(classNames, x.classOf)
	m := &mix{
		plan:   x.plan,
		insert: func(s *wstate) [][]byte { return r.record(s, s.key, s.nonce) },
		update: x.update,
		check:  x.check,
		scan:   x.scan,
	}
	// Scans and open loops stay on the goroutine client.
	loops, done, err := r.driven(ctx, env, &load, ws, m, m0.scan == 0 && load.Rate == 0 && load.Duration == 0)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := workload.Measure(ctx, env, load, r.op(load, ws, m))
	res.Unit = "operation"
	res.Verify = results.Verify{Checked: x.verified.Sum()}
	res.Metrics = map[string]float64{"records": float64(r.n), "read": m0.read, "update": m0.update, "insert": m0.insert, "scan": m0.scan, "rmw": m0.rmw, "event_loops": float64(loops)}
	return res, err
}

// choices are a core workload's choices per operation: its class, from
// the workload's mix (cum: the cumulative shares of read, update, insert
// and scan; the rest read-modify-write), and its record, from the
// request distribution (dist; z its zipfian, nil when uniform); and the
// records read and checked, per goroutine.
type choices struct {
	r        *run
	name     string
	salt     uint64
	cum      []float64
	dist     string
	z        *zipfian
	verified workload.Tally
}

func (r *run) newChoices(name string) *choices {
	m0 := core[name]
	x := &choices{r: r, name: name, salt: uint64(name[0]), dist: m0.dist, verified: workload.NewTally(r.goroutines)}
	if r.p.Distribution != "" {
		x.dist = r.p.Distribution
	}
	if x.dist != "uniform" {
		x.z = newZipfian(r.n)
	}
	x.cum = []float64{m0.read, m0.read + m0.update, m0.read + m0.update + m0.insert, m0.read + m0.update + m0.insert + m0.scan}
	return x
}

// classOf is operation seq's class.
func (x *choices) classOf(seq int64) int {
	u := uniform01(gen.Mix(x.r.seed, x.salt, uint64(seq)))
	for c, edge := range x.cum {
		if u < edge {
			return c
		}
	}
	return opRMW
}

// pick chooses an existing record for goroutine w.
func (x *choices) pick(w int, s *wstate, seq int64) uint64 {
	r := x.r
	u := uniform01(gen.Mix(r.seed, x.salt, uint64(seq), 1))
	switch x.dist {
	case "uniform":
		return uint64(float64(r.n) * u)
	case "latest":
		// The most recent records first: this goroutine's own inserts
		// (known to be complete), then the loaded ones from the end.
		rank := x.z.rank(u)
		if rank < s.inserted {
			return r.inserted(x.name, w, s.inserted-1-rank)
		}
		rank -= s.inserted
		if rank >= r.n {
			rank = r.n - 1
		}
		return uint64(r.n - 1 - rank)
	}
	// Scrambled zipfian: popular ranks scattered over the key space.
	return fnv64(uint64(x.z.rank(u))) % uint64(r.n)
}

// plan chooses operation seq's class and its record (its key in s.key).
func (x *choices) plan(w int, s *wstate, seq int64) int {
	op := x.classOf(seq)
	if op == opInsert {
		i := x.r.inserted(x.name, w, s.inserted)
		s.key = key(s.key, i)
		s.nonce = gen.Mix(x.r.seed, i)
		return op
	}
	s.key = key(s.key, x.pick(w, s, seq))
	return op
}

// update gives the fields operation seq writes: one field (YCSB's
// writeallfields=false).
func (x *choices) update(s *wstate, seq int64) [][]byte {
	r := x.r
	f := int(gen.Mix(r.seed, x.salt, uint64(seq), 2) % uint64(r.p.Fields))
	for i := range s.fields {
		s.fields[i] = nil
	}
	v := s.slab[:r.p.FieldLength]
	fillField(v, s.key, f, gen.Mix(r.seed, x.salt, uint64(seq), 3))
	s.fields[f] = v
	return s.fields
}

// check verifies the record read at s.key.
func (x *choices) check(w int, s *wstate, fields [][]byte) error {
	if err := x.r.checkFields(x.name, s.key, fields, s.scratch); err != nil {
		return err
	}
	x.verified.Add(w, 1)
	return nil
}

// scan runs operation seq's scan from s.key and verifies every record.
func (x *choices) scan(ctx context.Context, w int, s *wstate, seq int64) error {
	r := x.r
	n := 1 + int(gen.Mix(r.seed, x.salt, uint64(seq), 4)%uint64(r.p.MaxScanLength))
	var failure error
	err := r.db.(Scanner).Scan(ctx, s.key, n, func(k []byte, fields [][]byte) bool {
		if failure = r.checkFields(x.name, k, fields, s.scratch); failure != nil {
			return false
		}
		x.verified.Add(w, 1)
		return true
	})
	if err == nil {
		err = failure
	}
	return err
}

// mix is what a step does per operation, shared by the goroutine client
// (op) and the event loops (events.go): plan chooses operation seq's
// class and record (its key in s.key), insert and update give the fields
// to write, check verifies a record read, scan runs a scan.
type mix struct {
	plan   func(w int, s *wstate, seq int64) int
	insert func(s *wstate) [][]byte
	update func(s *wstate, seq int64) [][]byte
	check  func(w int, s *wstate, fields [][]byte) error
	scan   func(ctx context.Context, w int, s *wstate, seq int64) error
}

// op is the goroutine client's operation: load goroutine w runs
// operation seq through the DB; nil when the step is driven by event
// loops (load.Drive set by driven).
func (r *run) op(load workload.Load, ws []wstate, m *mix) runner.Op {
	if load.Drive != nil {
		return nil
	}
	return func(ctx context.Context, w int, seq int64) error {
		s := &ws[w]
		op := m.plan(w, s, seq)
		switch op {
		case opInsert:
			if err := r.db.Insert(ctx, s.key, m.insert(s)); err != nil {
				return err
			}
			s.inserted++
			return nil
		case opUpdate:
			return r.db.Update(ctx, s.key, m.update(s, seq))
		case opScan:
			return m.scan(ctx, w, s, seq)
		}
		var fields [][]byte
		var err error
		if kvdb, ok := r.db.(KVDB); ok {
			// An embedded engine's record, lent by the engine and
			// decoded into the goroutine's own slices: no allocation.
			if s.view == nil {
				s.view = func(v []byte) error {
					f, err := decodeInto(s.decoded[:0], v)
					if err != nil {
						return fmt.Errorf("record %q: %w", s.key, err)
					}
					s.decoded = f
					return m.check(s.w, s, f)
				}
			}
			s.w = w
			err = kv.View(kvdb.KV, s.key, s.view)
			if err == nil && op == opRMW {
				return r.db.Update(ctx, s.key, m.update(s, seq))
			}
		} else {
			fields, err = r.db.Read(ctx, s.key)
		}
		if errors.Is(err, kv.ErrNotFound) {
			return &workload.VerifyError{Phase: r.phase, Key: s.key, What: "record is missing"}
		}
		if err != nil || fields == nil {
			return err
		}
		if err := m.check(w, s, fields); err != nil {
			return err
		}
		if op == opRMW {
			return r.db.Update(ctx, s.key, m.update(s, seq))
		}
		return nil
	}
}
