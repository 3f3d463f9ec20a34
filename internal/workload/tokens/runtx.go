package tokens

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"time"

	"storebench/internal/results"
	"storebench/internal/workload"
	"storebench/internal/workload/roots"
)

// outcome counts what became of the transfers of a runtx step.
type outcome struct {
	applied int64
	// Rejected after the fee: the sender paid gas and its sequence moved
	// on, as on chains that charge the fee before running the message.
	insufficient int64 // the sender's balance of the token was too low
	overflow     int64 // the receiver's balance would have overflowed
	// Rejected before the fee: the sender could not pay gas. By
	// construction (genesis reserves gas for every transfer) this never
	// happens; if it did, the sequence invariant would flag it.
	noGas  int64
	burned uint64
}

// executor applies transfers to the store with every check a chain makes.
type executor struct {
	r    *run
	s, v Account // sender and receiver, decoded
	sk   []byte
	rk   []byte
	out  outcome
}

// apply runs transfer t: read both accounts, charge gas and move the
// sequence, check and move the amount, write both accounts back.
func (x *executor) apply(t uint64) error {
	m, store := x.r.m, x.r.store
	tr := m.transfer(t)
	// Fresh keys and values per write: a store may keep what it was given
	// until the block is committed.
	x.sk = m.address(nil, tr.sender)
	if _, err := x.r.get(&x.s, x.sk, tr.sender); err != nil {
		return err
	}
	// Ante: the fee first. A sender that cannot pay is rejected outright.
	native, borrow := bits.Sub64(x.s.Native, m.gas, 0)
	if borrow != 0 {
		x.out.noGas++
		return nil
	}
	x.s.Native = native
	x.s.Seq++
	x.out.burned += m.gas

	x.rk = m.address(nil, tr.receiver)
	if _, err := x.r.get(&x.v, x.rk, tr.receiver); err != nil {
		return err
	}
	if x.move(tr) {
		if err := store.Set(x.rk, x.v.Encode(nil)); err != nil {
			return fmt.Errorf("transfer %d: set receiver: %w", t, err)
		}
	}
	if err := store.Set(x.sk, x.s.Encode(nil)); err != nil {
		return fmt.Errorf("transfer %d: set sender: %w", t, err)
	}
	return nil
}

// move checks and moves the amount of tr's token from sender to receiver;
// false when a check rejects it (the fee stays paid).
func (x *executor) move(tr transfer) bool {
	si := x.s.Find(tr.token)
	var bal uint64
	if si >= 0 {
		bal = x.s.Amounts[si]
	}
	ri := x.v.Find(tr.token)
	var rb uint64
	if ri >= 0 {
		rb = x.v.Amounts[ri]
	}
	// The amount is drawn within what the sender has and the receiver can
	// still hold, like the seed's "amounts chosen so that they neither
	// overflow nor underflow"; the checks below still run on it.
	limit := min(bal, math.MaxUint64-rb)
	if limit == 0 {
		if bal == 0 {
			x.out.insufficient++
		} else {
			x.out.overflow++
		}
		return false
	}
	amount := 1 + tr.draw%limit
	left, borrow := bits.Sub64(bal, amount, 0)
	if si < 0 || borrow != 0 {
		x.out.insufficient++
		return false
	}
	sum, carry := bits.Add64(rb, amount, 0)
	if carry != 0 {
		x.out.overflow++
		return false
	}
	x.s.Amounts[si] = left
	if ri < 0 {
		x.v.Insert(tr.token, sum)
	} else {
		x.v.Amounts[ri] = sum
	}
	x.out.applied++
	return true
}

// runtx runs runtx.blocks blocks of runtx.block_size transfers, one timed
// operation per transfer; the last transfer of a block also commits it
// (commit time is reported apart as well).
func (r *run) runtx(ctx context.Context, keep bool) (*results.Step, [][]byte, error) {
	bs := uint64(r.p.Runtx.BlockSize)
	total := int64(r.p.Runtx.Blocks) * int64(bs)
	x := &executor{r: r}
	chain := roots.Chain{Keep: keep}
	var commit time.Duration
	res, err := workload.Measure(ctx, r.env, workload.Closed(1, total), func(ctx context.Context, _ int, seq int64) error {
		t := uint64(seq)
		if err := x.apply(t); err != nil {
			return err
		}
		if (t+1)%bs != 0 {
			return nil
		}
		c := time.Now()
		root, _, err := r.store.Commit()
		commit += time.Since(c)
		if err != nil {
			return fmt.Errorf("block %d: commit: %w", t/bs, err)
		}
		chain.Add(root)
		return nil
	})
	o := x.out
	blocks := res.Ops / int64(bs)
	res.Unit = "one transfer (the block's last also commits it)"
	res.Metrics = map[string]float64{
		"blocks": float64(blocks), "block_size": float64(bs), "transfers": float64(res.Ops),
		"tps":                   float64(blocks*int64(bs)) / res.Seconds,
		"applied":               float64(o.applied),
		"rejected_insufficient": float64(o.insufficient),
		"rejected_overflow":     float64(o.overflow),
		"rejected_no_gas":       float64(o.noGas),
		"gas_burned":            float64(o.burned),
		"commit_seconds":        commit.Seconds(),
	}
	chain.Fill(res)
	return res, chain.All, err
}
