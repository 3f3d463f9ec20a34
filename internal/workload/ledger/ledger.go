// Package ledger is the workload of seed 000: a blockchain node choosing
// its store. At each ladder size N it inserts a chain of N transactions,
// selects single transactions from the database of N, and at the largest N
// selects whole chains, stresses the store with random reads and writes at
// a fixed rate (open loop), and reads balances from a view. Every read is
// compared byte for byte with what was written.
package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"storebench/internal/workload/gen"

	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload"
	"storebench/internal/workload/layout"
)

func init() { workload.Register(Ledger{}) }

// Params are the workload's study parameters (see studies/ledger.yaml).
type Params struct {
	Payload study.Bytes `yaml:"payload" json:"payload" range:"0..16MiB"`
	Batch   int         `yaml:"batch" json:"batch" range:"1..100000"`
	Selects study.Count `yaml:"selects" json:"selects" range:"0..1e9"`
	// Budget bounds each measured phase (0: none). A phase that reaches
	// it stops there, between operations (a chain read, between its
	// transactions), and its step says how far it got and at what rate
	// (Facts["cut"]): an engine that would take hours still lets the
	// study finish, its rate measured.
	Budget study.Duration `yaml:"budget" json:"budget" range:"0s..1000h"`
	// WithinLadder cuts the sizes that stand apart from the ladder (chain
	// lengths, the balance view) to its largest step, so that --ladder
	// scales the whole study down.
	WithinLadder bool `yaml:"within_ladder" json:"within_ladder"`
	Chains       struct {
		Lengths []study.Count `yaml:"lengths" json:"lengths" range:"1..1e9"`
		Samples int           `yaml:"samples" json:"samples" range:"0..100"`
		// Select is how a chain is read: "index", the chain index every
		// layout here keeps (one ordered scan or query by genesis), or
		// "walk", the seed's: from the chain's last transaction back to
		// its genesis, each one's prev address naming the next point
		// select (seed 000's LevelDB took 2.28 s for 10 txns at 1e8, its
		// select one 0.21 s: one select per transaction).
		Select string `yaml:"select" json:"select"`
		// Index is whether inserts write the chain index (default true).
		// false writes each transaction by its address only, as seed
		// 000's engines stored them: insert times then hold no index
		// writes. It needs select walk (the index select reads through
		// the index) and no background scan.
		Index bool `yaml:"index" json:"index"`
	} `yaml:"chains" json:"chains"`
	Stress struct {
		Duration     study.Duration `yaml:"duration" json:"duration" range:"0s..24h"`
		Rate         float64        `yaml:"rate" json:"rate" range:"0..1e8"`
		ReadFraction float64        `yaml:"read_fraction" json:"read_fraction" range:"0..1"`
		// Goroutines is how many load goroutines run the stress (0: the
		// step's concurrency). A study file may give it by its old name,
		// stress.workers ("worker" is a worker process only).
		Goroutines int `yaml:"goroutines" json:"goroutines" range:"0..4096"`
		// Background, if set, runs a job beside the load (see
		// backgroundTask), timed on its own.
		Background *Background `yaml:"background" json:"background,omitempty"`
	} `yaml:"stress" json:"stress"`
	Balance struct {
		Addresses study.Count `yaml:"addresses" json:"addresses" range:"0..1e9"`
		Reads     study.Count `yaml:"reads" json:"reads" range:"0..1e9"`
	} `yaml:"balance" json:"balance"`
	// Estimate is what one transaction costs, for the estimate a run
	// under --scale is checked against before anything starts (see
	// estimate.go): a seed's own figures, say, with where they come from.
	Estimate struct {
		// TxnTime is the time to insert one transaction (0: unknown, the
		// estimate is of disk only).
		TxnTime study.Duration `yaml:"txn_time" json:"txn_time" range:"0s..1h"`
		// TxnDisk is the disk one stored transaction takes (0: twice its
		// bytes).
		TxnDisk study.Bytes `yaml:"txn_disk" json:"txn_disk" range:"0..1GiB"`
		Source  string      `yaml:"source" json:"source"`
	} `yaml:"estimate" json:"estimate"`
}

func defaults() Params {
	var p Params
	p.Payload = 1024
	p.Batch = 100
	p.Selects = 1000
	p.Chains.Lengths = []study.Count{10, 100, 1000, 10000}
	p.Chains.Samples = 3
	p.Chains.Select = selectIndex
	p.Chains.Index = true
	p.Stress.Duration = study.Duration(10 * time.Second)
	p.Stress.Rate = 2000
	p.Stress.ReadFraction = 0.5
	p.Balance.Addresses = 1_000_000
	p.Balance.Reads = 10000
	return p
}

// Ledger implements workload.Workload.
type Ledger struct{}

func (Ledger) Name() string { return "ledger" }
func (Ledger) Describe() string {
	return "transaction chains of a blockchain node (seed 000): insert, select one, select chains, open-loop stress, balance view"
}

