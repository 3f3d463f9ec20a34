// Package pointselect is the pgbench -S shaped workload: random primary-key
// selects of one integer column from an existing table, one connection
// per load goroutine, for a duration. Run on pgbench's own tables it puts
// storebench side by side with pgbench (make bench-native).
package pointselect

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"storebench/internal/workload/gen"
	"strings"
	"time"

	"storebench/internal/evloop"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
)

func init() { workload.Register(PointSelect{}) }

// SelectConn runs the prepared select: the target's integer point
// select (target.IntSelecter), on a connection of its own.
type SelectConn = target.IntSelect

// Evented is the optional ability of a SelectConn on a plain socket
// whose protocol an event loop can drive (package evloop): its selects
// then cost a write, a read and a share of one epoll_wait, as pgbench's
// do, instead of a goroutine's park and wake per round trip.
type Evented = target.EventedIntSelect

// Query is the select, "SELECT value FROM table WHERE key = $1", in the
// dialect d.
func Query(d target.Dialect, table, key, value string) string {
	return "SELECT " + d.Quote(value) + " FROM " + d.Quote(table) + " WHERE " + d.Quote(key) + " = " + d.Param(1)
}

// Open opens a connection of its own on the target h with the select
// prepared.
func Open(ctx context.Context, h any, table, key, value string) (SelectConn, error) {
	sel, ok := h.(target.IntSelecter)
	if !ok {
		return nil, fmt.Errorf("pointselect: target has no SQL point selects")
	}
	return sel.PrepareIntSelect(ctx, Query(sel.SQLDialect(), table, key, value))
}

// Params: the table and its columns (pgbench's by default), the key range
// [1, rows], and how long to run (pgbench -T).
type Params struct {
	Table    string         `yaml:"table" json:"table"`
	Key      string         `yaml:"key" json:"key"`
	Value    string         `yaml:"value" json:"value"`
	Rows     study.Count    `yaml:"rows" json:"rows" range:"1..1e9"`
	Duration study.Duration `yaml:"duration" json:"duration" range:"1ms..24h"`
	// Client: "events" (default: event loops where the target can, see
	// Evented) or "goroutines" (a goroutine per connection, always).
	Client string `yaml:"client" json:"client"`
	// Loops is how many event loops share the connections (0: half the
	// cores, at least one).
	Loops int `yaml:"loops" json:"loops,omitempty" range:"0..1024"`
	// Create: "absent" (default) makes the table when it does not exist,
	// shaped as pgbench -i makes pgbench_accounts (key, a 0 value and an
	// 84-byte filler, rows 1..rows), on targets with SQL schema
	// statements (target.SQLDB); "no" never does. A table that exists is
	// used as it is.
	Create string `yaml:"create" json:"create,omitempty"`
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// PointSelect implements workload.Workload; connections are the study's
// concurrency (pgbench -c).
type PointSelect struct{}

func (PointSelect) Name() string { return "pointselect" }
func (PointSelect) Describe() string {
	return "random primary-key selects on an existing table, a connection per goroutine (pgbench -S)"
}

func (PointSelect) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := Params{Table: "pgbench_accounts", Key: "aid", Value: "abalance", Rows: 100000, Duration: study.Duration(10 * time.Second)}
	if err := study.DecodeParams(s.File, e.Params, "workloads.pointselect.params", &p); err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"table": p.Table, "key": p.Key, "value": p.Value} {
		if !ident.MatchString(v) {
			return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads.pointselect.params." + field, Msg: fmt.Sprintf("%q is not a plain SQL identifier", v)}
		}
	}
	switch p.Client {
	case "":
		p.Client = "events"
	case "events", "goroutines":
	default:
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "client"), Field: "workloads.pointselect.params.client", Msg: fmt.Sprintf("%q: want events or goroutines", p.Client)}
	}
	switch p.Create {
	case "":
		p.Create = "absent"
	case "absent", "no":
	default:
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "create"), Field: "workloads.pointselect.params.create", Msg: fmt.Sprintf("%q: want absent or no", p.Create)}
	}
	if p.Loops < 0 || p.Loops > 1024 {
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "loops"), Field: "workloads.pointselect.params.loops", Msg: "want 0 (half the cores) to 1024"}
	}
	if p.Rows < 1 || p.Duration <= 0 {
		return nil, &study.Error{File: s.File, Line: e.Params.Line, Field: "workloads.pointselect.params", Msg: "rows and duration must be positive"}
	}
	return json.Marshal(p)
}

func (PointSelect) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	return []workload.Step{{Workload: "pointselect", Phase: "select", N: s.Largest(), Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(),
		Requires: target.Caps{target.SQL}}}, nil
}

