package ledger

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/workload"
)

// The seed's method on a small scale: one txn per write, chains walked
// from the last transaction back by prev addresses.
const walkStudy = `
name: t
ladder: [10, 300]
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 100
      batch: 1
      selects: 5
      within_ladder: true
      chains: {lengths: [10, 100, 1000], samples: 2, select: walk}
      stress: {duration: 0s}
      balance: {addresses: 1e6, reads: 20}
`

// brokenLink is a store whose copy of one transaction has a wrong prev
// address: the break a walk from prev to prev must notice.
type brokenLink struct {
	kv.Store
	key []byte
}

func (b brokenLink) Get(k []byte) ([]byte, error) {
	v, err := b.Store.Get(k)
	if err == nil && bytes.Equal(k, b.key) {
		v = append([]byte(nil), v...)
		v[40] ^= 1 // inside prev, [32:64)
	}
	return v, err
}

func TestWalkReadsEveryTxnPrevToPrev(t *testing.T) {
	steps := plan(t, walkStudy)
	var lengths []int64
	for _, st := range steps {
		if st.Phase == "chain" {
			lengths = append(lengths, st.Labels.Int("length"))
		}
	}
	// within_ladder: the 1000-long chain is cut, the ladder stops at 300.
	if len(lengths) != 2 || lengths[0] != 10 || lengths[1] != 100 {
		t.Fatalf("chain lengths %v, want [10 100]", lengths)
	}
	var store kv.Store
	for _, st := range steps {
		if st.Fresh {
			store = openPebble(t)
		}
		res, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, st)
		if err != nil {
			t.Fatalf("%s N=%d: %v", st.Phase, st.N, err)
		}
		switch st.Phase {
		case "insert":
			if res.Ops != st.N { // one transaction per write
				t.Fatalf("insert N=%d: %d writes", st.N, res.Ops)
			}
		case "chain":
			l := int64(res.Metrics["length"])
			if res.Ops != 2 || res.Verify.Checked != 2*l || !strings.HasPrefix(res.Unit, "walk") {
				t.Fatalf("chain %d: ops %d checked %d unit %q", l, res.Ops, res.Verify.Checked, res.Unit)
			}
		case "balance":
			if res.Metrics["view_addresses"] != 300 {
				t.Fatalf("view of %v addresses, want the largest ladder step (300)", res.Metrics["view_addresses"])
			}
		}
	}
	// A wrong prev address in the middle of a sample chain fails the walk.
	var chain100 workload.Step
	for _, st := range steps {
		if st.Phase == "chain" && st.Labels.Int("length") == 100 {
			chain100 = st
		}
	}
	g := txGen{seed: uint64(chain100.Seed), payload: 100}
	broken := brokenLink{Store: store, key: txKey(nil, g.address(nil, uint64(1)<<32|100<<8, 50))}
	_, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: broken}, chain100)
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || ve.Phase != "chain" {
		t.Fatalf("a broken prev link was not reported: %v", err)
	}
}

// slow delays each write and read, standing for an engine that would
// take hours at the seed's sizes.
type slow struct{ kv.Store }

func (s slow) Put(k, v []byte) error {
	time.Sleep(5 * time.Millisecond)
	return s.Store.Put(k, v)
}

func (s slow) Get(k []byte) ([]byte, error) {
	time.Sleep(5 * time.Millisecond)
	return s.Store.Get(k)
}

func (s slow) NewBatch() kv.Batch {
	time.Sleep(5 * time.Millisecond)
	return s.Store.NewBatch()
}

// The phase budget stops a phase between operations (and a chain walk
// between its transactions) without stopping the target: the step says
// how far it got and at what rate, and the phases after an insert it
// stopped read only what was written.
func TestBudgetStopsAPhaseNotTheTarget(t *testing.T) {
	src := strings.Replace(walkStudy, "batch: 1\n", "batch: 1\n      budget: 200ms\n", 1)
	src = strings.Replace(src, "selects: 5", "selects: 20", 1)
	src = strings.Replace(src, "reads: 20", "reads: 100", 1)
	steps := plan(t, src)
	var store kv.Store
	cuts := map[string]bool{}
	for _, st := range steps {
		if st.Fresh {
			store = slow{openPebble(t)}
		}
		res, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, st)
		if err != nil {
			t.Fatalf("%s N=%d: %v", st.Phase, st.N, err)
		}
		if res.Partial {
			t.Fatalf("%s N=%d marked partial: the budget stops a phase, not the target", st.Phase, st.N)
		}
		if c := res.Facts["cut"]; c != "" {
			cuts[st.Phase] = true
			if !strings.Contains(c, "stopped at the phase budget of 200ms") {
				t.Errorf("%s: cut %q", st.Phase, c)
			}
		}
		switch {
		case st.Phase == "insert" && st.N == 300:
			// 300 writes of 5 ms each cannot fit in 200 ms.
			if res.Facts["cut"] == "" || res.Metrics["txns"] >= 300 || res.Metrics["txns"] < 1 {
				t.Fatalf("insert of 300 not cut: %v %v", res.Facts, res.Metrics)
			}
		case st.Phase == "select" && st.N == 300:
			// Every select found its transaction among those written.
			if res.Verify.Checked != res.Ops || res.Ops == 0 {
				t.Fatalf("select after a cut insert: %+v", res.Verify)
			}
			// ... and the step says its database is smaller than its N.
			if !strings.Contains(res.Facts["cut_db"], "of its 300 txns") {
				t.Fatalf("select after a cut insert: facts %v", res.Facts)
			}
		case st.Phase == "chain" && st.Labels.Int("length") == 100:
			// 100 reads of 5 ms: the walk stops inside its first chain.
			if res.Facts["cut_inside_op"] != "yes" || res.Verify.Checked >= 200 {
				t.Fatalf("chain walk not cut inside: %v, checked %d", res.Facts, res.Verify.Checked)
			}
		}
	}
	if !cuts["insert"] || !cuts["chain"] || !cuts["balance"] {
		t.Fatalf("cut phases %v, want insert, chain and balance", cuts)
	}
}

// The phase budget bounds the writing of a chain phase's sample chains
// too: a chain of 20,000 txns written 1,000 a batch at 5 ms a batch, three
// times, does not fit in 100 ms. The phase reads what was written, checks
// it, and says its chains are shorter than its length (cut_db).
func TestBudgetBoundsTheSampleChains(t *testing.T) {
	src := `
name: t
ladder: [10]
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 100
      batch: 1
      selects: 5
      budget: 100ms
      chains: {lengths: [20000], samples: 3, select: walk}
      stress: {duration: 0s}
      balance: {addresses: 100, reads: 5}
`
	var store kv.Store
	seen := false
	for _, st := range plan(t, src) {
		if st.Fresh {
			store = slow{openPebble(t)}
		}
		res, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, st)
		if err != nil {
			t.Fatalf("%s N=%d: %v", st.Phase, st.N, err)
		}
		if st.Phase != "chain" {
			continue
		}
		seen = true
		d := res.Facts["cut_db"]
		if !strings.Contains(d, "the sample chains hold") || !strings.Contains(d, "of their 3 × 2e4 txns") || !strings.Contains(d, "phase budget of 100ms") {
			t.Fatalf("chain of 2e4: cut_db %q, want the sample chains cut at the budget", d)
		}
		if res.Verify.Checked == 0 || res.Verify.Checked >= 60000 {
			t.Fatalf("chain of 2e4: %d txns checked, want some of what was written", res.Verify.Checked)
		}
	}
	if !seen {
		t.Fatal("no chain step planned")
	}
}