func (Ledger) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := defaults()
	const path = "workloads.ledger.params"
	params, err := study.DeprecatedKey(s.File, e.Params, path, "stress.workers", "stress.goroutines")
	if err != nil {
		return nil, err
	}
	if err := study.DecodeParams(s.File, params, path, &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		line := study.FieldLine(params, field)
		return &study.Error{File: s.File, Line: line, Field: "workloads.ledger.params." + field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.Payload > 16<<20:
		return nil, bad("payload", "%d bytes: at most 16MiB per transaction", p.Payload)
	case p.Batch < 1 || p.Batch > 100000:
		return nil, bad("batch", "%d: want 1..100000 transactions per write batch", p.Batch)
	case p.Chains.Samples < 0 || p.Chains.Samples > 100:
		return nil, bad("chains.samples", "%d: want 0..100", p.Chains.Samples)
	case p.Chains.Select != selectIndex && p.Chains.Select != selectWalk:
		return nil, bad("chains.select", "%q: want index (the chain index) or walk (the seed's: prev to prev, one select each)", p.Chains.Select)
	case !p.Chains.Index && p.Chains.Select == selectIndex:
		return nil, bad("chains.index", "false with chains.select index: the index select reads the chain index; want chains.select walk, or chains.index true")
	case p.Stress.Rate < 0:
		return nil, bad("stress.rate", "must not be negative (0 runs the stress closed-loop)")
	case p.Stress.ReadFraction < 0 || p.Stress.ReadFraction > 1:
		return nil, bad("stress.read_fraction", "%v: want a fraction between 0 and 1", p.Stress.ReadFraction)
	case p.Stress.Goroutines < 0:
		return nil, bad("stress.goroutines", "must not be negative")
	}
	if b := p.Stress.Background; b != nil {
		switch {
		case !validTask(b.Task):
			return nil, bad("stress.background.task", "%q: want one of %s", b.Task, taskNames)
		case b.Task == "scan" && !p.Chains.Index:
			return nil, bad("stress.background.task", "scan reads the chain index, which chains.index false does not write")
		case b.Every < 0:
			return nil, bad("stress.background.every", "must not be negative (0 runs the task back to back)")
		}
	}
	return json.Marshal(p)
}

// How chains are read (Params.Chains.Select).
const (
	selectIndex = "index"
	selectWalk  = "walk"
)

// requires is what every ledger phase needs of a target: transactions
// written and read one by one, each chain listed in order by its genesis
// address, and a view of balances.
var requires = target.Caps{target.KeyValue, target.Secondary}

func (Ledger) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	largest := s.Largest()
	var steps []workload.Step
	add := func(phase string, n int64, fresh bool) {
		st := workload.Step{Workload: "ledger", Phase: phase, N: n, Fresh: fresh,
			Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: largest, Requires: Layouts.Needs().All}
		if fresh {
			st.ItemBytes = headerLen + int64(p.Payload)
		}
		steps = append(steps, st)
	}
	for _, c := range s.Ladder {
		n := int64(c)
		add("insert", n, true)
		if p.Selects > 0 {
			add("select", n, false)
		}
	}
	if p.Chains.Samples > 0 {
		for _, l := range p.Chains.Lengths {
			if p.WithinLadder && int64(l) > largest {
				continue
			}
			// The chain length is part of the step's identity.
			steps = append(steps, workload.Step{Workload: "ledger", Phase: "chain", N: largest, Seed: s.Seed,
				Adds:        int64(p.Chains.Samples) * int64(l), // the sample chains
				Concurrency: s.Concurrency, Params: chainParams(raw, int64(l)), Largest: largest, Requires: Layouts.Needs().All,
				Labels: results.Labels{LLength: strconv.FormatInt(int64(l), 10)}})
		}
	}
	if p.Stress.Duration > 0 {
		add("stress", largest, false)
		// The stress runs open loop at the step's rate (a rate search
		// changes it) with the step's concurrency (a sweep changes it).
		st := &steps[len(steps)-1]
		st.OpenLoop, st.Rate = true, p.Stress.Rate
		if p.Stress.Goroutines > 0 {
			st.Concurrency = p.Stress.Goroutines
		}
		// A compaction beside the load needs a target that has one of its
		// own: elsewhere the stress is n/a, with that reason.
		if b := p.Stress.Background; b != nil && b.Task == "compact" {
			st.Requires = append(slices.Clip(Layouts.Needs().All), target.Compaction)
		}
	}
	if p.Balance.Addresses > 0 && p.Balance.Reads > 0 {
		add("balance", largest, false)
		steps[len(steps)-1].Adds = viewSize(p, largest)
	}
	return steps, nil
}

// viewSize is the addresses of the balance view: balance.addresses, cut
// to the largest ladder step under within_ladder.
func viewSize(p Params, largest int64) int64 {
	if p.WithinLadder {
		return min(int64(p.Balance.Addresses), largest)
	}
	return int64(p.Balance.Addresses)
}

// chainParams adds the chain length of a "chain" step to its params.
func chainParams(raw json.RawMessage, length int64) json.RawMessage {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["chain_length"] = length
	b, _ := json.Marshal(m)
	return b
}

