package oltp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/workload"
	"storebench/internal/workload/gen"
)

func init() { workload.Register(OLTP{}) }

// Phases.
const (
	PhasePrepare   = "prepare"
	PhaseReadOnly  = "read_only"
	PhaseWriteOnly = "write_only"
)

// Per transaction (oltp_common.lua with its defaults): reads, writes and
// other statements (BEGIN and COMMIT), as sysbench counts them.
const (
	pointSelects = 10
	// ReadOnlyReads: 10 point selects and one each of the simple, sum,
	// order and distinct ranges.
	ReadOnlyReads = pointSelects + 4
	// WriteOnlyWrites: index update, non-index update, delete, insert.
	WriteOnlyWrites = 4
	// Other: BEGIN and COMMIT.
	Other = 2
)

// Params of the oltp workload. The ladder gives the rows per table
// (sysbench --table-size); threads are the step's concurrency (the
// study's, or a sweep's levels).
type Params struct {
	Tables int `yaml:"tables" json:"tables" range:"1..1000"`
	// Phases run in this order; without prepare the tables must exist
	// (prepared by an earlier run, or by sysbench with the same
	// --tables and --table-size and then read verification is of the
	// format only: see Verify).
	Phases []string `yaml:"phases" json:"phases"`
	// Duration of each run phase (sysbench --time).
	Duration study.Duration `yaml:"duration" json:"duration" range:"1ms..24h"`
	// RangeSize of the range selects (sysbench --range-size).
	RangeSize int `yaml:"range_size" json:"range_size" range:"1..1e6"`
	// ReportInterval of the interval lines (sysbench --report-interval),
	// a whole number of seconds.
	ReportInterval study.Duration `yaml:"report_interval" json:"report_interval" range:"1s..1h"`
	// BatchRows per bulk insert statement in prepare.
	BatchRows int `yaml:"batch_rows" json:"batch_rows" range:"1..10000"`
	// Verify: "rows" checks each point select's c against its id (rows
	// prepared by storebench), "format" only sysbench's format (tables
	// prepared by sysbench itself).
	Verify string `yaml:"verify" json:"verify"`
	// Client: "events" (default: event loops where every connection can
	// be driven by one, see Evented) or "goroutines" (a goroutine per
	// connection, always). The event loops do not reconnect: a lost
	// connection fails the run there, where a goroutine reconnects and
	// counts it (sysbench's reconnects).
	Client string `yaml:"client" json:"client"`
	// Loops is how many event loops share the connections (0: half the
	// cores, at least one).
	Loops int `yaml:"loops" json:"loops,omitempty" range:"0..1024"`
	// RandType is how ids are drawn (sysbench --rand-type): "uniform"
	// (the default here) or "special" (sysbench 1.0's default and the
	// seed's, with RandSpecPct and RandSpecRes: see rand.go).
	RandType string `yaml:"rand_type" json:"rand_type"`
	// RandSpecPct: percent of the ids that are special (sysbench
	// --rand-spec-pct, 1).
	RandSpecPct int `yaml:"rand_spec_pct" json:"rand_spec_pct" range:"0..100"`
	// RandSpecRes: percent of the draws that go to the special ids
	// (sysbench --rand-spec-res, 75).
	RandSpecRes int `yaml:"rand_spec_res" json:"rand_spec_res" range:"0..100"`
}

func defaults() Params {
	return Params{Tables: 1, Phases: []string{PhasePrepare, PhaseReadOnly, PhaseWriteOnly}, Duration: study.Duration(10 * time.Second),
		RangeSize: 100, ReportInterval: study.Duration(time.Second), BatchRows: 1000, Verify: "rows", Client: "events",
		RandType: RandUniform, RandSpecPct: 1, RandSpecRes: 75}
}

// OLTP implements workload.Workload.
type OLTP struct{}

