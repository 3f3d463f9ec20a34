// Package adsrw is the basic read & write test of seed 001: blocks of
// fresh key-value pairs written into an authenticated data structure (or a
// plain engine, one atomic batch per block), a commit per block, then
// random reads of written keys, once by one reader and once by many. It
// runs on any target that package ads can present as an ads.Store.
package adsrw

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
	"storebench/internal/workload/gen"
	"storebench/internal/workload/roots"
)

// Name is the workload's name in study files.
const Name = "ads-rw"

func init() { workload.Register(Workload{}) }

// Params are the workload's study parameters (see studies/ads-rw.yaml).
// The number of pairs written is the ladder size N.
type Params struct {
	BlockSize  study.Count `yaml:"block_size" json:"block_size" range:"1..1e6"`
	KeyBytes   int         `yaml:"key_bytes" json:"key_bytes" range:"16..1024"`
	ValueBytes int         `yaml:"value_bytes" json:"value_bytes" range:"1..1048576"`
	Reads      study.Count `yaml:"reads" json:"reads" range:"0..1e12"`
	Readers    int         `yaml:"readers" json:"readers" range:"1..4096"`
}

func defaults() Params {
	return Params{BlockSize: 10000, KeyBytes: 32, ValueBytes: 32, Reads: 327680, Readers: 64}
}

// Workload implements workload.Workload.
type Workload struct{}

func (Workload) Name() string { return Name }
func (Workload) Describe() string {
	return "ADS basic read & write (seed 001): blocks of fresh 32-byte pairs, a commit (root) per block, then random reads, serial and 64 readers"
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
	case p.BlockSize < 1 || p.BlockSize > 1_000_000:
		return nil, bad("block_size", "%d: want 1..1e6 pairs per block", p.BlockSize)
	case p.KeyBytes < 16 || p.KeyBytes > 1024:
		// Keys are hashes of their index: 16 bytes keep collisions out
		// of reach at any size storebench supports.
		return nil, bad("key_bytes", "%d: want 16..1024", p.KeyBytes)
	case p.ValueBytes < 1 || p.ValueBytes > 1<<20:
		return nil, bad("value_bytes", "%d: want 1..1048576", p.ValueBytes)
	case p.Readers < 1 || p.Readers > 4096:
		return nil, bad("readers", "%d: want 1..4096 concurrent readers", p.Readers)
	}
	return json.Marshal(p)
}

// Plan: at each ladder size N, a fresh store gets N pairs (create), then
// the reads run on it, serial first.
func (Workload) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var steps []workload.Step
	for _, c := range s.Ladder {
		add := func(phase string, fresh bool, conc int) {
			steps = append(steps, workload.Step{Workload: Name, Phase: phase, N: int64(c), Fresh: fresh,
				Seed: s.Seed, Concurrency: conc, Params: raw, Largest: s.Largest(),
				// Blocks of writes committed atomically (an authenticated
				// store's blocks, a plain engine's batches), read back.
				Requires: target.Caps{target.Batch}})
		}
		add("create", true, 1)
		if p.Reads > 0 {
			add("read-serial", false, 1)
			add("read-parallel", false, p.Readers)
		}
	}
	return steps, nil
}

func (Workload) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, fmt.Errorf("%s: bad step params: %w", Name, err)
	}
	store, ok := ads.As(env.Target)
	if !ok {
		return nil, fmt.Errorf("%s: target is neither an authenticated store nor a key-value store", Name)
	}
	r := &run{env: env, st: st, p: p, store: store, d: data{seed: uint64(st.Seed), keyLen: p.KeyBytes, valLen: p.ValueBytes}}
	var res *results.Step
	var err error
	switch st.Phase {
	case "create":
		res, _, err = r.create(ctx, false)
	case "read-serial":
		res, err = r.read(ctx, 1, tagReadSerial)
	case "read-parallel":
		res, err = r.read(ctx, p.Readers, tagReadParallel)
	default:
		return nil, fmt.Errorf("%s: unknown phase %q", Name, st.Phase)
	}
	// An item is one pair: its key and its value, as create writes them.
	workload.SetItemBytes(res, float64(p.KeyBytes+p.ValueBytes))
	return res, err
}

// Tags separate the generator's streams: keys, values and the two read
// sequences never share an input.
const (
	tagKey uint64 = iota + 1
	tagValue
	tagReadSerial
	tagReadParallel
)