func (Ledger) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, fmt.Errorf("ledger: bad step params: %w", err)
	}
	r := &run{env: env, st: st, p: p, g: txGen{seed: uint64(st.Seed), payload: int(p.Payload)}}
	var ok bool
	if r.store, r.kv, ok = StoreOf(env.Target); !ok {
		return nil, fmt.Errorf("ledger: target offers neither a ledger layout nor a key-value store")
	}
	if !p.Chains.Index {
		if r.store, ok = withoutChainIndex(r.store); !ok {
			return nil, fmt.Errorf("ledger: chains.index false: this target's ledger layout always writes its chain index")
		}
	}
	// A layout that makes its tables does so before the step is measured.
	if err := Prepare(ctx, r.store); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var res *results.Step
	var err error
	switch st.Phase {
	case "insert":
		res, err = r.insert(ctx)
		workload.SetItemBytes(res, float64(txBytes(p)))
		return res, err
	case "select":
		res, err = r.selectOne(ctx)
	case "chain":
		var x struct {
			ChainLength int64 `json:"chain_length"`
		}
		_ = json.Unmarshal(st.Params, &x)
		res, err = r.chain(ctx, x.ChainLength)
	case "stress":
		res, err = r.stress(ctx)
	case "balance":
		res, err = r.balance(ctx)
	default:
		return nil, fmt.Errorf("ledger: unknown phase %q", st.Phase)
	}
	if n := stored(env.Target, st.N); res != nil && n < st.N {
		// The insert at this size stopped at the budget: the database
		// is smaller than the step's N says.
		if res.Facts == nil {
			res.Facts = map[string]string{}
		}
		res.Facts["cut_db"] = fmt.Sprintf("the database holds %s of its %s txns: the insert stopped at the phase budget", study.FormatCount(n), study.FormatCount(st.N))
	}
	workload.SetItemBytes(res, float64(txBytes(p)))
	return res, err
}

// txBytes is one transaction as the workload writes it: its key (txKey:
// the prefix and its address) and its encoding (txGen.encode: the header
// and the payload), every transaction the same size. The chain index
// entry a layout writes beside it is not counted.
func txBytes(p Params) int64 { return txKeyLen + headerLen + int64(p.Payload) }

// Layouts are the ledger layouts, in order of preference: the target's
// own (a Store), this package's on what the target offers (layout_*.go:
// RESP, CQL, MongoDB, Aerospike, SQL in the dialects it has statements
// for), or the layout on an ordered key-value store. Each provides what
// the ledger's steps require: records one by one and chains in order.
var Layouts = layout.NewTable("ledger", layout.Needs{All: requires},
	layout.Layout[Store]{Name: "own", On: "the target's own ledger store (ledger.Store)",
		Open: func(h any) (Store, bool) { s, ok := h.(Store); return s, ok }, Provides: provides},
	layout.Layout[Store]{Name: "resp", On: "a RESP client (conn.RESP)", Provides: provides,
		Open: func(h any) (Store, bool) {
			c, ok := h.(conn.RESP)
			if !ok {
				return nil, false
			}
			return respStore{c: c.RESPClient()}, true
		}},
	layout.Layout[Store]{Name: "cql", On: "a CQL session (conn.CQL)", Open: opener(cqlStoreOf), Provides: provides},
	layout.Layout[Store]{Name: "mongo", On: "a MongoDB database (conn.Mongo)", Open: opener(mongoStoreOf), Provides: provides},
	layout.Layout[Store]{Name: "aerospike", On: "an Aerospike client (conn.Aerospike)", Open: opener(aerospikeStoreOf), Provides: provides},
	layout.Layout[Store]{Name: "sql", On: "MariaDB/MySQL or PostgreSQL (target.SQLDB)", Provides: provides,
		Open: func(h any) (Store, bool) {
			db, ok := h.(target.SQLDB)
			if !ok || !sqlLedger(db.SQLDialect()) {
				return nil, false
			}
			return sqlStoreOf(db), true
		}},
	layout.Layout[Store]{Name: "kv", On: "an ordered key-value store (kv.Store)", Provides: provides,
		Open: func(h any) (Store, bool) {
			s, ok := h.(kv.Store)
			if !ok {
				return nil, false
			}
			return KVStore{KV: s}, true
		}},
)

// provides is what every ledger layout gives: the capabilities its
// steps require.
func provides(Store) target.Caps { return requires }

// opener is a layout's Open from the function that makes this package's
// store on primitive P.
func opener[P any, S Store](of func(P) S) func(h any) (Store, bool) {
	return func(h any) (Store, bool) {
		p, ok := h.(P)
		if !ok {
			return nil, false
		}
		return of(p), true
	}
}

// StoreOf finds the ledger layout on a target's handle (Layouts); when it
// is the layout on an ordered key-value store, kvs is the store, for
// zero-copy verified reads. False when there is none.
func StoreOf(h any) (s Store, kvs kv.Store, ok bool) {
	s, l, ok := Layouts.Of(h)
	if !ok {
		return nil, nil, false
	}
	if k, isKV := s.(KVStore); isKV && l.Name == "kv" {
		return s, k.KV, true
	}
	return s, nil, true
}

// unindexer is a layout that can write transactions by address only,
// without its chain index (chains.index false): each transaction is then
// stored as seed 000's engines stored it, and Chain is not offered.
type unindexer interface {
	withoutChainIndex() Store
}

// withoutChainIndex is s writing no chain index; false when its layout
// cannot.
func withoutChainIndex(s Store) (Store, bool) {
	if u, ok := s.(unindexer); ok {
		return u.withoutChainIndex(), true
	}
	return nil, false
}