func (OLTP) Name() string { return "oltp" }
func (OLTP) Describe() string {
	return "sysbench oltp_read_only and oltp_write_only: sbtest tables, prepared statements, BEGIN … COMMIT (SQL targets)"
}

func (OLTP) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := defaults()
	if err := study.DecodeParams(s.File, e.Params, "workloads.oltp.params", &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads.oltp.params." + field, Msg: fmt.Sprintf(format, args...)}
	}
	seen := map[string]bool{}
	for _, ph := range p.Phases {
		switch ph {
		case PhasePrepare, PhaseReadOnly, PhaseWriteOnly:
		default:
			return nil, bad("phases", "%q: the phases are prepare, read_only, write_only", ph)
		}
		if seen[ph] {
			return nil, bad("phases", "%q is named twice", ph)
		}
		seen[ph] = true
	}
	switch {
	case len(p.Phases) == 0:
		return nil, bad("phases", "name at least one phase")
	case seen[PhasePrepare] && p.Phases[0] != PhasePrepare:
		return nil, bad("phases", "prepare must come first")
	case p.Tables < 1 || p.Tables > 1000:
		return nil, bad("tables", "%d: want 1..1000", p.Tables)
	case p.Duration <= 0:
		return nil, bad("duration", "must be positive")
	case p.RangeSize < 1:
		return nil, bad("range_size", "want at least 1")
	case p.ReportInterval < study.Duration(time.Second) || time.Duration(p.ReportInterval)%time.Second != 0:
		return nil, bad("report_interval", "want a whole number of seconds, at least 1s")
	case p.BatchRows < 1 || p.BatchRows > 10000:
		return nil, bad("batch_rows", "%d: want 1..10000", p.BatchRows)
	case p.Verify != "rows" && p.Verify != "format":
		return nil, bad("verify", "%q: want rows or format", p.Verify)
	case p.Client != "events" && p.Client != "goroutines":
		return nil, bad("client", "%q: want events or goroutines", p.Client)
	case p.Loops < 0 || p.Loops > 1024:
		return nil, bad("loops", "%d: want 0 (half the cores) to 1024", p.Loops)
	case p.RandType != RandUniform && p.RandType != RandSpecial:
		return nil, bad("rand_type", "%q: want uniform or special (sysbench's --rand-type; gaussian and pareto are not built)", p.RandType)
	case p.RandSpecPct < 0 || p.RandSpecPct > 100:
		return nil, bad("rand_spec_pct", "%d: want 0..100", p.RandSpecPct)
	case p.RandSpecRes < 0 || p.RandSpecRes > 100:
		return nil, bad("rand_spec_res", "%d: want 0..100", p.RandSpecRes)
	}
	for _, n := range s.Ladder {
		if n > math.MaxInt32 {
			return nil, bad("tables", "rows per table %d: sysbench's id is an INTEGER (at most %d)", int64(n), math.MaxInt32)
		}
	}
	return json.Marshal(p)
}

func (OLTP) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var steps []workload.Step
	need := Layouts.Needs().All
	for _, n := range s.Ladder {
		for _, ph := range p.Phases {
			st := workload.Step{Workload: "oltp", Phase: ph, N: int64(n), Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(), Requires: need}
			if ph == PhasePrepare {
				// A row in each table (rowBytes: id, k and the two CHARs).
				st.Fresh, st.ItemBytes = true, int64(p.Tables)*rowBytes
			}
			steps = append(steps, st)
		}
	}
	return steps, nil
}

func (OLTP) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, fmt.Errorf("oltp: bad step params: %w", err)
	}
	store, ok := StoreOf(env.Target)
	if !ok {
		return nil, fmt.Errorf("oltp: target offers no SQL tables")
	}
	r := &run{store: store, p: p, seed: uint64(st.Seed), rows: st.N, threads: max(st.Concurrency, 1), dist: newDist(p)}
	var res *results.Step
	var err error
	switch st.Phase {
	case PhasePrepare:
		res, err = r.prepare(ctx, env)
	case PhaseReadOnly, PhaseWriteOnly:
		res, err = r.run(ctx, env, st.Phase)
	default:
		return nil, fmt.Errorf("oltp: unknown phase %q", st.Phase)
	}
	// An item is one row (a step's N rows are in each of its tables).
	workload.SetItemBytes(res, rowBytes)
	return res, err
}

