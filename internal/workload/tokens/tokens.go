// Package tokens is the transaction test of seed 001: a chain with one
// native token and fungible tokens, n accounts each holding some of them.
// Genacc creates the accounts block by block, Checkacc reads them all back
// in random order, Runtx runs blocks of random transfers with every check
// a chain makes (balance, overflow, gas, sequence), and a last step checks
// the invariants (supplies unchanged but for burned gas, sequences equal
// to transfers sent, no negative balance). Accounts and transfers are
// regenerated from the seed, so the harness holds none of them.
package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
	"storebench/internal/workload/roots"
)

// Name is the workload's name in study files.
const Name = "tokens"

func init() { workload.Register(Workload{}) }

// Params are the workload's study parameters (see studies/tokens.yaml).
// The number of accounts n is the ladder size.
type Params struct {
	Tokens   int         `yaml:"tokens" json:"tokens" range:"1..255"`
	MaxTypes int         `yaml:"max_types" json:"max_types" range:"1..255"`
	Gas      study.Count `yaml:"gas" json:"gas" range:"0..1e6"`
	Readers  int         `yaml:"readers" json:"readers" range:"0..4096"`
	Genacc   struct {
		BlockSize study.Count `yaml:"block_size" json:"block_size" range:"1..1e6"`
	} `yaml:"genacc" json:"genacc"`
	Runtx struct {
		Blocks    study.Count `yaml:"blocks" json:"blocks" range:"0..1e6"`
		BlockSize study.Count `yaml:"block_size" json:"block_size" range:"1..1e6"`
	} `yaml:"runtx" json:"runtx"`
}

func defaults() Params {
	var p Params
	p.Tokens, p.MaxTypes, p.Gas = 100, 20, 10
	p.Genacc.BlockSize = 20000
	p.Runtx.Blocks, p.Runtx.BlockSize = 20, 32768
	return p
}

// Workload implements workload.Workload.
type Workload struct{}

func (Workload) Name() string { return Name }
func (Workload) Describe() string {
	return "token transfers (seed 001): genacc, checkacc, runtx blocks of 32768 checked transfers, then supply/sequence invariants"
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
	case p.Tokens < 1 || p.Tokens > 255:
		return nil, bad("tokens", "%d: want 1..255 fungible tokens (ids are one byte; 0 is the native token)", p.Tokens)
	case p.MaxTypes < 1 || p.MaxTypes > p.Tokens:
		return nil, bad("max_types", "%d: want 1..tokens (%d) token types per account", p.MaxTypes, p.Tokens)
	case p.Gas > 1_000_000:
		return nil, bad("gas", "%d: want at most 1e6 native tokens per transfer", p.Gas)
	case p.Readers < 0 || p.Readers > 4096:
		return nil, bad("readers", "%d: want 0 (the study's concurrency) or up to 4096", p.Readers)
	case p.Genacc.BlockSize < 1 || p.Genacc.BlockSize > 1_000_000:
		return nil, bad("genacc.block_size", "%d: want 1..1e6 accounts per block", p.Genacc.BlockSize)
	case p.Runtx.BlockSize < 1 || p.Runtx.BlockSize > 1_000_000:
		return nil, bad("runtx.block_size", "%d: want 1..1e6 transfers per block", p.Runtx.BlockSize)
	case p.Runtx.Blocks > 1_000_000:
		return nil, bad("runtx.blocks", "%d: want at most 1e6 blocks", p.Runtx.Blocks)
	case uint64(p.Runtx.Blocks)*uint64(p.Runtx.BlockSize) >= 1<<32:
		return nil, bad("runtx.blocks", "%d blocks of %d transfers: at most 2^32 transfers in all", p.Runtx.Blocks, p.Runtx.BlockSize)
	}
	if p.Readers == 0 {
		p.Readers = s.Concurrency
	}
	// Every supply must be exact in 64 bits: the largest n times the
	// largest genesis native balance (which reserves gas for every
	// transfer an account could send) must fit.
	for i, c := range s.Ladder {
		if c < 2 {
			return nil, &study.Error{File: s.File, Field: fmt.Sprintf("ladder[%d]", i), Msg: "tokens needs at least 2 accounts (a transfer has a sender and a receiver)"}
		}
		m := newModel(s.Seed, int64(c), p)
		if hi, _ := bits.Mul64(uint64(c), m.nativeBase+maxNativeExtra); hi != 0 {
			return nil, bad("runtx.blocks", "%s accounts each holding gas for %d transfers overflow a 64-bit native supply: fewer blocks or accounts", study.FormatCount(int64(c)), uint64(p.Runtx.Blocks)*uint64(p.Runtx.BlockSize))
		}
	}
	return json.Marshal(p)
}

