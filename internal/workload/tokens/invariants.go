package tokens

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/results"
	"storebench/internal/workload"
)

// chunkAccounts bounds the memory of the sequence check: expected
// sequences are counted for this many accounts at a time (4 bytes each),
// by replaying the transfer generator once per chunk. The generator is
// pure arithmetic, so a replay costs seconds even at the seed's scale.
const chunkAccounts = 1 << 22

// tally is one reader's share of the invariant check.
type tally struct {
	genesis, end []uint64 // supply per token id (0: native)
	checked      int64
	seqWrong     int64
	negative     int64
	overflow     bool
	first        error
}

func (t *tally) fail(err error) {
	if t.first == nil {
		t.first = err
	}
}

func addTo(sum []uint64, id int, v uint64) bool {
	s, c := bits.Add64(sum[id], v, 0)
	sum[id] = s
	return c == 0
}

// invariants reads every account once and checks, after runtx:
//   - the supply of every fungible token equals its genesis supply, and
//     the native supply equals genesis minus the gas burned by runtx;
//   - every sequence number equals the transfers the account sent;
//   - no balance is negative: a balance is unsigned, so an unchecked
//     subtraction below zero would wrap to near 2^64, far above the most
//     any account can hold (n times the largest genesis amount).
//
// Expected values come from the generator (genesis per account, senders
// per transfer), never from a copy of the data. Any violation fails the
// step with the first one found; the counts are in the step's metrics.
func (r *run) invariants(ctx context.Context) (*results.Step, error) {
	m := r.m
	transfers := uint64(r.p.Runtx.Blocks) * uint64(r.p.Runtx.BlockSize)
	readers := max(r.st.Concurrency, 1)
	ids := r.p.Tokens + 1
	tallies := make([]*tally, readers)
	for w := range tallies {
		tallies[w] = &tally{genesis: make([]uint64, ids), end: make([]uint64, ids)}
	}
	c := &checker{ctx: ctx, r: r}
	fungibleCap, _ := bits.Mul64(m.n, maxGenesisAmount)
	c.bound = [2]uint64{m.nativeBase + maxNativeExtra, m.n * maxGenesisAmount}
	if fungibleCap != 0 {
		c.bound[1] = ^uint64(0)
	}
	stopProgress := r.progress(&c.done)
	start := time.Now()
	c.counts = make([]uint32, min(m.n, chunkAccounts))
	for lo := uint64(0); lo < m.n && ctx.Err() == nil; lo += chunkAccounts {
		hi := min(lo+chunkAccounts, m.n)
		c.countSent(lo, hi, transfers)
		var wg sync.WaitGroup
		per := (hi - lo + uint64(readers) - 1) / uint64(readers)
		for w := 0; w < readers; w++ {
			a, b := lo+uint64(w)*per, min(lo+uint64(w+1)*per, hi)
			if a >= b {
				continue
			}
			wg.Add(1)
			go func(t *tally) {
				defer wg.Done()
				c.readRange(t, a, b)
			}(tallies[w])
		}
		wg.Wait()
	}
	stopProgress()
	res := &results.Step{Started: start, Seconds: time.Since(start).Seconds(), Ops: c.done.Load(),
		Unit: "account read and checked against the invariants", Partial: ctx.Err() != nil}

	total := mergeTallies(tallies, ids)
	// Gas: every transfer pays it (genesis reserves enough), and it is
	// burned, so the native supply shrinks by exactly that.
	burned := transfers * m.gas
	supplyWrong := total.checkSupply(burned)
	res.Verify = results.Verify{Checked: total.checked}
	res.Metrics = map[string]float64{
		"accounts":              float64(total.checked),
		"tokens":                float64(ids),
		"transfers":             float64(transfers),
		"supply_mismatches":     float64(supplyWrong),
		"sequence_mismatches":   float64(total.seqWrong),
		"negative_balances":     float64(total.negative),
		"gas_burned":            float64(burned),
		"native_supply_genesis": float64(total.genesis[Native]),
		"native_supply_end":     float64(total.end[Native]),
		"readers":               float64(readers),
	}
	if res.Partial {
		return res, nil
	}
	ok := 0.0
	if total.first == nil {
		ok = 1
	}
	res.Metrics["invariants_hold"] = ok
	return res, total.first
}