type run struct {
	store   Store
	p       Params
	seed    uint64
	rows    int64
	threads int
	dist    dist
}

// prepare creates the tables, bulk-inserts rows 1..N into each in
// batches (up to the step's concurrency of them at once, as sysbench's
// prepare runs a table per thread), then creates the secondary indexes.
func (r *run) prepare(ctx context.Context, env *workload.Env) (*results.Step, error) {
	if err := r.store.CreateTables(ctx, r.p.Tables); err != nil {
		return nil, fmt.Errorf("oltp: creating the tables: %w", err)
	}
	batches := (r.rows + int64(r.p.BatchRows) - 1) / int64(r.p.BatchRows)
	goroutines := min(r.threads, r.p.Tables*int(min(batches, 1<<20)))
	type buf struct {
		rows []Row
		slab []byte
	}
	bufs := make([]buf, goroutines)
	for i := range bufs {
		bufs[i].rows = make([]Row, r.p.BatchRows)
		bufs[i].slab = make([]byte, r.p.BatchRows*(CLen+PadLen))
	}
	total := batches * int64(r.p.Tables)
	res, err := workload.Measure(ctx, env, workload.Closed(goroutines, total), func(ctx context.Context, w int, seq int64) error {
		table := 1 + int(seq%int64(r.p.Tables))
		first := 1 + (seq/int64(r.p.Tables))*int64(r.p.BatchRows)
		last := min(first+int64(r.p.BatchRows)-1, r.rows)
		b := &bufs[w]
		rows := b.rows[:last-first+1]
		for i := range rows {
			id := first + int64(i)
			slab := b.slab[i*(CLen+PadLen):]
			rows[i] = Row{ID: id, K: PrepareK(&r.dist, r.seed, table, id, r.rows),
				C: FillC(slab, r.seed, table, id, 0), Pad: FillPad(slab[CLen:], r.seed, table, id, 0)}
		}
		return r.store.InsertRows(ctx, table, rows)
	})
	res.Unit = fmt.Sprintf("bulk insert of %d rows", r.p.BatchRows)
	if err != nil {
		return res, err
	}
	start := time.Now()
	for t := 1; t <= r.p.Tables; t++ {
		if err := r.store.CreateIndex(ctx, t); err != nil {
			return res, fmt.Errorf("oltp: creating k_%d: %w", t, err)
		}
	}
	idx := time.Since(start).Seconds()
	res.Metrics = map[string]float64{"tables": float64(r.p.Tables), "rows": float64(r.rows), "rows_per_s": float64(r.rows*int64(r.p.Tables)) / res.Seconds,
		"load_s": res.Seconds, "index_s": idx}
	res.Facts = map[string]string{"index": fmt.Sprintf("k_1..k_%d on k, created after the load", r.p.Tables), "ids": r.dist.describe()}
	return res, nil
}

// counters of one thread, on a cache line of their own.
type counters struct {
	reads, writes, other, errors, reconnects, events atomic.Int64
	busy                                             atomic.Int64 // ns in events
	verified                                         int64        // read after the run only
	_                                                [64]byte
}

// Per-tick counts in results.Tick.Counts.
var countNames = []string{"reads", "writes", "other", "errors", "reconnects"}

func (c *counters) get(i int) int64 {
	switch i {
	case 0:
		return c.reads.Load()
	case 1:
		return c.writes.Load()
	case 2:
		return c.other.Load()
	case 3:
		return c.errors.Load()
	}
	return c.reconnects.Load()
}