// Plan: at each ladder size n, on a fresh store: genacc, checkacc, runtx
// (unless runtx.blocks is 0), invariants.
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
		add("genacc", true, 1)
		add("checkacc", false, p.Readers)
		if p.Runtx.Blocks > 0 {
			add("runtx", false, 1)
		}
		add("invariants", false, p.Readers)
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
	r := &run{env: env, st: st, p: p, store: store, m: newModel(st.Seed, st.N, p)}
	var res *results.Step
	var err error
	switch st.Phase {
	case "genacc":
		res, _, err = r.genacc(ctx, false)
	case "checkacc":
		res, err = r.checkacc(ctx)
	case "runtx":
		res, _, err = r.runtx(ctx, false)
	case "invariants":
		res, err = r.invariants(ctx)
	default:
		return nil, fmt.Errorf("%s: unknown phase %q", Name, st.Phase)
	}
	workload.SetItemBytes(res, itemBytes(p))
	return res, err
}

// itemBytes is one account as genacc writes it: its address (the key)
// and its encoding (Account.Encode: the header and 9 bytes per token
// held), at the mean number of tokens an account holds at genesis
// (holdingCount: 1..max_types, uniform). Transfers to an account that
// did not hold the token add an entry later.
func itemBytes(p Params) float64 {
	return AddrLen + headerLen + 9*float64(1+p.MaxTypes)/2
}

type run struct {
	env   *workload.Env
	st    workload.Step
	p     Params
	store ads.Store
	m     *model
}

// genacc writes the n genesis accounts, genacc.block_size per block and a
// commit per block; one timed operation per block.
func (r *run) genacc(ctx context.Context, keep bool) (*results.Step, [][]byte, error) {
	n, k := r.m.n, uint64(r.p.Genacc.BlockSize)
	blocks := int64((n + k - 1) / k)
	chain := roots.Chain{Keep: keep}
	var acct Account
	var commit time.Duration
	res, err := workload.Measure(ctx, r.env, workload.Closed(1, blocks), func(ctx context.Context, _ int, b int64) error {
		lo, hi := uint64(b)*k, min(uint64(b+1)*k, n)
		for i := lo; i < hi; i++ {
			r.m.genesis(&acct, i)
			// Fresh slices per account: a store may keep what it was
			// given until the commit.
			key := r.m.address(nil, i)
			if err := r.store.Set(key, acct.Encode(make([]byte, 0, headerLen+9*len(acct.IDs)))); err != nil {
				return fmt.Errorf("block %d: set account %d: %w", b, i, err)
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
	res.Unit = fmt.Sprintf("block of %d new accounts (set each, then commit)", k)
	res.Metrics = map[string]float64{"accounts": float64(n), "blocks": float64(blocks), "block_size": float64(k),
		"accounts_per_s": float64(min(uint64(res.Ops)*k, n)) / res.Seconds, "commit_seconds": commit.Seconds()}
	chain.Fill(res)
	return res, chain.All, err
}

// get reads account i into a, failing verification when it is missing or
// malformed.
func (r *run) get(a *Account, key []byte, i uint64) ([]byte, error) {
	v, err := r.store.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, &workload.VerifyError{Phase: r.st.Phase, Key: key, What: fmt.Sprintf("account %d is missing", i)}
	}
	if err != nil {
		return nil, fmt.Errorf("get account %d: %w", i, err)
	}
	if err := a.Decode(v, r.p.Tokens); err != nil {
		return nil, &workload.VerifyError{Phase: r.st.Phase, Key: key, What: fmt.Sprintf("account %d: %v", i, err)}
	}
	return v, nil
}

// checkacc reads every account in a random order (a permutation of the
// indices) and compares it with its genesis state, byte for byte.
func (r *run) checkacc(ctx context.Context) (*results.Step, error) {
	readers := max(r.st.Concurrency, 1)
	ord := r.m.order()
	type buf struct {
		key, want []byte
		got, gen  Account
	}
	bufs := make([]buf, readers)
	n := int64(r.m.n)
	res, err := workload.Measure(ctx, r.env, workload.Closed(readers, n), func(ctx context.Context, w int, seq int64) error {
		b := &bufs[w]
		i := ord.at(uint64(seq))
		b.key = r.m.address(b.key, i)
		v, err := r.get(&b.got, b.key, i)
		if err != nil {
			return err
		}
		r.m.genesis(&b.gen, i)
		b.want = b.gen.Encode(b.want)
		if !bytes.Equal(v, b.want) {
			return &workload.VerifyError{Phase: "checkacc", Key: b.key, What: fmt.Sprintf("account %d differs from its genesis state", i)}
		}
		return nil
	})
	res.Unit = "read one account, random order"
	res.Verify = results.Verify{Checked: res.Ops}
	res.Metrics = map[string]float64{"accounts": float64(n), "readers": float64(readers), "accounts_per_s": float64(res.Ops) / res.Seconds}
	return res, err
}