// errNoChainIndex is Chain on a layout that writes no chain index.
var errNoChainIndex = errors.New("chain select: this run writes no chain index (chains.index false)")

// preparer is a layout that makes its schema (once per handle) before a
// step runs. Its operations do not check: a lock or flag every operation
// read would be shared by all the load goroutines.
type preparer interface {
	prepare(ctx context.Context) error
}

// Prepare makes the tables (collections, indexes) of a layout that needs
// them, once per handle: Execute calls it before a step is measured, and
// anything else that uses a Store directly (a conformance test) calls it
// first.
func Prepare(ctx context.Context, s Store) error {
	if p, ok := s.(preparer); ok {
		return p.prepare(ctx)
	}
	return nil
}

// CanRun reports whether a target handle can run the ledger workload.
func CanRun(h any) bool {
	_, _, ok := StoreOf(h)
	return ok
}

type run struct {
	env   *workload.Env
	st    workload.Step
	p     Params
	g     txGen
	store Store
	kv    kv.Store // set for embedded engines: zero-copy verified reads
}

// insertOp writes transactions [seq*batch, (seq+1)*batch) of chain as one
// durable batch per operation, under the operation's context: a cancel
// reaches a write that waits on a server.
func (r *run) insertOp(chain uint64, count, batch int64) runner.Op {
	genesis := r.g.address(nil, chain, 0)
	txLen := headerLen + r.p.Payload
	slab := make([]byte, int(batch)*int(txLen))
	txs := make([]Tx, 0, batch)
	return func(ctx context.Context, _ int, seq int64) error {
		txs = txs[:0]
		for i := seq * batch; i < (seq+1)*batch && i < count; i++ {
			k := int(i - seq*batch)
			enc := r.g.encode(slab[k*int(txLen):(k+1)*int(txLen)], chain, uint64(i), genesis)
			tx, err := Decode(enc)
			if err != nil {
				return err
			}
			txs = append(txs, tx)
		}
		return r.store.PutTxs(ctx, txs)
	}
}

func batches(n int64, batch int) int64 { return (n + int64(batch) - 1) / int64(batch) }

// insert: (a) a chain of N transactions, timed, into a fresh database.
// Stopped at the phase budget, the database holds the first transactions
// written, and the later phases at this size read only those.
func (r *run) insert(ctx context.Context) (*results.Step, error) {
	nb := batches(r.st.N, r.p.Batch)
	res, err := workload.Measure(ctx, r.env, r.budgeted(workload.Closed(1, nb)), r.insertOp(mainChain, r.st.N, int64(r.p.Batch)))
	written := min(res.Ops*int64(r.p.Batch), r.st.N)
	res.Unit = fmt.Sprintf("write batch of %d txns", r.p.Batch)
	if !r.p.Chains.Index {
		res.Unit += unitNoIndex
	}
	res.Metrics = map[string]float64{"txns": float64(written), "txns_per_s": float64(written) / res.Seconds}
	if err == nil && written < r.st.N {
		r.cut(res, fmt.Sprintf("%s of %s txns written", study.FormatCount(written), study.FormatCount(r.st.N)), float64(written)/res.Seconds, "txns/s", false)
		// Zero written is remembered too: the phases after it must not
		// look for the N transactions that were never written.
		remember(r.env.Target, r.st.N, written)
	} else {
		forget(r.env.Target, r.st.N)
	}
	return res, err
}

// unitNoIndex ends an insert's unit when chains.index is false (the
// report names the method from it).
const unitNoIndex = ", by address only (no chain index)"

// budgeted bounds a closed-loop phase by the study's phase budget.
func (r *run) budgeted(load workload.Load) workload.Load {
	if r.p.Budget > 0 {
		load = load.For(time.Duration(r.p.Budget))
	}
	return load
}

// cut records that the phase budget stopped a step: how far it got, and
// the rate it went at; inside says an operation was itself cut short
// (its time is not a whole operation's).
func (r *run) cut(res *results.Step, got string, rate float64, unit string, inside bool) {
	if res.Facts == nil {
		res.Facts = map[string]string{}
	}
	res.Facts["cut"] = fmt.Sprintf("stopped at the phase budget of %s: %s, at %.3g %s", time.Duration(r.p.Budget), got, rate, unit)
	if inside {
		res.Facts["cut_inside_op"] = "yes"
	}
}

// written holds, per target handle and ladder size, how many transactions
// of the main chain an insert stopped by the budget wrote, so that the
// phases after it at that size read only those. It is read and written
// once per step, never on an operation's path.
var written sync.Map // writtenKey -> int64

type writtenKey struct {
	h any
	n int64
}

// remember records that the insert of n on h was cut at count (0 too).
func remember(h any, n, count int64) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return
	}
	written.Store(writtenKey{h, n}, count)
}

// forget records that the insert of n on h wrote all n.
func forget(h any, n int64) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return
	}
	written.Delete(writtenKey{h, n})
}

// nothingWritten is the step of a phase that reads the main chain when
// the insert at its size wrote none of it: not run, and why (no
// transaction to look for, none can be found missing).
func (r *run) nothingWritten(unit, what string) *results.Step {
	return &results.Step{Unit: unit, Facts: map[string]string{
		"cut": fmt.Sprintf("not run: the insert phase wrote 0 transactions before its budget (%s) ran out: nothing to %s", time.Duration(r.p.Budget), what),
	}}
}

