package documents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"storebench/internal/results"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload"
	"storebench/internal/workload/gen"
	"storebench/internal/workload/layout"
)

func init() { workload.Register(Documents{}) }

// The modes, as the tool names them (lower case); prepare creates the
// collections and the index and loads the ladder's documents.
const (
	PhasePrepare = "prepare"
	ModeInsert   = "insert"
	ModeIterate  = "iterate_one"
	ModeUpdate   = "update_one"
	ModeDelete   = "delete_one"
)

var modeOrder = []string{ModeInsert, ModeIterate, ModeUpdate, ModeDelete}

// Params of the documents workload. The ladder is the number of
// documents each collection holds after prepare.
type Params struct {
	// Modes run in order after prepare, each with the study's threads
	// (or a sweep's).
	Modes []string `yaml:"modes" json:"modes"`
	// Collections: perf1 … perfN (the seed had 3).
	Collections int `yaml:"collections" json:"collections" range:"1..100"`
	// Operations bounds each mode (the tool's -o; 0: duration alone).
	Operations study.Count `yaml:"operations" json:"operations" range:"0..1e12"`
	// Duration bounds each mode (the tool's -d; 0: operations alone).
	// With both, whichever comes first ends the mode, as in the tool.
	Duration study.Duration `yaml:"duration" json:"duration" range:"0s..24h"`
	// TextSize is the length of the random text field rndTxt (the tool's
	// -s; 0: absent, its default).
	TextSize int `yaml:"text_size" json:"text_size" range:"0..1048576"`
	// Batch is the number of documents per insert of the load.
	Batch int `yaml:"batch" json:"batch" range:"1..100000"`
}

func defaults() Params {
	return Params{Modes: append([]string(nil), modeOrder...), Collections: 3, Operations: 100000,
		Duration: study.Duration(20 * time.Second), Batch: 1000}
}

// Documents implements workload.Workload.
type Documents struct{}

func (Documents) Name() string { return "documents" }
func (Documents) Describe() string {
	return "mongodb-performance-test modes (insert, iterate_one, update_one, delete_one by the indexed _id) on N collections of documents"
}

func (Documents) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := defaults()
	if err := study.DecodeParams(s.File, e.Params, "workloads.documents.params", &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads.documents.params." + field, Msg: fmt.Sprintf(format, args...)}
	}
	seen := map[string]bool{}
	for _, m := range p.Modes {
		known := false
		for _, k := range modeOrder {
			known = known || k == m
		}
		if !known {
			return nil, bad("modes", "%q: the modes are insert, iterate_one, update_one, delete_one", m)
		}
		if seen[m] {
			return nil, bad("modes", "%q is listed twice", m)
		}
		seen[m] = true
	}
	switch {
	case len(p.Modes) == 0:
		return nil, bad("modes", "name at least one mode")
	case p.Collections < 1 || p.Collections > 100:
		return nil, bad("collections", "%d: want 1..100", p.Collections)
	case p.Operations < 0:
		return nil, bad("operations", "must not be negative")
	case p.Duration < 0:
		return nil, bad("duration", "must not be negative")
	case p.Operations == 0 && p.Duration == 0:
		return nil, bad("operations", "operations and duration are both 0: a mode would never end")
	case p.TextSize < 0 || p.TextSize > 1<<20:
		return nil, bad("text_size", "%d: want 0..1MiB", p.TextSize)
	case p.Batch < 1 || p.Batch > 100000:
		return nil, bad("batch", "%d: want 1..100000", p.Batch)
	}
	return json.Marshal(p)
}

// Requires is what every step needs of a target.
var Requires = target.Caps{target.DocumentStore}

func (Documents) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	// A document's raw bytes: six fields of 8 bytes or less, the text.
	item := int64(48 + p.TextSize)
	var steps []workload.Step
	for _, n := range s.Ladder {
		steps = append(steps, workload.Step{Workload: "documents", Phase: PhasePrepare, N: int64(n), Fresh: true, Seed: s.Seed,
			Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(), Requires: Layouts.Needs().All, ItemBytes: item * int64(p.Collections)})
		for _, m := range p.Modes {
			steps = append(steps, workload.Step{Workload: "documents", Phase: m, N: int64(n), Seed: s.Seed,
				Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(), Requires: Layouts.Needs().All})
		}
	}
	return steps, nil
}