// checker is what the readers of the invariant check share: the chunk
// of accounts being checked (from lo, the transfers each sent in
// counts), the bounds above which a balance has wrapped below zero
// (native, fungible) and the accounts done.
type checker struct {
	ctx    context.Context
	r      *run
	lo     uint64
	counts []uint32
	bound  [2]uint64
	done   atomic.Int64
}

// countSent starts the chunk of accounts [lo, hi): it counts the
// transfers each of them sent, replaying the transfer generator.
func (c *checker) countSent(lo, hi, transfers uint64) {
	c.lo = lo
	clear(c.counts)
	for t := uint64(0); t < transfers; t++ {
		if s := c.r.m.sender(t); s >= lo && s < hi {
			c.counts[s-lo]++
		}
	}
}

// readRange reads the accounts [a, b) of the chunk and checks each into
// tally t.
func (c *checker) readRange(t *tally, a, b uint64) {
	m := c.r.m
	var got, gen Account
	var key []byte
	for i := a; i < b && c.ctx.Err() == nil; i++ {
		key = m.address(key, i)
		if _, err := c.r.get(&got, key, i); err != nil {
			t.fail(err)
			c.done.Add(1)
			continue
		}
		t.checked++
		c.done.Add(1)
		c.check(t, i, key, &got)
		m.genesis(&gen, i)
		t.overflow = t.overflow || !addTo(t.genesis, Native, gen.Native)
		for k, id := range gen.IDs {
			t.overflow = t.overflow || !addTo(t.genesis, int(id), gen.Amounts[k])
		}
	}
}

// check checks account i (at key, read as got) into tally t: its
// sequence against the transfers it sent, its balances against the
// bounds, and adds them to the supply at the end.
func (c *checker) check(t *tally, i uint64, key []byte, got *Account) {
	if sent := c.counts[i-c.lo]; got.Seq != uint64(sent) {
		t.seqWrong++
		t.fail(&workload.VerifyError{Phase: "invariants", Key: key, What: fmt.Sprintf("account %d has sequence %d but sent %d transfers", i, got.Seq, sent)})
	}
	if got.Native > c.bound[0] {
		t.negative++
		t.fail(&workload.VerifyError{Phase: "invariants", Key: key, What: fmt.Sprintf("account %d: native balance %d is beyond any possible one (negative, wrapped)", i, got.Native)})
	}
	t.overflow = t.overflow || !addTo(t.end, Native, got.Native)
	for k, id := range got.IDs {
		if got.Amounts[k] > c.bound[1] {
			t.negative++
			t.fail(&workload.VerifyError{Phase: "invariants", Key: key, What: fmt.Sprintf("account %d: balance %d of token %d is beyond any possible one (negative, wrapped)", i, got.Amounts[k], id)})
		}
		t.overflow = t.overflow || !addTo(t.end, int(id), got.Amounts[k])
	}
}

// mergeTallies merges the readers' tallies (ids token ids).
func mergeTallies(tallies []*tally, ids int) *tally {
	total := &tally{genesis: make([]uint64, ids), end: make([]uint64, ids)}
	for _, t := range tallies {
		total.checked += t.checked
		total.seqWrong += t.seqWrong
		total.negative += t.negative
		total.overflow = total.overflow || t.overflow
		if total.first == nil {
			total.first = t.first
		}
		for id := range ids {
			total.overflow = total.overflow || !addTo(total.genesis, id, t.genesis[id]) || !addTo(total.end, id, t.end[id])
		}
	}
	return total
}

// checkSupply checks every token's supply at the end against its genesis
// supply (the native one less the gas burned) and that no sum
// overflowed; it returns how many supplies are wrong.
func (t *tally) checkSupply(burned uint64) int {
	wrong := 0
	for id := range t.genesis {
		want := t.genesis[id]
		if id == Native {
			want -= burned
		}
		if t.end[id] != want {
			wrong++
			t.fail(&workload.VerifyError{Phase: "invariants", Key: []byte{byte(id)}, What: fmt.Sprintf("supply of token %d is %d, want %d", id, t.end[id], want)})
		}
	}
	if t.overflow {
		t.fail(&workload.VerifyError{Phase: "invariants", What: "a supply overflowed 64 bits"})
	}
	return wrong
}

// progress reports done out of n every half second until stopped.
func (r *run) progress(done *atomic.Int64) (stop func()) {
	if r.env.Progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				r.env.Progress(done.Load(), int64(r.m.n))
				return
			case <-t.C:
				r.env.Progress(done.Load(), int64(r.m.n))
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}
