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

	"storebench/internal/evloop"
	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/target"
	tconn "storebench/internal/target/conn"
	"storebench/internal/workload"
)

func init() { workload.Register(SetGet{}) }

// Pipeliner is the capability of targets that can pipeline requests on a
// connection of their own per load goroutine (Redis, memcached): the
// target's primitive, which the workload drives with its SETs and GETs.
type Pipeliner = target.Pipeliner

// Session is one connection (see target.Session).
type Session = target.Session

// Evented is the optional ability of a Session on a plain socket whose
// protocol an event loop can drive (see target.EventedSession).
type Evented = target.EventedSession

// Pipeline is what an evented session sends and checks per operation.
type Pipeline = target.PipelinePlan

// Params of the workload (redis-benchmark's flags in brackets).
type Params struct {
	Requests  study.Count `yaml:"requests" json:"requests" range:"1..1e12"`        // -n
	Pipeline  int         `yaml:"pipeline" json:"pipeline" range:"1..10000"`       // -P
	ValueSize int         `yaml:"value_size" json:"value_size" range:"1..1048576"` // -d
	// Keyspace > 0 draws keys from that many (-r); 0 uses one key, as
	// redis-benchmark does without -r.
	Keyspace study.Count `yaml:"keyspace" json:"keyspace" range:"0..1e12"`
	// Client: "events" (default: event loops where the target can, see
	// Evented) or "goroutines" (a goroutine per connection, always).
	Client string `yaml:"client" json:"client"`
	// Loops is how many event loops share the connections (0: half the
	// cores, at least one).
	Loops int `yaml:"loops" json:"loops,omitempty" range:"0..1024"`
}

// SetGet implements workload.Workload. Connections are the study's
// concurrency (-c).
type SetGet struct{}

func (SetGet) Name() string { return "setget" }
func (SetGet) Describe() string {
	return "SET then GET of small values over C connections with pipeline depth P (redis-benchmark -t set,get)"
}

func (SetGet) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
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
	switch p.Client {
	case "":
		p.Client = "events"
	case "events", "goroutines":
	default:
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "client"), Field: "workloads.setget.params.client", Msg: fmt.Sprintf("%q: want events or goroutines", p.Client)}
	}
	if p.Loops < 0 || p.Loops > 1024 {
		return nil, &study.Error{File: s.File, Line: study.FieldLine(e.Params, "loops"), Field: "workloads.setget.params.loops", Msg: "want 0 (half the cores) to 1024"}
	}
	return json.Marshal(p)
}

func (SetGet) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
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
	cs := make([]conn, conns)
	for i := range cs {
		s, err := newSession(ctx)
		if err != nil {
			for _, c := range cs[:i] {
				c.s.Close()
			}
			return nil, err
		}
		cs[i] = conn{s: s, p: p, keys: make([][]byte, p.Pipeline), kbuf: make([]byte, 0, p.Pipeline*24)}
	}
	defer func() {
		for _, c := range cs {
			c.s.Close()
		}
	}()
	value := bytes.Repeat([]byte{'x'}, p.ValueSize)
	vals := make([][]byte, p.Pipeline)
	for i := range vals {
		vals[i] = value
	}
	// The value of a key is "x"*size; a GET checks it, and a GET of a key
	// that was never SET (possible only with a keyspace) is a failure.
	pipelines := (int64(p.Requests) + int64(p.Pipeline) - 1) / int64(p.Pipeline)
	verified := workload.NewTally(conns)
	check := func(w int, key, v []byte) error {
		if !bytes.Equal(v, value) {
			return &workload.VerifyError{Phase: "get", Key: key, What: fmt.Sprintf("got %d bytes, not the value set", len(v))}
		}
		verified.Add(w, 1)
		return nil
	}
	load := workload.Closed(conns, pipelines)
	op := func(ctx context.Context, w int, seq int64) error {
		c := &cs[w]
		keys := c.keysOf(seq)
		if st.Phase == "set" {
			return c.s.Set(keys, vals)
		}
		return c.s.Get(keys, func(i int, v []byte) error { return check(w, keys[i], v) })
	}
	loops := 0
	if sessions, err := eventSessions(cs, p, st.Phase == "set", value, check); err != nil {
		return nil, err
	} else if sessions != nil {
		load, loops = load.OnLoops(p.Loops, sessions)
		op = nil
	}
	res, err := workload.Measure(ctx, env, load, op)
	n := verified.Sum()
	res.Unit = fmt.Sprintf("pipeline of %d %s requests", p.Pipeline, st.Phase)
	res.Verify = results.Verify{Checked: n}
	requests := res.Ops * int64(p.Pipeline)
	res.Metrics = map[string]float64{"requests": float64(requests), "requests_per_s": float64(requests) / res.Seconds, "pipeline": float64(p.Pipeline), "connections": float64(conns), "event_loops": float64(loops)}
	return res, err
}

// conn is one connection and the keys of its current pipeline.
type conn struct {
	s    Session
	p    Params
	keys [][]byte
	kbuf []byte
}

// keysOf makes pipeline seq's keys "key:N" (N = 0 without a keyspace),
// valid until the next call.
func (c *conn) keysOf(seq int64) [][]byte {
	c.kbuf = c.kbuf[:0]
	for i := 0; i < c.p.Pipeline; i++ {
		start := len(c.kbuf)
		c.kbuf = append(c.kbuf, "key:"...)
		var k int64
		if c.p.Keyspace > 0 {
			k = int64(gen.SplitMix(uint64(seq)*uint64(c.p.Pipeline)+uint64(i)) % uint64(c.p.Keyspace))
		}
		c.kbuf = strconv.AppendInt(c.kbuf, k, 10)
		c.keys[i] = c.kbuf[start:len(c.kbuf):len(c.kbuf)]
	}
	return c.keys
}

// eventSessions hands every connection to an event loop when the client
// is "events" and every session can be (none otherwise: nil, and the
// goroutine path runs). Each connection checks its GETs into its own
// count (check's w): the loops share nothing per operation.
func eventSessions(cs []conn, p Params, set bool, value []byte, check func(w int, key, v []byte) error) ([]evloop.Conn, error) {
	if p.Client != "events" || !evloop.Supported {
		return nil, nil
	}
	for _, c := range cs {
		if _, ok := c.s.(Evented); !ok {
			return nil, nil
		}
	}
	out := make([]evloop.Conn, len(cs))
	for i := range cs {
		c := &cs[i]
		var keys [][]byte
		pl := Pipeline{Set: set, Value: value,
			Keys: func(seq int64) [][]byte { keys = c.keysOf(seq); return keys },
			Got:  func(j int, v []byte) error { return check(i, keys[j], v) },
		}
		s, err := c.s.(Evented).Events(fmt.Sprintf("connection %d", i+1), pl)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func init() { tconn.AddOwnKeyPrefixes("key:") }