// Collection names collection c (0-based): perf1, perf2, …
func Collection(c int) string { return "perf" + strconv.Itoa(c+1) }

// Rnd is the rnd field a document holds when written (version 1), and
// Updated the one update_one sets: both derive from the seed, the
// collection and the _id, so every read can be checked whatever ran
// before it.
func Rnd(seed uint64, coll int, id int64) int64 {
	return int64(gen.Mix(seed, uint64(coll), uint64(id)))
}

// Updated is rnd after update_one (see Rnd).
func Updated(seed uint64, coll int, id int64) int64 {
	return int64(gen.Mix(seed, uint64(coll), uint64(id), 0x75706461746564))
}

// Text is the rndTxt field of a document: size characters of [0-9A-Za-z]
// (the tool's alphabet), from the seed, the collection and the _id.
func Text(seed uint64, coll int, id int64, size int) string {
	if size == 0 {
		return ""
	}
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, size)
	s := gen.Mix(seed, uint64(coll), uint64(id), 0x747874)
	for i := range b {
		s = gen.SplitMix(s)
		b[i] = alphabet[s%uint64(len(alphabet))]
	}
	return string(b)
}

// Check compares a document read back with what the generator wrote.
func Check(seed uint64, coll int, id int64, textSize int, d *Doc) string {
	switch {
	case d.ID != id:
		return fmt.Sprintf("_id is %d, asked for %d", d.ID, id)
	case d.ThreadID < 1:
		return fmt.Sprintf("threadId is %d", d.ThreadID)
	case d.ThreadRunCount < 1:
		return fmt.Sprintf("threadRunCount is %d", d.ThreadRunCount)
	case d.Text != Text(seed, coll, id, textSize):
		return fmt.Sprintf("rndTxt differs from what was written (%d characters, %d written)", len(d.Text), textSize)
	case d.V == 1 && d.Rnd == Rnd(seed, coll, id):
	case d.V > 1 && d.Rnd == Updated(seed, coll, id):
	case d.V < 1:
		return fmt.Sprintf("v is %d", d.V)
	default:
		return fmt.Sprintf("rnd %d is not what version %d of the document holds", d.Rnd, d.V)
	}
	return ""
}

// Layouts are the documents layouts, in order of preference: the
// target's own (a Store), or this package's on what the target offers
// (layout_mongo.go: a MongoDB database; layout_sql.go: PostgreSQL's
// jsonb; layout_sqlite.go: SQLite's JSON functions, whose connections
// the caller closes: the Store is then an io.Closer). Each provides a
// document store.
var Layouts = layout.NewTable("documents", layout.Needs{All: Requires},
	layout.Layout[Store]{Name: "own", On: "the target's own document store (documents.Store)", Provides: providesDocs,
		Open: func(h any) (Store, bool) { s, ok := h.(Store); return s, ok }},
	layout.Layout[Store]{Name: "mongo", On: "a MongoDB database (conn.Mongo)", Provides: providesDocs,
		Open: func(h any) (Store, bool) {
			m, ok := h.(conn.Mongo)
			if !ok {
				return nil, false
			}
			return mongoStore{m.MongoDatabase()}, true
		}},
	layout.Layout[Store]{Name: "postgres", On: "PostgreSQL's jsonb (target.SQLDB in the postgres dialect)", Provides: providesDocs,
		Open: func(h any) (Store, bool) {
			db, ok := h.(target.SQLDB)
			if !ok {
				return nil, false
			}
			if d := db.SQLDialect(); d.Name == "postgres" {
				return pgStore{db: db, d: d}, true
			}
			return nil, false
		}},
	layout.Layout[Store]{Name: "sqlite", On: "SQLite's JSON functions (target.SQLDriver in the sqlite dialect, target.SQLWriteLocker)",
		Closes: true, Provides: providesDocs, Open: openSQLite},
)

// providesDocs is what every documents layout gives.
func providesDocs(Store) target.Caps { return Requires }