func (PointSelect) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, err
	}
	if _, ok := env.Target.(target.IntSelecter); !ok {
		return nil, fmt.Errorf("pointselect: target has no SQL point selects")
	}
	created := false
	if db, ok := env.Target.(target.SQLDB); ok && p.Create == "absent" && st.Part == 0 {
		var err error
		if created, err = createIfAbsent(ctx, db, p); err != nil {
			return nil, err
		}
	}
	conns := make([]SelectConn, st.Concurrency)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := Open(ctx, env.Target, p.Table, p.Key, p.Value)
		if err != nil {
			return nil, err
		}
		conns[i] = c
	}
	found := make([]struct {
		n int64
		_ [56]byte // one cache line per goroutine
	}, len(conns))
	keyOf := func(seq int64) int64 { return 1 + int64(gen.SplitMix(uint64(st.Seed)^uint64(seq))%uint64(p.Rows)) }
	load := workload.Closed(st.Concurrency, 0).For(time.Duration(p.Duration))
	loops := 0
	if sessions, err := eventSessions(conns, p, keyOf, func(i int) *int64 { return &found[i].n }); err != nil {
		return nil, err
	} else if sessions != nil {
		load, loops = load.OnLoops(p.Loops, sessions)
	}
	op := func(ctx context.Context, w int, seq int64) error {
		key := keyOf(seq)
		_, ok, err := conns[w].Select(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			return &workload.VerifyError{Phase: "select", Key: []byte(fmt.Sprint(key)), What: fmt.Sprintf("no row with %s = %d in %s", p.Key, key, p.Table)}
		}
		found[w].n++
		return nil
	}
	if load.Drive != nil {
		op = nil
	}
	res, err := workload.Measure(ctx, env, load, op)
	res.Unit = fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1", p.Value, p.Table, p.Key)
	var checked int64
	for _, f := range found {
		checked += f.n
	}
	res.Verify = results.Verify{Checked: checked}
	res.Metrics = map[string]float64{"tps": float64(res.Ops) / res.Seconds, "connections": float64(st.Concurrency), "event_loops": float64(loops)}
	if created {
		res.Facts = map[string]string{"table": fmt.Sprintf("%s made with rows 1..%d (pgbench -i shaped), as it did not exist", p.Table, p.Rows)}
	}
	return res, err
}

// createIfAbsent makes the table with rows 1..p.Rows when it does not
// exist (a count of its rows fails), and says whether it did.
func createIfAbsent(ctx context.Context, db target.SQLDB, p Params) (bool, error) {
	d := db.SQLDialect()
	t := d.Quote(p.Table)
	probe := db.Query(ctx, "SELECT COUNT(*) FROM "+t, nil, func([][]byte) bool { return false })
	if probe == nil {
		return false, nil
	}
	ddl := "CREATE TABLE " + t + " (" + d.Quote(p.Key) + " INTEGER NOT NULL PRIMARY KEY, " + d.Quote(p.Value) + " INTEGER NOT NULL, filler CHAR(84))"
	if err := db.ExecDDL(ctx, ddl); err != nil {
		return false, fmt.Errorf("pointselect: %s is not readable (%v) and making it failed: %w", p.Table, probe, err)
	}
	// One statement of batch rows (and one for the rest), each prepared
	// once by the target.
	const batch = 1000
	insert := func(n int) string {
		var b strings.Builder
		b.WriteString("INSERT INTO " + t + " (" + d.Quote(p.Key) + ", " + d.Quote(p.Value) + ", filler) VALUES ")
		for i := 1; i <= n; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			b.WriteString("(" + d.Param(i) + ", 0, '')")
		}
		return b.String()
	}
	args := make([]any, 0, batch)
	for lo := int64(1); lo <= int64(p.Rows); lo += batch {
		args = args[:0]
		for k := lo; k < lo+batch && k <= int64(p.Rows); k++ {
			args = append(args, k)
		}
		if _, err := db.Exec(ctx, insert(len(args)), args...); err != nil {
			return false, fmt.Errorf("pointselect: filling %s: %w", p.Table, err)
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// eventSessions hands every connection to the event loop when the client
// is "events" and every connection can be (none otherwise: nil).
func eventSessions(conns []SelectConn, p Params, keyOf func(int64) int64, tally func(i int) *int64) ([]evloop.Conn, error) {
	if p.Client != "events" || !evloop.Supported {
		return nil, nil
	}
	for _, c := range conns {
		if _, ok := c.(Evented); !ok {
			return nil, nil
		}
	}
	out := make([]evloop.Conn, len(conns))
	for i, c := range conns {
		n := tally(i)
		s, err := c.(Evented).Session(fmt.Sprintf("connection %d", i+1), keyOf, func(key, _ int64, ok bool) error {
			if !ok {
				return &workload.VerifyError{Phase: "select", Key: []byte(fmt.Sprint(key)), What: fmt.Sprintf("no row with %s = %d in %s", p.Key, key, p.Table)}
			}
			*n++
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}