// stored is how many transactions of the main chain the database of n
// holds: n, or fewer where the insert was stopped by the budget.
func stored(h any, n int64) int64 {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return n
	}
	if v, ok := written.Load(writtenKey{h, n}); ok {
		return v.(int64)
	}
	return n
}

// readBufs are the buffers one reading goroutine reuses across checkTx
// calls, so that a verified read allocates nothing: key holds the key
// read (or the transaction read, re-encoded), want what was written.
type readBufs struct {
	key, want []byte
}

// checkTx reads transaction (chain, index) and compares it with what was
// written, byte for byte, in the caller's buffers b.
func (r *run) checkTx(ctx context.Context, phase string, chain, index uint64, genesis []byte, b *readBufs) error {
	b.want = r.g.encode(b.want, chain, index, genesis)
	addr := b.want[0:32]
	if r.kv != nil {
		// Embedded engine: compare in place, without copying the value out.
		b.key = txKey(b.key, addr)
		err := kv.View(r.kv, b.key, func(v []byte) error {
			if !bytes.Equal(v, b.want) {
				return &workload.VerifyError{Phase: phase, Key: addr, What: fmt.Sprintf("value differs from what was written (%d bytes read, %d written)", len(v), len(b.want))}
			}
			return nil
		})
		return missing(err, phase, addr, chain, index)
	}
	tx, err := r.store.GetTx(ctx, addr)
	if err != nil {
		return missing(err, phase, addr, chain, index)
	}
	b.key = Encode(b.key, tx)
	if !bytes.Equal(b.key, b.want) {
		return &workload.VerifyError{Phase: phase, Key: addr, What: "transaction differs from what was written"}
	}
	return nil
}

func missing(err error, phase string, addr []byte, chain, index uint64) error {
	if errors.Is(err, kv.ErrNotFound) {
		return &workload.VerifyError{Phase: phase, Key: addr, What: fmt.Sprintf("transaction %d of chain %d is missing", index, chain)}
	}
	return err
}

// selectOne: (b) K random selects of one transaction by address from the
// database of N, serially like the seed (which kept the max of 5).
func (r *run) selectOne(ctx context.Context) (*results.Step, error) {
	k := int64(r.p.Selects)
	n := uint64(stored(r.env.Target, r.st.N))
	if n == 0 {
		return r.nothingWritten("select one txn by address", "select"), nil
	}
	genesis := r.g.address(nil, mainChain, 0)
	var bufs readBufs
	res, err := workload.Measure(ctx, r.env, r.budgeted(workload.Closed(1, k)), func(ctx context.Context, _ int, seq int64) error {
		i := gen.Mix(uint64(r.st.Seed), 1, uint64(seq)) % n
		return r.checkTx(ctx, "select", mainChain, i, genesis, &bufs)
	})
	res.Unit = "select one txn by address"
	res.Verify = results.Verify{Checked: res.Ops}
	if err == nil && res.Ops < k {
		r.cut(res, fmt.Sprintf("%d of %d selects", res.Ops, k), float64(res.Ops)/res.Seconds, "selects/s", false)
	}
	return res, err
}

// chain: (c) select whole chains of a given length by genesis address, in
// order (chains.select index), or from the last transaction back to the
// genesis by prev addresses (walk, the seed's). The sample chains are
// written first, untimed and reported apart, in batches of at least
// setupBatch: how they are written is not what this phase measures.
func (r *run) chain(ctx context.Context, length int64) (*results.Step, error) {
	setupStart := time.Now()
	// Sample chains live in their own id space: 1<<32 | length<<8 | sample.
	base := uint64(1)<<32 | uint64(length)<<8
	held, setupCut, err := r.writeSamples(ctx, base, length)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return &results.Step{Partial: true}, nil
	}
	setup := time.Since(setupStart).Seconds()
	// The chains read are those the setup wrote, each as far as it got.
	samples := 0
	for samples < len(held) && held[samples] > 0 {
		samples++
	}
	if samples == 0 {
		return &results.Step{Unit: fmt.Sprintf("walk a chain of %d txns", length), Facts: map[string]string{
			"cut": fmt.Sprintf("not run: the phase budget (%s) ran out before a sample chain was written", time.Duration(r.p.Budget)),
		}}, nil
	}
	// The budget stops the phase between chains (the runner) and inside
	// one (a chain of 1e5 point selects on an engine that scans per select
	// would take hours): the deadline is checked before each transaction.
	c := &chainRead{r: r, stoppedAt: -1}
	if r.p.Budget > 0 {
		c.deadline = time.Now().Add(time.Duration(r.p.Budget))
	}
	res, err := workload.Measure(ctx, r.env, r.budgeted(workload.Closed(1, int64(samples))), func(ctx context.Context, _ int, seq int64) error {
		if c.stoppedAt >= 0 {
			return nil // past the budget: the runner stops at its next check
		}
		chain := base + uint64(seq)
		genesis := r.g.address(nil, chain, 0)
		if r.p.Chains.Select == selectWalk {
			return c.walk(ctx, chain, genesis, held[seq])
		}
		return c.scan(ctx, chain, genesis, held[seq])
	})
	read, whole, stoppedAt := c.read, c.whole, c.stoppedAt
	res.Unit = fmt.Sprintf("select a chain of %d txns", length)
	if r.p.Chains.Select == selectWalk {
		res.Unit = fmt.Sprintf("walk a chain of %d txns", length)
	}
	res.Verify = results.Verify{Checked: read}
	res.Metrics = map[string]float64{"length": float64(length), "setup_seconds": setup}
	if err == nil && (stoppedAt >= 0 || whole < int64(samples)) {
		got := fmt.Sprintf("%d of %d chains read whole", whole, samples)
		if stoppedAt >= 0 {
			got = fmt.Sprintf("%d of %d chains read whole, the next stopped after %s of its %s txns", whole, samples,
				study.FormatCount(stoppedAt), study.FormatCount(length))
		}
		r.cut(res, got, float64(read)/res.Seconds, "txns read/s", stoppedAt >= 0)
	}
	if setupCut {
		r.cutSamples(res, held, length)
	}
	return res, err
}