// openSQLite is the layout on SQLite's driver and its write lock: a
// store with connections of its own, which the caller closes.
func openSQLite(h any) (Store, bool) {
	drv, ok := h.(target.SQLDriver)
	if !ok || drv.SQLDialect().Name != "sqlite" {
		return nil, false
	}
	wl, ok := h.(target.SQLWriteLocker)
	if !ok {
		return nil, false
	}
	return newSQLiteStore(drv, wl), true
}

// StoreOf finds the documents layout on a target's handle (Layouts);
// false when there is none. A Store that is an io.Closer (SQLite's) is
// the caller's to close.
func StoreOf(h any) (Store, bool) {
	s, _, ok := Layouts.Of(h)
	return s, ok
}

func (Documents) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, fmt.Errorf("documents: bad step params: %w", err)
	}
	store, ok := StoreOf(env.Target)
	if !ok {
		return nil, fmt.Errorf("documents: this target keeps no documents")
	}
	if c, ok := store.(io.Closer); ok {
		defer c.Close()
	}
	r := &run{store: store, p: p, seed: uint64(st.Seed), n: st.N, threads: max(st.Concurrency, 1), phase: st.Phase, duration: st.Duration}
	for c := 0; c < p.Collections; c++ {
		r.colls = append(r.colls, Collection(c))
	}
	var res *results.Step
	var err error
	if st.Phase == PhasePrepare {
		res, err = r.prepare(ctx, env)
	} else {
		res, err = r.mode(ctx, env)
	}
	workload.SetItemBytes(res, float64(docBytes(p)))
	return res, err
}

// docBytes is one document as the workload writes it, the sum of its
// fields (Doc): _id, threadRunCount and rnd (int64), threadId and v
// (int32), and rndTxt's text_size characters. (Plan's disk check counts
// 48 bytes and the text: six fields of at most 8 bytes.)
func docBytes(p Params) int64 { return 8 + 8 + 8 + 4 + 4 + int64(p.TextSize) }

type run struct {
	store    Store
	p        Params
	seed     uint64
	n        int64
	threads  int
	phase    string
	duration time.Duration
	colls    []string
}

// perThread counts each thread's operations, as the tool's
// threadRunCount, one cache line each.
type perThread struct {
	n int64
	_ [56]byte
}

func (r *run) doc(d *Doc, coll, thread int, runCount, id int64) {
	*d = Doc{ID: id, ThreadID: int32(thread + 1), ThreadRunCount: runCount, Rnd: Rnd(r.seed, coll, id), Text: Text(r.seed, coll, id, r.p.TextSize), V: 1}
}

// prepare creates the collections and their index (timed apart, and
// stated), then loads N documents into each, _id 1..N, in batches.
func (r *run) prepare(ctx context.Context, env *workload.Env) (*results.Step, error) {
	t0 := time.Now()
	index, err := r.store.PrepareDocuments(ctx, r.colls)
	if err != nil {
		return nil, fmt.Errorf("documents: creating the collections and the index: %w", err)
	}
	indexSeconds := time.Since(t0).Seconds()
	batches := (r.n + int64(r.p.Batch) - 1) / int64(r.p.Batch)
	C := int64(len(r.colls))
	threads := make([]perThread, r.threads)
	bufs := make([][]Doc, r.threads)
	res, err := workload.Measure(ctx, env, workload.Closed(r.threads, batches*C), func(ctx context.Context, w int, seq int64) error {
		c, b := int(seq%C), seq/C
		lo := b*int64(r.p.Batch) + 1
		hi := min(lo+int64(r.p.Batch)-1, r.n)
		docs := bufs[w][:0]
		for id := lo; id <= hi; id++ {
			threads[w].n++
			docs = append(docs, Doc{})
			r.doc(&docs[len(docs)-1], c, w, threads[w].n, id)
		}
		bufs[w] = docs
		return r.store.InsertDocuments(ctx, r.colls[c], docs)
	})
	if err != nil {
		return res, err
	}
	res.Unit = fmt.Sprintf("insert of a batch of up to %d documents", r.p.Batch)
	checked, err := r.expectCounts(ctx, func(int) int64 { return r.n })
	if err != nil {
		return res, err
	}
	res.Verify = results.Verify{Checked: checked}
	res.Metrics = map[string]float64{"documents": float64(r.n * C), "collections": float64(C), "index_seconds": indexSeconds}
	res.Facts = map[string]string{"index": index}
	return res, nil
}

