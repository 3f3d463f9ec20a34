package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/sweep"
	_ "storebench/internal/target/pebble"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
)

const smallStudy = `
name: t
ladder: [10, 1000]
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 200
      batch: 64
      selects: 300
      chains: {lengths: [10, 100], samples: 2}
      stress: {duration: 500ms, rate: 400, read_fraction: 0.5}
      balance: {addresses: 5000, reads: 500}
`

func plan(t *testing.T, src string) []workload.Step {
	return worktest.Plan(t, Ledger{}, src)
}

func openPebble(t *testing.T) kv.Store {
	t.Helper()
	eng, err := kv.Lookup("pebble")
	if err != nil {
		t.Fatal(err)
	}
	s, err := eng.Open(kv.Options{Dir: t.TempDir(), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEveryPhaseRunsAndVerifies(t *testing.T) {
	steps := plan(t, smallStudy)
	var phases []string
	for _, st := range steps {
		phases = append(phases, st.Phase)
	}
	if got := strings.Join(phases, ","); got != "insert,select,insert,select,chain,chain,stress,balance" {
		t.Fatalf("plan = %s", got)
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
			if want := (st.N + 63) / 64; res.Ops != want {
				t.Fatalf("insert N=%d: %d batches, want %d", st.N, res.Ops, want)
			}
		case "select":
			if res.Ops != 300 || res.Verify.Checked != 300 || res.Latency.Count != 300 {
				t.Fatalf("select: %+v", res)
			}
		case "chain":
			l := int64(res.Metrics["length"])
			if res.Ops != 2 || res.Verify.Checked != 2*l {
				t.Fatalf("chain %d: ops %d checked %d", l, res.Ops, res.Verify.Checked)
			}
		case "stress":
			if res.Intended == nil || res.Ops < 100 || res.Metrics["reads"] == 0 || res.Metrics["writes"] == 0 {
				t.Fatalf("stress: %+v", res)
			}
		case "balance":
			if res.Verify.Checked != 500 {
				t.Fatalf("balance: %+v", res)
			}
		}
	}
}

func TestCorruptionFailsLoudly(t *testing.T) {
	steps := plan(t, smallStudy)
	store := openPebble(t)
	insert, sel := steps[2], steps[3] // N=1000
	if _, err := (Ledger{}).Execute(context.Background(), &workload.Env{Target: store}, insert); err != nil {
		t.Fatal(err)
	}
	// Flip one byte of one payload, as a lossy engine might.
	var p Params
	_ = json.Unmarshal(insert.Params, &p)
	g := txGen{seed: uint64(insert.Seed), payload: int(p.Payload)}
	for i := uint64(0); i < 1000; i++ {
		tx := g.encode(nil, mainChain, i, nil)
		tx[len(tx)-1] ^= 1
		if err := store.Put(txKey(nil, tx[:32]), tx); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, sel)
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || ve.Phase != "select" || len(ve.Key) != 32 || !strings.Contains(err.Error(), "differs from what was written") {
		t.Fatalf("corrupted value not reported: %v", err)
	}
	// And a missing transaction.
	store2 := openPebble(t)
	_, err = Ledger{}.Execute(context.Background(), &workload.Env{Target: store2}, sel)
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing transaction not reported: %v", err)
	}
}

func TestGenerationIsDeterministic(t *testing.T) {
	g := txGen{seed: 42, payload: 1024}
	a := g.encode(nil, 0, 12345, nil)
	b := g.encode(nil, 0, 12345, g.address(nil, 0, 0))
	if string(a) != string(b) || len(a) != headerLen+1024 {
		t.Fatal("encoding differs between calls")
	}
	if string(a[32:64]) != string(g.address(nil, 0, 12344)) {
		t.Fatal("prev link is not the previous address")
	}
	other := txGen{seed: 43, payload: 1024}.encode(nil, 0, 12345, nil)
	if string(other) == string(a) {
		t.Fatal("seed does not change the data")
	}
}

func TestBadParamsNameTheLine(t *testing.T) {
	src := strings.Replace(smallStudy, "read_fraction: 0.5", "read_fraction: 1.5", 1)
	s, _ := study.Parse("t.yaml", []byte(src))
	_, err := Ledger{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
	if err == nil || !strings.Contains(err.Error(), "t.yaml:12: workloads.ledger.params.stress.read_fraction: 1.5") {
		t.Fatalf("got %v", err)
	}
	src = strings.Replace(smallStudy, "selects: 300", "selcts: 300", 1)
	s, _ = study.Parse("t.yaml", []byte(src))
	_, err = Ledger{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
	if err == nil || !strings.Contains(err.Error(), "t.yaml:10: workloads.ledger.params.selcts: unknown field") {
		t.Fatalf("got %v", err)
	}
}

// The stress steps of a sweep and of a rate search each write chains of
// their own: none rewrites another's transactions, nor the study's own
// stress step's, nor another writer's.
func TestStressStepsWriteChainsOfTheirOwn(t *testing.T) {
	base := results.StepLabels("ledger", "stress", 1000)
	var steps []workload.Step
	steps = append(steps, workload.Step{Labels: base})
	for _, c := range []string{"1", "8", "64", "4096"} {
		steps = append(steps, workload.Step{Labels: base.With(results.LConcurrency, c)})
	}
	for trial := 1; trial <= 64; trial++ {
		steps = append(steps, workload.Step{Labels: base.With(results.LRate, "100").With(results.LTrial, strconv.Itoa(trial))})
	}
	seen := map[uint64]string{}
	for _, st := range steps {
		for _, w := range []int{0, 1, 4095} {
			c := stressChain(st, w)
			if c == mainChain || c == balanceChain || c>>32 == 1 {
				t.Fatalf("%s writer %d writes chain %#x, which another phase uses", st.Labels.Name(), w, c)
			}
			if prev, ok := seen[c]; ok {
				t.Fatalf("%s writer %d writes chain %#x, as %s does", st.Labels.Name(), w, c, prev)
			}
			seen[c] = fmt.Sprintf("%s writer %d", st.Labels.Name(), w)
		}
	}
}

// Every step records item_bytes, one transaction as written: its key
// ('t' and a 32-byte address) and its encoding (117 bytes of header and
// the payload), which is what each transaction in the store holds.
func TestItemBytesIsOneTxnAsWritten(t *testing.T) {
	const payload = 200
	want := float64(1 + 32 + 117 + payload)
	steps := plan(t, `
name: t
ladder: [50]
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 200
      batch: 16
      selects: 20
      chains: {lengths: [5], samples: 1}
      stress: {duration: 200ms, rate: 200, read_fraction: 0.5}
      balance: {addresses: 100, reads: 20}
`)
	store := openPebble(t)
	for _, st := range steps {
		res, err := Ledger{}.Execute(context.Background(), &workload.Env{Target: store}, st)
		if err != nil {
			t.Fatalf("%s: %v", st.Phase, err)
		}
		if got, ok := res.Metrics[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", st.Phase, got, ok, want)
		}
	}
	txns := 0
	if err := store.Scan([]byte{prefixTx}, []byte{prefixTx + 1}, func(k, v []byte) bool {
		if n := len(k) + len(v); float64(n) != want {
			t.Fatalf("transaction %x: %d bytes of key and value, want %v", k, n, want)
		}
		txns++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if txns < 50 {
		t.Fatalf("%d transactions in the store, want at least the 50 inserted", txns)
	}
}