// chainRead is what a chain phase's reads keep across its operations,
// which one goroutine runs: the deadline of the phase budget, the counts
// the step reports, and the buffers every read reuses.
type chainRead struct {
	r        *run
	deadline time.Time // zero: no budget
	// Transactions read, chains read whole, and where the chain the
	// budget stopped inside was (-1: none).
	read, whole, stoppedAt int64
	bufs                   readBufs
	got                    []byte
}

// walk reads a chain of held transactions the seed's way (chains.select
// walk): the last transaction's prev address names the one before it,
// and so on to the genesis.
func (c *chainRead) walk(ctx context.Context, chain uint64, genesis []byte, held int64) error {
	// Each read is checked whole against what was written, its prev
	// address included, so reading (chain, i-1) next is following that
	// address.
	for i := held - 1; i >= 0; i-- {
		if !c.deadline.IsZero() && time.Now().After(c.deadline) {
			c.stoppedAt = held - 1 - i
			return nil
		}
		if err := c.r.checkTx(ctx, "chain", chain, uint64(i), genesis, &c.bufs); err != nil {
			return err
		}
		c.read++
	}
	c.whole++
	return nil
}

// scan reads a chain of held transactions through the layout's chain
// index (chains.select index), in order, each checked against what was
// written and the whole checked to hold all held.
func (c *chainRead) scan(ctx context.Context, chain uint64, genesis []byte, held int64) error {
	var next uint64
	var failure error
	err := c.r.store.Chain(ctx, genesis, func(tx Tx) bool {
		if !c.deadline.IsZero() && time.Now().After(c.deadline) {
			c.stoppedAt = int64(next)
			return false
		}
		if tx.Index != next {
			failure = &workload.VerifyError{Phase: "chain", Key: tx.Address, What: fmt.Sprintf("chain out of order: index %d where %d was expected", tx.Index, next)}
			return false
		}
		c.bufs.want = c.r.g.encode(c.bufs.want, chain, next, genesis)
		c.got = Encode(c.got, tx)
		if !bytes.Equal(c.got, c.bufs.want) {
			failure = &workload.VerifyError{Phase: "chain", Key: tx.Address, What: fmt.Sprintf("transaction %d of the chain differs from what was written", next)}
			return false
		}
		next++
		c.read++
		return true
	})
	if err == nil {
		err = failure
	}
	if err == nil && c.stoppedAt < 0 && int64(next) != held {
		err = &workload.VerifyError{Phase: "chain", Key: genesis, What: fmt.Sprintf("chain has %d transactions, %d were written", next, held)}
	}
	if err == nil && c.stoppedAt < 0 {
		c.whole++
	}
	return err
}

// writeSamples writes a chain phase's sample chains of length, untimed,
// and returns how many transactions each holds. The phase budget bounds
// it too (cut): five chains of 1e6 on an engine that inserts 1,500 txns/s
// would take most of an hour before a read. Interrupted (ctx), it returns
// what it wrote.
func (r *run) writeSamples(ctx context.Context, base uint64, length int64) (held []int64, cut bool, err error) {
	batch := max(int64(r.p.Batch), setupBatch)
	var deadline time.Time
	if r.p.Budget > 0 {
		deadline = time.Now().Add(time.Duration(r.p.Budget))
	}
	held = make([]int64, r.p.Chains.Samples)
	for s := range held {
		op := r.insertOp(base+uint64(s), length, batch)
		for b := int64(0); b < batches(length, int(batch)); b++ {
			if ctx.Err() != nil {
				return held, false, nil
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				return held, true, nil
			}
			if err := op(ctx, 0, b); err != nil {
				return held, false, fmt.Errorf("writing sample chain of %d: %w", length, err)
			}
			held[s] = min(length, (b+1)*batch)
		}
	}
	return held, false, nil
}

// cutSamples records that the phase budget stopped the writing of the
// sample chains: the chains read are shorter, or fewer, than the phase's
// (cut_db: the step stands for no chain of its length).
func (r *run) cutSamples(res *results.Step, held []int64, length int64) {
	var got int64
	for _, h := range held {
		got += h
	}
	if res.Facts == nil {
		res.Facts = map[string]string{}
	}
	res.Facts["cut_db"] = fmt.Sprintf("the sample chains hold %s of their %d × %s txns: writing them stopped at the phase budget of %s",
		study.FormatCount(got), len(held), study.FormatCount(length), time.Duration(r.p.Budget))
}