// expectCounts checks that every collection holds want(c) documents with
// _id 1..want(c), and returns how many documents that vouches for.
func (r *run) expectCounts(ctx context.Context, want func(c int) int64) (int64, error) {
	var total int64
	for c, name := range r.colls {
		count, maxID, err := r.store.DocumentStats(ctx, name)
		if err != nil {
			return total, fmt.Errorf("documents: counting %s: %w", name, err)
		}
		if count != want(c) || maxID != want(c) {
			return total, &workload.VerifyError{Phase: r.phase, Key: []byte(name),
				What: fmt.Sprintf("collection %s holds %d documents, highest _id %d; %d were expected, _id 1..%d", name, count, maxID, want(c), want(c))}
		}
		total += count
	}
	return total, nil
}

// mode runs one of the tool's modes.
func (r *run) mode(ctx context.Context, env *workload.Env) (*results.Step, error) {
	C := len(r.colls)
	m := &modeRun{r: r, top: make([]atomic.Int64, C), before: make([]int64, C)}
	if err := m.readRanges(ctx); err != nil {
		return nil, err
	}
	load := workload.Closed(r.threads, int64(r.p.Operations)).For(time.Duration(r.p.Duration))
	if r.duration > 0 {
		load = workload.Closed(r.threads, 0).For(r.duration)
	}
	m.threads = make([]perThread, r.threads)
	m.docs = make([]Doc, r.threads)
	m.verified = workload.NewTally(r.threads)
	m.drained = workload.NewTally(r.threads)
	op, err := m.op()
	if err != nil {
		return nil, err
	}
	rvs := newReservoirs(r.seed, r.threads)
	res, err := workload.Measure(ctx, env, load, func(ctx context.Context, w int, seq int64) error {
		t := time.Now()
		err := op(ctx, w, seq)
		rvs[w].update(time.Since(t), t)
		return err
	})
	if errors.Is(err, errDrained) {
		err = nil
		empty := ""
		for w := range r.threads {
			if c := m.drained.Of(w); c > 0 {
				empty = r.colls[c-1]
			}
		}
		res.Facts = map[string]string{"stopped": fmt.Sprintf("%s was empty: every document of it deleted before the operations or the duration ran out", empty)}
	}
	if err != nil {
		return res, err
	}
	res.Unit = unit(r.phase)
	// What the mode changed must be there: inserts appended, deletes
	// removed the highest _ids, finds and updates left the counts.
	checked, err := r.expectCounts(ctx, func(c int) int64 { return max(m.top[c].Load(), 0) })
	if err != nil {
		return res, err
	}
	res.Verify = results.Verify{Checked: m.verified.Sum() + checked}
	res.Metrics = timerMetrics(res, mergeReservoirs(rvs))
	res.Metrics["threads"] = float64(r.threads)
	res.Metrics["collections"] = float64(C)
	return res, nil
}

// modeRun is one mode's state: each collection's highest _id (top,
// moved by inserts and deletes) and its highest before the run, each
// thread's operations and document, the reads checked and the
// collections found empty (drained[w] is 1 + the collection goroutine w
// found empty).
type modeRun struct {
	r        *run
	top      []atomic.Int64
	before   []int64
	threads  []perThread
	docs     []Doc
	verified workload.Tally
	drained  workload.Tally
}

// readRanges reads each collection's _id range, like the tool (its
// min/max query) before the run; here each must hold exactly _id
// 1..max, which every mode keeps true (inserts append, deletes take the
// highest), so that every read can be checked.
func (m *modeRun) readRanges(ctx context.Context) error {
	r := m.r
	for c, name := range r.colls {
		count, maxID, err := r.store.DocumentStats(ctx, name)
		if err != nil {
			return fmt.Errorf("documents: reading the _id range of %s: %w", name, err)
		}
		if count != maxID {
			return fmt.Errorf("documents: %s holds %d documents but its highest _id is %d: not this workload's data (run prepare first)", name, count, maxID)
		}
		if maxID == 0 && (r.phase == ModeIterate || r.phase == ModeUpdate) {
			return fmt.Errorf("documents: %s is empty: %s needs documents (a ladder size of at least 1)", name, r.phase)
		}
		m.before[c] = maxID
		m.top[c].Store(maxID)
	}
	return nil
}

