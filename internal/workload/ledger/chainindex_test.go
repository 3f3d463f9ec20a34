package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
)

// countPrefix is the number of keys of s that start with prefix.
func countPrefix(t *testing.T, s kv.Store, prefix byte) int64 {
	t.Helper()
	var n int64
	lower := []byte{prefix}
	if err := s.Scan(lower, kv.PrefixEnd(lower), func(_, _ []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// runIndexStudy runs every step of walkStudy with the sets on fresh
// pebble stores and checks, after each, the chain index keys against
// wantIndex (true: one per transaction written, false: none) and every
// chain step read and verified whole.
func runIndexStudy(t *testing.T, wantIndex bool, sets ...string) {
	t.Helper()
	steps := worktest.Plan(t, Ledger{}, walkStudy, sets...)
	var store kv.Store
	var txns int64 // transactions written into the current store
	for _, st := range steps {
		if st.Fresh {
			store = openPebble(t)
			txns = 0
		}
		res, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, st)
		if err != nil {
			t.Fatalf("%s N=%d: %v", st.Phase, st.N, err)
		}
		switch st.Phase {
		case "insert":
			txns += st.N
			if noIndex := strings.HasSuffix(res.Unit, unitNoIndex); noIndex == wantIndex {
				t.Fatalf("insert unit %q does not say whether the chain index was written (want index %v)", res.Unit, wantIndex)
			}
		case "chain":
			l := int64(res.Metrics["length"])
			txns += 2 * l // the sample chains
			if res.Ops != 2 || res.Verify.Checked != 2*l {
				t.Fatalf("chain %d: ops %d checked %d", l, res.Ops, res.Verify.Checked)
			}
		}
		if got := countPrefix(t, store, prefixTx); got != txns {
			t.Fatalf("after %s N=%d: %d transactions stored, %d written", st.Phase, st.N, got, txns)
		}
		want := int64(0)
		if wantIndex {
			want = txns
		}
		if got := countPrefix(t, store, prefixChain); got != want {
			t.Fatalf("after %s N=%d: %d chain index keys, want %d (chains.index %v)", st.Phase, st.N, got, want, wantIndex)
		}
	}
}

// chains.index false writes each transaction by its address only (the
// seed's store): no chain index key, and every walked chain still read
// and verified.
func TestWalkOnlyWritesNoChainIndex(t *testing.T) {
	runIndexStudy(t, false, "ledger.chains.index=false")
}

// The default writes the index under walk too, and select index reads
// chains through it.
func TestChainIndexWrittenByDefault(t *testing.T) {
	runIndexStudy(t, true)
	runIndexStudy(t, true, "ledger.chains.select=index")
}

// Without its index a layout offers no chain select: an index select, or
// a background scan, with chains.index false is refused before anything
// runs, and Chain on such a store fails rather than reading nothing.
func TestNoChainIndexRefusesIndexReads(t *testing.T) {
	for _, set := range []string{"ledger.chains.select=index", "ledger.stress.background={task: scan}"} {
		s, err := study.Parse("t.yaml", []byte(walkStudy))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Set: []string{"ledger.chains.index=false", set}}); err != nil {
			t.Fatal(err)
		}
		_, err = Ledger{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
		var se *study.Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "chains.index") {
			t.Fatalf("%s with chains.index false: %v", set, err)
		}
	}
	u, ok := withoutChainIndex(KVStore{KV: openPebble(t)})
	if !ok {
		t.Fatal("the key-value layout cannot drop its chain index")
	}
	if err := u.Chain(context.Background(), make([]byte, 32), func(Tx) bool { return true }); !errors.Is(err, errNoChainIndex) {
		t.Fatalf("Chain without an index: %v", err)
	}
}

// The report says which inserts wrote the chain index.
func TestReportNamesTheInsertIndex(t *testing.T) {
	for _, c := range []struct {
		unit, want string
	}{
		{"write batch of 1 txns" + unitNoIndex, "`ledger.chains.index: false`"},
		{"write batch of 100 txns", "`ledger.chains.index: true`"},
	} {
		run := &results.Run{Study: "x", Ladder: []int64{10}, Targets: []*results.Target{{Name: "pebble", Title: "Pebble", Status: "ok",
			Steps: []*results.Step{{Workload: "ledger", Phase: "insert", N: 10, Seconds: 0.5, Ops: 10, Unit: c.unit}}}}}
		var b strings.Builder
		ledger(&b, run)
		if !strings.Contains(b.String(), c.want) || strings.Contains(b.String(), unitNoIndex) {
			t.Fatalf("unit %q: report does not name %s:\n%s", c.unit, c.want, b.String())
		}
	}
}