// setupBatch is the least batch a chain phase writes its sample chains in.
const setupBatch = 1000

// stress: (e) concurrent random selects and random writes at a fixed total
// rate for a duration: the open loop, so queueing shows as latency. In
// open loop the reads and the writes are two streams, each at its share of
// the rate (read_fraction × rate, and the rest) on its share of the
// goroutines, with its own histograms: a write stalled on an fsync does not
// delay the reads scheduled behind it on the same goroutine. Closed loop
// (rate 0) cannot hold a fraction with two streams that each go as fast as
// they can, so it stays one stream that mixes both, classed READ and
// WRITE. A background task (stress.background) runs beside either.
func (r *run) stress(ctx context.Context) (*results.Step, error) {
	goroutines := max(r.st.Concurrency, 1)
	n := uint64(stored(r.env.Target, r.st.N))
	frac := r.p.Stress.ReadFraction
	if n == 0 && frac > 0 {
		// Its reads would look for transactions never written.
		return r.nothingWritten("random select or txn write", "stress"), nil
	}
	o := &stressOps{r: r, seed: uint64(r.st.Seed), n: n,
		mainGenesis: r.g.address(nil, mainChain, 0), threshold: uint64(frac * float64(1<<53))}
	rate := r.st.Rate
	// A sweep's level or a rate search's trial carries its own duration.
	dur := time.Duration(r.p.Stress.Duration)
	if r.st.Duration > 0 {
		dur = r.st.Duration
	}
	load := workload.Load{Duration: dur, Total: int64(rate * dur.Seconds())}
	var op runner.Op
	// One goroutine cannot be two streams: at concurrency 1 the reads and
	// writes share one mixed stream (at the whole rate, when there is
	// one), as in closed loop.
	mixed := rate <= 0 || (frac > 0 && frac < 1 && goroutines < 2)
	if mixed {
		load, op = o.mixed(load, goroutines, rate)
	} else {
		load = o.streams(load, goroutines, rate, frac)
	}
	if b := r.p.Stress.Background; b != nil {
		task, err := r.backgroundTask(b)
		if err != nil {
			return nil, err
		}
		load = load.Beside(task)
	}
	res, err := workload.Measure(ctx, r.env, load, op)
	reads, writes := stressCounts(res, mixed)
	res.Unit = "random select or txn write"
	res.Verify = results.Verify{Checked: reads}
	res.Metrics = map[string]float64{"reads": float64(reads), "writes": float64(writes), "goroutines": float64(goroutines)}
	return res, err
}

// stressGoroutine is what one stress goroutine reuses from one operation to
// the next, so that an operation allocates nothing: its read buffers, and
// the chain it writes, with the next transaction's index.
type stressGoroutine struct {
	readBufs
	buf     []byte
	one     [1]Tx
	next    uint64
	genesis []byte
}

// stressOps are the stress phase's two operations, a verified random read
// of the main chain's n transactions and a write to a chain of the
// writer's own, and the draw that classes an operation of the mixed
// stream.
type stressOps struct {
	r           *run
	seed, n     uint64
	mainGenesis []byte
	// threshold is read_fraction of 2^53: an operation whose draw falls
	// below it is a read.
	threshold uint64
}

// isRead draws the mixed stream's class of operation seq.
func (o *stressOps) isRead(seq int64) bool {
	return gen.Mix(o.seed, 2, uint64(seq))>>11 < o.threshold
}

// states is the state of k goroutines, each with the genesis of its chain.
func (o *stressOps) states(k int) []stressGoroutine {
	ws := make([]stressGoroutine, k)
	for w := range ws {
		ws[w].genesis = o.r.g.address(nil, stressChain(o.r.st, w), 0)
	}
	return ws
}

func (o *stressOps) read(ctx context.Context, s *stressGoroutine, seq int64) error {
	// Which transaction to read is drawn apart from the class draw, so
	// the reads of the read stream cover the chain the same way.
	i := gen.Mix(o.seed, 4, uint64(seq)) % o.n
	return o.r.checkTx(ctx, "stress", mainChain, i, o.mainGenesis, &s.readBufs)
}

func (o *stressOps) write(ctx context.Context, s *stressGoroutine, w int) error {
	chain := stressChain(o.r.st, w)
	s.buf = o.r.g.encode(s.buf, chain, s.next, s.genesis)
	s.next++
	tx, err := Decode(s.buf)
	if err != nil {
		return err
	}
	s.one[0] = tx
	return o.r.store.PutTxs(ctx, s.one[:])
}

// mixed is the load of one stream that mixes reads and writes on all the
// goroutines, classed READ and WRITE, at rate (closed loop when it is 0),
// and its operation.
func (o *stressOps) mixed(load workload.Load, goroutines int, rate float64) (workload.Load, runner.Op) {
	ws := o.states(goroutines)
	load = load.On(goroutines).At(max(rate, 0)).Classed([]string{"READ", "WRITE"}, func(seq int64) int {
		if o.isRead(seq) {
			return 0
		}
		return 1
	})
	return load, func(ctx context.Context, w int, seq int64) error {
		if o.isRead(seq) {
			return o.read(ctx, &ws[w], seq)
		}
		return o.write(ctx, &ws[w], w)
	}
}