// op is the mode's operation.
func (m *modeRun) op() (runner.Op, error) {
	switch m.r.phase {
	case ModeInsert:
		return m.insertOne, nil
	case ModeIterate:
		return m.findOne, nil
	case ModeUpdate:
		return m.updateOne, nil
	case ModeDelete:
		return m.deleteOne, nil
	}
	return nil, fmt.Errorf("documents: unknown mode %q", m.r.phase)
}

// pick is operation seq's document: a collection, and an _id among
// those it held before the run.
func (m *modeRun) pick(seq int64) (int, int64) {
	r := m.r
	h := gen.Mix(r.seed, uint64(len(r.phase)), uint64(seq))
	c := int(h % uint64(len(r.colls)))
	return c, 1 + int64(gen.SplitMix(h)%uint64(m.before[c]))
}

// key names document id of collection c in an error.
func (m *modeRun) key(c int, id int64) []byte {
	return []byte(m.r.colls[c] + "/" + strconv.FormatInt(id, 10))
}

// insertOne appends a document to a collection, in turn.
func (m *modeRun) insertOne(ctx context.Context, w int, seq int64) error {
	r := m.r
	c := int(seq % int64(len(r.colls)))
	id := m.top[c].Add(1)
	m.threads[w].n++
	d := &m.docs[w]
	r.doc(d, c, w, m.threads[w].n, id)
	return r.store.InsertDocument(ctx, r.colls[c], d)
}

// findOne finds a document by _id and checks it.
func (m *modeRun) findOne(ctx context.Context, w int, seq int64) error {
	r := m.r
	c, id := m.pick(seq)
	n, err := r.store.FindDocuments(ctx, r.colls[c], id, func(d *Doc) error {
		if what := Check(r.seed, c, id, r.p.TextSize, d); what != "" {
			return &workload.VerifyError{Phase: r.phase, Key: m.key(c, id), What: what}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n != 1 {
		return &workload.VerifyError{Phase: r.phase, Key: m.key(c, id), What: fmt.Sprintf("find by _id returned %d documents", n)}
	}
	m.verified.Add(w, 1)
	return nil
}

// updateOne updates a document by _id.
func (m *modeRun) updateOne(ctx context.Context, w int, seq int64) error {
	r := m.r
	c, id := m.pick(seq)
	n, err := r.store.UpdateDocument(ctx, r.colls[c], id, Updated(r.seed, c, id))
	if err != nil {
		return err
	}
	if n != 1 {
		return &workload.VerifyError{Phase: r.phase, Key: m.key(c, id), What: fmt.Sprintf("updateOne modified %d documents", n)}
	}
	m.verified.Add(w, 1)
	return nil
}

// deleteOne deletes a collection's highest _id, in turn; a collection
// with none left ends the mode (errDrained).
func (m *modeRun) deleteOne(ctx context.Context, w int, seq int64) error {
	r := m.r
	c := int(seq % int64(len(r.colls)))
	id := m.top[c].Add(-1) + 1
	if id < 1 {
		m.top[c].Add(1)
		m.drained.Add(w, int64(c+1))
		return errDrained
	}
	n, err := r.store.DeleteDocument(ctx, r.colls[c], id)
	if err != nil {
		return err
	}
	if n != 1 {
		return &workload.VerifyError{Phase: r.phase, Key: m.key(c, id), What: fmt.Sprintf("deleteOne deleted %d documents", n)}
	}
	m.verified.Add(w, 1)
	return nil
}

// errDrained ends delete_one early: a collection has no document left.
var errDrained = errors.New("documents: a collection is empty")

func unit(mode string) string {
	switch mode {
	case ModeInsert:
		return "insertOne of a new document"
	case ModeIterate:
		return "find({_id}) and iterate the cursor"
	case ModeUpdate:
		return "updateOne({_id}, {$set: {rnd}, $inc: {v: 1}})"
	}
	return "deleteOne({_id})"
}
