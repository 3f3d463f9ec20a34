// Package setget is the redis-benchmark-shaped workload: SETs then GETs of
// small values over C connections with a pipeline depth P, so storebench
// can be run side by side with the native tool on the same server (make
// bench-native). It also runs on any embedded key-value engine, where a
// pipeline is a batch.
package setget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"storebench/internal/workload/gen"
	"strconv"

	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/runner"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
)

func init() { workload.Register(SetGet{}) }

// Pipeliner is the capability of targets that can pipeline requests on a
// connection of their own per load goroutine (Redis).
type Pipeliner interface {
	// NewSession opens a connection whose I/O ends when ctx does: a
	// cancelled step must not wait on a server that stopped answering.
	NewSession(ctx context.Context) (Session, error)
}

// Session is one connection. Keys and values are only borrowed for the
// call; implementations reuse their buffers.
type Session interface {
	// Set stores vals[i] under keys[i], pipelined in one round trip.
	Set(keys, vals [][]byte) error
	// Get fetches keys in one round trip and calls fn with each value
	// (nil when absent); fn's slice is only valid during the call.
	Get(keys [][]byte, fn func(i int, v []byte) error) error
	Close() error
}

// Params of the workload (redis-benchmark's flags in brackets).
type Params struct {
	Requests  study.Count `yaml:"requests" json:"requests"`     // -n
	Pipeline  int         `yaml:"pipeline" json:"pipeline"`     // -P
	ValueSize int         `yaml:"value_size" json:"value_size"` // -d
	// Keyspace > 0 draws keys from that many (-r); 0 uses one key, as
	// redis-benchmark does without -r.
	Keyspace study.Count `yaml:"keyspace" json:"keyspace"`
}

// SetGet implements workload.Workload. Connections are the study's
// concurrency (-c).
type SetGet struct{}

func (SetGet) Name() string { return "setget" }
func (SetGet) Describe() string {
	return "SET then GET of small values over C connections with pipeline depth P (redis-benchmark -t set,get)"
}

func (SetGet) DecodeParams(s *study.Study, e study.Entry) (json.RawMessage, error) {
	p := Params{Requests: 200000, Pipeline: 1, ValueSize: 3}
	if err := study.DecodeParams(s.File, e.Params, "workloads.setget.params", &p); err != nil {
		return nil, err
	}
	if p.Pipeline < 1 || p.Pipeline > 10000 {
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "pipeline"), Field: "workloads.setget.params.pipeline", Msg: "want 1..10000"}
	}
	if p.ValueSize < 1 || p.ValueSize > 1<<20 {
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "value_size"), Field: "workloads.setget.params.value_size", Msg: "want 1..1MiB"}
	}
	return json.Marshal(p)
}

func (SetGet) Plan(s *study.Study, raw json.RawMessage) ([]workload.Step, error) {
	var steps []workload.Step
	for i, phase := range []string{"set", "get"} {
		// SETs and GETs pipelined on a connection (an embedded engine
		// batches them).
		steps = append(steps, workload.Step{Workload: "setget", Phase: phase, N: s.Largest(), Fresh: i == 0, Seed: s.Seed, Concurrency: s.Concurrency, Params: raw, Largest: s.Largest(),
			Requires: target.Caps{target.KeyValue, target.Pipeline}})
	}
	return steps, nil
}

// kvSession makes an embedded engine look like a pipelined connection:
// a pipeline of SETs is one batch, GETs are done one by one.
type kvSession struct{ kv kv.Store }

func (s kvSession) Set(keys, vals [][]byte) error {
	b := s.kv.NewBatch()
	for i := range keys {
		b.Put(keys[i], vals[i])
	}
	return b.Commit()
}

func (s kvSession) Get(keys [][]byte, fn func(int, []byte) error) error {
	for i, k := range keys {
		err := kv.View(s.kv, k, func(v []byte) error { return fn(i, v) })
		if err == kv.ErrNotFound {
			err = fn(i, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (kvSession) Close() error { return nil }

func (SetGet) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, err
	}
	newSession := func(context.Context) (Session, error) {
		return nil, fmt.Errorf("setget: target has no pipelined sessions or key-value store")
	}
	switch t := env.Target.(type) {
	case Pipeliner:
		newSession = t.NewSession
	case kv.Store:
		newSession = func(context.Context) (Session, error) { return kvSession{t}, nil }
	}
	conns := st.Concurrency
	type conn struct {
		s          Session
		keys, vals [][]byte
		kbuf       []byte
	}
	cs := make([]conn, conns)
	for i := range cs {
		s, err := newSession(ctx)
		if err != nil {
			for _, c := range cs[:i] {
				c.s.Close()
			}
			return nil, err
		}
		cs[i].s = s
		cs[i].keys = make([][]byte, p.Pipeline)
		cs[i].vals = make([][]byte, p.Pipeline)
		cs[i].kbuf = make([]byte, 0, p.Pipeline*24)
	}
	defer func() {
		for _, c := range cs {
			c.s.Close()
		}
	}()
	value := bytes.Repeat([]byte{'x'}, p.ValueSize)
	// The value of a key is "x"*size; a GET checks it, and a GET of a key
	// that was never SET (possible only with a keyspace) is a failure.
	pipelines := (int64(p.Requests) + int64(p.Pipeline) - 1) / int64(p.Pipeline)
	verified := workload.NewTally(conns)
	res, err := workload.Measure(ctx, env, runner.Config{Workers: conns, Ops: pipelines}, pipelines, func(ctx context.Context, w int, seq int64) error {
		c := &cs[w]
		c.kbuf = c.kbuf[:0]
		for i := 0; i < p.Pipeline; i++ {
			start := len(c.kbuf)
			c.kbuf = append(c.kbuf, "key:"...)
			var k int64
			if p.Keyspace > 0 {
				k = int64(gen.SplitMix(uint64(seq)*uint64(p.Pipeline)+uint64(i)) % uint64(p.Keyspace))
			}
			c.kbuf = strconv.AppendInt(c.kbuf, k, 10)
			c.keys[i] = c.kbuf[start:len(c.kbuf):len(c.kbuf)]
			c.vals[i] = value
		}
		if st.Phase == "set" {
			return c.s.Set(c.keys, c.vals)
		}
		return c.s.Get(c.keys, func(i int, v []byte) error {
			if !bytes.Equal(v, value) {
				return &workload.VerifyError{Phase: "get", Key: c.keys[i], What: fmt.Sprintf("got %d bytes, not the value set", len(v))}
			}
			verified.Add(w, 1)
			return nil
		})
	})
	n := verified.Sum()
	res.Unit = fmt.Sprintf("pipeline of %d %s requests", p.Pipeline, st.Phase)
	res.Verify = results.Verify{Checked: n}
	requests := res.Ops * int64(p.Pipeline)
	res.Metrics = map[string]float64{"requests": float64(requests), "requests_per_s": float64(requests) / res.Seconds, "pipeline": float64(p.Pipeline), "connections": float64(conns)}
	return res, err
}