// maxRetries bounds the restarts of one transaction: sysbench retries
// forever, but a target that fails every attempt would then never end.
const maxRetries = 10000

func (r *run) run(ctx context.Context, env *workload.Env, phase string) (*results.Step, error) {
	l := &txLoad{r: r, conns: make([]Conn, r.threads), cs: make([]counters, r.threads)}
	defer l.close()
	if err := l.open(ctx, phase == PhaseWriteOnly); err != nil {
		return nil, err
	}
	env2 := *env
	env2.Progress = func(done, total int64) {
		l.snap()
		if env.Progress != nil {
			env.Progress(done, total)
		}
	}
	load, loops, err := l.load(phase)
	if err != nil {
		return nil, err
	}
	l.txs = make([]*tx, r.threads)
	for i := range l.txs {
		l.txs[i] = newTx(r, phase, &l.cs[i])
	}
	var op runner.Op
	if load.Drive == nil {
		op = l.op
	}
	res, err := workload.Measure(ctx, &env2, load, op)
	res.Unit = "transaction (" + phase + ")"
	res.Facts = map[string]string{"ids": r.dist.describe()}
	var verified int64
	for i := range l.cs {
		verified += l.cs[i].verified
	}
	res.Verify = results.Verify{Checked: verified}
	l.addCounts(res)
	addP95(res, max(int(time.Duration(r.p.ReportInterval)/time.Second), 1))
	l.addMetrics(res, loops)
	return res, err
}

// txLoad is one transaction phase's state: per thread a connection, a
// transaction and counters; and the summed counters' snapshots at each
// tick (the runner reports progress once per tick and once at the end).
type txLoad struct {
	r     *run
	conns []Conn
	cs    []counters
	txs   []*tx

	mu    sync.Mutex
	snaps [][5]int64
}

// open opens a connection per thread (write: for the write-only phase).
func (l *txLoad) open(ctx context.Context, write bool) error {
	for i := range l.conns {
		c, err := l.r.store.OpenConn(ctx, l.r.p.Tables, write)
		if err != nil {
			return fmt.Errorf("oltp: opening connection %d of %d: %w", i+1, l.r.threads, err)
		}
		l.conns[i] = c
	}
	return nil
}

// close closes the connections opened.
func (l *txLoad) close() {
	for _, c := range l.conns {
		if c != nil {
			c.Close()
		}
	}
}

// snap keeps a snapshot of the counters summed over the threads.
func (l *txLoad) snap() {
	var s [5]int64
	for i := range l.cs {
		for k := range s {
			s[k] += l.cs[i].get(k)
		}
	}
	l.mu.Lock()
	l.snaps = append(l.snaps, s)
	l.mu.Unlock()
}

// load is the phase's load: a goroutine per thread for the phase's
// duration or, where the client is evented, the connections spread over
// event loops (loops: how many; 0 when none).
func (l *txLoad) load(phase string) (load workload.Load, loops int, err error) {
	r := l.r
	load = workload.Closed(r.threads, 0).For(time.Duration(r.p.Duration))
	sessions, err := r.eventConns(l.conns, phase, l.cs)
	if err != nil {
		return load, 0, err
	}
	if sessions == nil {
		return load, 0, nil
	}
	load, loops = load.OnLoops(r.p.Loops, sessions)
	return load, loops, nil
}

// op runs transaction seq on thread w: an ignorable error rolls it back
// and a lost connection reconnects, and it starts over (at most
// maxRetries times).
func (l *txLoad) op(ctx context.Context, w int, seq int64) error {
	c, t, conn := &l.cs[w], l.txs[w], l.conns[w]
	start := time.Now()
	for attempt := 0; ; attempt++ {
		t.plan(seq, attempt)
		err := t.exec(ctx, conn)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		switch {
		case errors.Is(err, ErrIgnorable) && attempt < maxRetries:
			c.errors.Add(1)
			if rerr := conn.Rollback(ctx); rerr != nil && !errors.Is(rerr, ErrLost) {
				return fmt.Errorf("oltp: rollback after an ignored error: %w", rerr)
			}
		case errors.Is(err, ErrLost) && attempt < maxRetries:
			c.reconnects.Add(1)
			if rerr := conn.Reconnect(ctx); rerr != nil {
				return fmt.Errorf("oltp: reconnecting after %v: %w", err, rerr)
			}
		default:
			return err
		}
	}
	c.events.Add(1)
	c.busy.Add(int64(time.Since(start)))
	return nil
}