// data derives pair i from the seed alone, so every engine gets the same
// pairs and a reader regenerates what it should find.
type data struct {
	seed           uint64
	keyLen, valLen int
}

func fill(dst []byte, seed, tag, i uint64) []byte {
	x := gen.Mix(seed, tag, i)
	var w [8]byte
	for off := 0; off < len(dst); off += 8 {
		binary.BigEndian.PutUint64(w[:], gen.SplitMix(x+uint64(off)))
		copy(dst[off:], w[:])
	}
	return dst
}

func (d data) key(dst []byte, i uint64) []byte { return fill(grow(dst, d.keyLen), d.seed, tagKey, i) }
func (d data) value(dst []byte, i uint64) []byte {
	return fill(grow(dst, d.valLen), d.seed, tagValue, i)
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

type run struct {
	env   *workload.Env
	st    workload.Step
	p     Params
	store ads.Store
	d     data
}

// create writes N pairs in blocks of block_size, one commit per block,
// one timed operation per block. keep returns every block's root (tests).
func (r *run) create(ctx context.Context, keep bool) (*results.Step, [][]byte, error) {
	n := uint64(r.st.N)
	k := uint64(r.p.BlockSize)
	blocks := int64((n + k - 1) / k)
	chain := roots.Chain{Keep: keep}
	var commit time.Duration
	res, err := workload.Measure(ctx, r.env, workload.Closed(1, blocks), func(ctx context.Context, _ int, b int64) error {
		lo, hi := uint64(b)*k, min(uint64(b+1)*k, n)
		// A fresh slab per block: a store may keep the slices it was
		// given until the block is committed.
		slab := make([]byte, int(hi-lo)*(r.d.keyLen+r.d.valLen))
		for i := lo; i < hi; i++ {
			pair := slab[:r.d.keyLen+r.d.valLen]
			slab = slab[len(pair):]
			if err := r.store.Set(r.d.key(pair[:r.d.keyLen], i), r.d.value(pair[r.d.keyLen:], i)); err != nil {
				return fmt.Errorf("block %d: set pair %d: %w", b, i, err)
			}
		}
		t := time.Now()
		root, _, err := r.store.Commit()
		commit += time.Since(t)
		if err != nil {
			return fmt.Errorf("block %d: commit: %w", b, err)
		}
		chain.Add(root)
		return nil
	})
	res.Unit = fmt.Sprintf("block of %d pairs (set each, then commit)", k)
	res.Metrics = map[string]float64{"pairs": float64(n), "blocks": float64(blocks), "block_size": float64(k),
		"pairs_per_s": float64(res.Ops*int64(k)) / res.Seconds, "commit_seconds": commit.Seconds()}
	chain.Fill(res)
	return res, chain.All, err
}

// read gets reads random written keys with the given number of readers,
// each value compared byte for byte with what was written.
func (r *run) read(ctx context.Context, readers int, tag uint64) (*results.Step, error) {
	n := uint64(r.st.N)
	reads := int64(r.p.Reads)
	type buf struct{ key, want []byte }
	bufs := make([]buf, readers)
	phase := r.st.Phase
	res, err := workload.Measure(ctx, r.env, workload.Closed(readers, reads), func(ctx context.Context, w int, seq int64) error {
		b := &bufs[w]
		i := gen.Mix(r.d.seed, tag, uint64(seq)) % n
		b.key = r.d.key(b.key, i)
		got, err := r.store.Get(b.key)
		if errors.Is(err, kv.ErrNotFound) {
			return &workload.VerifyError{Phase: phase, Key: b.key, What: fmt.Sprintf("pair %d is missing", i)}
		}
		if err != nil {
			return fmt.Errorf("get pair %d: %w", i, err)
		}
		b.want = r.d.value(b.want, i)
		if !bytes.Equal(got, b.want) {
			return &workload.VerifyError{Phase: phase, Key: b.key, What: fmt.Sprintf("value of pair %d differs from what was written (%d bytes read, %d written)", i, len(got), len(b.want))}
		}
		return nil
	})
	res.Unit = "get one random written key"
	res.Verify = results.Verify{Checked: res.Ops}
	res.Metrics = map[string]float64{"readers": float64(readers), "reads_per_s": float64(res.Ops) / res.Seconds}
	return res, err
}
