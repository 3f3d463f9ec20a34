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
	"time"

	"storebench/internal/results"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
)

func init() { workload.Register(PointSelect{}) }

// Selecter is the capability of SQL targets: a connection of its own with
// "SELECT value FROM table WHERE key = $1" prepared.
type Selecter interface {
	NewSelectConn(ctx context.Context, table, key, value string) (SelectConn, error)
}

// SelectConn runs the prepared select.
type SelectConn interface {
	// Select returns the value of the row with this key (found false when
	// there is none).
	Select(ctx context.Context, key int64) (value int64, found bool, err error)
	Close() error
}

// Params: the table and its columns (pgbench's by default), the key range
// [1, rows], and how long to run (pgbench -T).
type Params struct {
	Table    string         `yaml:"table" json:"table"`
	Key      string         `yaml:"key" json:"key"`
	Value    string         `yaml:"value" json:"value"`
	Rows     study.Count    `yaml:"rows" json:"rows"`
	Duration study.Duration `yaml:"duration" json:"duration"`
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// PointSelect implements workload.Workload; connections are the study's
// concurrency (pgbench -c).
type PointSelect struct{}

func (PointSelect) Name() string { return "pointselect" }
func (PointSelect) Describe() string {
	return "random primary-key selects on an existing table, a connection per goroutine (pgbench -S)"
}

func (PointSelect) DecodeParams(s *study.Study, e study.Entry) (json.RawMessage, error) {
	p := Params{Table: "pgbench_accounts", Key: "aid", Value: "abalance", Rows: 100000, Duration: study.Duration(10 * time.Second)}
	if err := study.DecodeParams(s.File, e.Params, "workloads.pointselect.params", &p); err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"table": p.Table, "key": p.Key, "value": p.Value} {
		if !ident.MatchString(v) {
			return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, field), Field: "workloads.pointselect.params." + field, Msg: fmt.Sprintf("%q is not a plain SQL identifier", v)}
		}
	}
	if p.Rows < 1 || p.Duration <= 0 {
		return nil, &study.Error{File: s.File, Line: e.Params.Line, Field: "workloads.pointselect.params", Msg: "rows and duration must be positive"}
	}
	return json.Marshal(p)
}

func (PointSelect) Plan(s *study.Study, raw json.RawMessage) ([]workload.Step, error) {
	return []workload.Step{{Workload: "pointselect", Phase: "select", N: s.Largest(), Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(),
		Requires: target.Caps{target.SQL}}}, nil
}

func (PointSelect) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, err
	}
	sel, ok := env.Target.(Selecter)
	if !ok {
		return nil, fmt.Errorf("pointselect: target has no SQL point selects")
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
		c, err := sel.NewSelectConn(ctx, p.Table, p.Key, p.Value)
		if err != nil {
			return nil, err
		}
		conns[i] = c
	}
	found := make([]struct {
		n int64
		_ [56]byte // one cache line per goroutine
	}, len(conns))
	res, err := workload.Measure(ctx, env, runner.Config{Workers: st.Concurrency, Duration: time.Duration(p.Duration)}, 0, func(ctx context.Context, w int, seq int64) error {
		key := 1 + int64(gen.SplitMix(uint64(st.Seed)^uint64(seq))%uint64(p.Rows))
		_, ok, err := conns[w].Select(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			return &workload.VerifyError{Phase: "select", Key: []byte(fmt.Sprint(key)), What: fmt.Sprintf("no row with %s = %d in %s", p.Key, key, p.Table)}
		}
		found[w].n++
		return nil
	})
	res.Unit = fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1", p.Value, p.Table, p.Key)
	var checked int64
	for _, f := range found {
		checked += f.n
	}
	res.Verify = results.Verify{Checked: checked}
	res.Metrics = map[string]float64{"tps": float64(res.Ops) / res.Seconds, "connections": float64(st.Concurrency)}
	return res, err
}