// addCounts adds to each tick of the series the counters' increase over
// it, from the snapshots.
func (l *txLoad) addCounts(res *results.Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	snaps := l.snaps
	for i := range res.Series {
		if len(snaps) == 0 {
			break
		}
		cur := snaps[min(i, len(snaps)-1)]
		if i == len(res.Series)-1 {
			cur = snaps[len(snaps)-1]
		}
		var prev [5]int64
		if i > 0 {
			prev = snaps[min(i-1, len(snaps)-1)]
		}
		res.Series[i].Counts = map[string]int64{}
		for k, name := range countNames {
			res.Series[i].Counts[name] = cur[k] - prev[k]
		}
	}
}

// addP95 adds the 95th percentile of each report interval (every ticks),
// at its last tick: the per-tick histograms leave the results for the
// .hlog files, and percentiles of several ticks do not combine.
func addP95(res *results.Step, every int) {
	acc := latency.New()
	for i := range res.Series {
		if i < len(res.Intervals) {
			if h, err := latency.Decode(res.Intervals[i].Hist); err == nil {
				acc.Merge(h)
			}
		}
		if (i+1)%every == 0 || i == len(res.Series)-1 {
			if res.Series[i].Counts == nil {
				res.Series[i].Counts = map[string]int64{}
			}
			res.Series[i].Counts["p95_ns"] = acc.ValueAtQuantile(95)
			acc.Reset()
		}
	}
}

// addMetrics adds the phase's totals and sysbench's per-thread fairness
// figures (loops: the event loops, 0 when none).
func (l *txLoad) addMetrics(res *results.Step, loops int) {
	r := l.r
	var tot [5]int64
	var events, busy []float64
	for i := range l.cs {
		for k := range tot {
			tot[k] += l.cs[i].get(k)
		}
		events = append(events, float64(l.cs[i].events.Load()))
		busy = append(busy, float64(l.cs[i].busy.Load())/1e9)
	}
	secs := res.Seconds
	ea, es := meanStd(events)
	ba, bs := meanStd(busy)
	var sum float64
	for _, b := range busy {
		sum += b
	}
	res.Metrics = map[string]float64{
		"threads": float64(r.threads), "tables": float64(r.p.Tables), "rows": float64(r.rows),
		"reads": float64(tot[0]), "writes": float64(tot[1]), "other": float64(tot[2]),
		"queries":        float64(tot[0] + tot[1] + tot[2]),
		"ignored_errors": float64(tot[3]), "reconnects": float64(tot[4]),
		"tps": float64(res.Ops) / secs, "qps": float64(tot[0]+tot[1]+tot[2]) / secs,
		"events_avg": ea, "events_stddev": es, "exec_time_avg_s": ba, "exec_time_stddev_s": bs,
		"latency_sum_s":   sum,
		"report_interval": time.Duration(r.p.ReportInterval).Seconds(),
		"event_loops":     float64(loops),
	}
}

func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	var s float64
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)))
}

// rand is a transaction's random stream: a pure function of the seed, the
// phase, the transaction's number and the attempt.
type rand struct{ s uint64 }

func (g *rand) next() uint64 {
	g.s = gen.SplitMix(g.s)
	return g.s
}

// intn is uniform in [1, n] (sysbench --rand-type=uniform).
func (g *rand) intn(n int64) int64 { return 1 + int64(g.next()%uint64(n)) }