// streams is load with a read stream and a write stream, each at its
// share frac (and the rest) of rate on its share of the goroutines; a share
// of 0 has no stream.
func (o *stressOps) streams(load workload.Load, goroutines int, rate, frac float64) workload.Load {
	// Goroutines split in proportion to the rates, at least one a stream.
	readW := int(frac*float64(goroutines) + 0.5)
	switch {
	case frac == 0:
		readW = 0
	case frac == 1:
		readW = goroutines
	case readW < 1:
		readW = 1
	case readW >= goroutines:
		readW = goroutines - 1
	}
	writeW := goroutines - readW
	if frac > 0 && frac < 1 && writeW < 1 {
		writeW = 1
	}
	if frac > 0 {
		rs := o.states(readW)
		load.Streams = append(load.Streams, runner.Stream{Name: "read", Goroutines: readW, Rate: rate * frac,
			Op: func(ctx context.Context, w int, seq int64) error { return o.read(ctx, &rs[w], seq) }})
	}
	if frac < 1 {
		wrs := o.states(writeW)
		load.Streams = append(load.Streams, runner.Stream{Name: "write", Goroutines: writeW, Rate: rate * (1 - frac),
			Op: func(ctx context.Context, w int, seq int64) error { return o.write(ctx, &wrs[w], w) }})
	}
	return load
}

// stressCounts is the reads and the writes a stress step did: by class
// in the mixed stream, by stream otherwise.
func stressCounts(res *results.Step, mixed bool) (reads, writes int64) {
	if mixed {
		reads, writes = res.ByOp["READ"].Count, res.ByOp["WRITE"].Count
	}
	for _, s := range res.Streams {
		switch s.Name {
		case "read":
			reads = s.Ops
		case "write":
			writes = s.Ops
		}
	}
	return reads, writes
}

// stressChain is the chain writer w of a stress step writes. A sweep's
// levels and a rate search's trials run the stress again on the same
// data: each writes chains of its own (from its labels), so that it
// inserts new transactions rather than rewriting an earlier step's.
func stressChain(st workload.Step, w int) uint64 {
	c, t := st.Labels.Int(results.LConcurrency), st.Labels.Int(results.LTrial)
	if c == 0 && t == 0 {
		return stressChain0 + uint64(w)
	}
	// Levels ≤ 4096 and writer goroutines < 8192 take 13 bits each, trials 6.
	return 2<<32 | uint64(t&63)<<26 | uint64(c&8191)<<13 | uint64(w&8191)
}

// balance: (f) build a view of M address balances, then read K random
// balances from it, each checked.
func (r *run) balance(ctx context.Context) (*results.Step, error) {
	m := viewSize(r.p, r.st.Largest)
	seed := uint64(r.st.Seed)
	const per = 10000 // view rows per durable batch
	buildStart := time.Now()
	addrs := make([][]byte, 0, per)
	amounts := make([]uint64, 0, per)
	slab := make([]byte, per*32)
	for b := int64(0); b*per < m; b++ {
		if ctx.Err() != nil {
			return &results.Step{Partial: true}, nil
		}
		addrs, amounts = addrs[:0], amounts[:0]
		for i := b * per; i < (b+1)*per && i < m; i++ {
			k := int(i - b*per)
			addrs = append(addrs, r.g.address(slab[k*32:k*32:(k+1)*32], balanceChain, uint64(i)))
			amounts = append(amounts, balanceOf(seed, uint64(i)))
		}
		if err := r.store.PutBalances(ctx, addrs, amounts); err != nil {
			return nil, fmt.Errorf("building the balance view: %w", err)
		}
		if r.env.Progress != nil {
			r.env.Progress(b*per, m)
		}
	}
	build := time.Since(buildStart).Seconds()
	k := int64(r.p.Balance.Reads)
	var addr []byte
	res, err := workload.Measure(ctx, r.env, r.budgeted(workload.Closed(1, k)), func(ctx context.Context, _ int, seq int64) error {
		i := gen.Mix(seed, 3, uint64(seq)) % uint64(m)
		addr = r.g.address(addr, balanceChain, i)
		got, err := r.store.GetBalance(ctx, addr)
		if errors.Is(err, kv.ErrNotFound) {
			return &workload.VerifyError{Phase: "balance", Key: addr, What: "address missing from the view"}
		}
		if err != nil {
			return err
		}
		if want := balanceOf(seed, i); got != want {
			return &workload.VerifyError{Phase: "balance", Key: addr, What: fmt.Sprintf("balance %d, %d was written", got, want)}
		}
		return nil
	})
	res.Unit = "get balance of one address"
	res.Verify = results.Verify{Checked: res.Ops}
	res.Metrics = map[string]float64{"view_addresses": float64(m), "build_seconds": build}
	if err == nil && res.Ops < k {
		r.cut(res, fmt.Sprintf("%d of %d balance reads", res.Ops, k), float64(res.Ops)/res.Seconds, "reads/s", false)
	}
	return res, err
}
