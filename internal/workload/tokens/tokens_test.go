package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/study"
	"storebench/internal/sweep"
	_ "storebench/internal/target/all"
	"storebench/internal/target/targettest"
	"storebench/internal/workload"
	"storebench/internal/workload/roots"
	"storebench/internal/workload/worktest"
)

// The targets of the study; one this binary cannot open fails the test
// with the reason (make test builds them all).
var targets = []string{"mpt", "iavl", "moeingads", "goleveldb", "pebble", "rocksdb"}

// smallStudy: 3000 accounts in blocks of 1000, 4 blocks of 1500 transfers,
// so accounts are drawn as senders and receivers several times and some
// within one block.
func smallStudy(seed int64) string {
	return fmt.Sprintf(`
name: t
seed: %d
ladder: [3000]
concurrency: 4
targets: [pebble]
workloads:
  - name: tokens
    params:
      genacc: {block_size: 1000}
      runtx: {blocks: 4, block_size: 1500}
`, seed)
}

func plan(t *testing.T, src string) []workload.Step {
	return worktest.Plan(t, Workload{}, src)
}

func open(t *testing.T, name string) io.Closer {
	return targettest.Open(t, name, kv.Async)
}

func execute(t *testing.T, h io.Closer, st workload.Step) map[string]float64 {
	t.Helper()
	res, err := Workload{}.Execute(context.Background(), &workload.Env{Target: h}, st)
	if err != nil {
		t.Fatalf("%s: %v", st.Phase, err)
	}
	return res.Metrics
}

// Every phase runs, every read verifies and the invariants hold on every
// target; and every target sees the same transfers with the same outcome.
func TestInvariantsOnEveryTarget(t *testing.T) {
	steps := plan(t, smallStudy(1))
	var phases []string
	for _, st := range steps {
		phases = append(phases, st.Phase)
	}
	if got := strings.Join(phases, ","); got != "genacc,checkacc,runtx,invariants" {
		t.Fatalf("plan = %s", got)
	}
	var first map[string]float64
	for _, name := range targets {
		t.Run(name, func(t *testing.T) {
			h := open(t, name)
			for _, st := range steps {
				res, err := Workload{}.Execute(context.Background(), &workload.Env{Target: h}, st)
				if err != nil {
					t.Fatalf("%s: %v", st.Phase, err)
				}
				switch st.Phase {
				case "genacc":
					if res.Ops != 3 || res.Metrics["accounts"] != 3000 {
						t.Fatalf("genacc: %d blocks, %v", res.Ops, res.Metrics)
					}
				case "checkacc":
					if res.Verify.Checked != 3000 {
						t.Fatalf("checkacc checked %d", res.Verify.Checked)
					}
				case "runtx":
					m := res.Metrics
					if res.Ops != 6000 || m["tps"] <= 0 || m["rejected_no_gas"] != 0 ||
						m["applied"]+m["rejected_insufficient"]+m["rejected_overflow"] != 6000 || m["gas_burned"] != 60000 {
						t.Fatalf("runtx: ops %d, %v", res.Ops, m)
					}
					if first == nil {
						first = m
					} else {
						for _, k := range []string{"applied", "rejected_insufficient", "rejected_overflow"} {
							if m[k] != first[k] {
								t.Errorf("%s = %v, the first target had %v: the targets did not run the same transfers", k, m[k], first[k])
							}
						}
					}
				case "invariants":
					m := res.Metrics
					if m["invariants_hold"] != 1 || res.Verify.Checked != 3000 || m["native_supply_genesis"]-m["native_supply_end"] != 60000 {
						t.Fatalf("invariants: %+v", m)
					}
				}
			}
		})
	}
}

// A store that loses or invents tokens, or misses a sequence bump, fails
// the invariants step with a verification error.
func TestViolationsFailTheRun(t *testing.T) {
	steps := plan(t, smallStudy(1))
	for _, tc := range []struct {
		name string
		edit func(a *Account)
		want string
	}{
		{"lost tokens", func(a *Account) { a.Amounts[0]-- }, "supply of token"},
		{"sequence", func(a *Account) { a.Seq++ }, "sequence"},
		{"negative", func(a *Account) { a.Amounts[0] -= a.Amounts[0] + 1 }, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := open(t, "pebble")
			for _, st := range steps[:3] {
				execute(t, h, st)
			}
			var p Params
			_ = json.Unmarshal(steps[0].Params, &p)
			m := newModel(steps[0].Seed, steps[0].N, p)
			store, _ := ads.As(h)
			key := m.address(nil, 42)
			var a Account
			v, err := store.Get(key)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Decode(v, p.Tokens); err != nil {
				t.Fatal(err)
			}
			tc.edit(&a)
			if err := store.Set(key, a.Encode(nil)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := store.Commit(); err != nil {
				t.Fatal(err)
			}
			res, err := Workload{}.Execute(context.Background(), &workload.Env{Target: h}, steps[3])
			var ve *workload.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a verification error about %q", err, tc.want)
			}
			if res.Metrics["invariants_hold"] != 0 {
				t.Fatalf("metrics say the invariants hold: %v", res.Metrics)
			}
		})
	}
}

// Same seed, same roots after every block; another seed, other roots. On
// ADS targets the roots are the store's own; on plain engines a Recorder
// hashes the writes issued, which shows the operations are the same.
func TestSameSeedSameRoots(t *testing.T) {
	for _, name := range targets {
		t.Run(name, func(t *testing.T) {
			once := func(seed int64) [][]byte {
				steps := plan(t, smallStudy(seed))
				h := open(t, name)
				store, ok := ads.As(h)
				if !ok {
					t.Fatalf("%s is no ads.Store", name)
				}
				if !ads.Authenticated(store) {
					store = roots.NewRecorder(store)
				}
				p := Params{}
				_ = json.Unmarshal(steps[0].Params, &p)
				r := &run{env: &workload.Env{}, st: steps[0], p: p, store: store, m: newModel(seed, steps[0].N, p)}
				_, all, err := r.genacc(context.Background(), true)
				if err != nil {
					t.Fatal(err)
				}
				r.st = steps[2]
				_, more, err := r.runtx(context.Background(), true)
				if err != nil {
					t.Fatal(err)
				}
				return append(all, more...)
			}
			a, b, c := once(1), once(1), once(2)
			if len(a) != 3+4 || len(b) != len(a) {
				t.Fatalf("%d and %d roots, want 7", len(a), len(b))
			}
			for i := range a {
				if !bytes.Equal(a[i], b[i]) {
					t.Fatalf("block %d: roots differ with the same seed: %x vs %x", i, a[i], b[i])
				}
				if bytes.Equal(a[i], c[i]) {
					t.Fatalf("block %d: same root %x with another seed", i, a[i])
				}
			}
		})
	}
}

func TestModel(t *testing.T) {
	p := defaults()
	m := newModel(7, 1000, p)
	for i := uint64(0); i < 1000; i++ {
		var a Account
		m.genesis(&a, i)
		if len(a.IDs) < 1 || len(a.IDs) > p.MaxTypes {
			t.Fatalf("account %d holds %d tokens", i, len(a.IDs))
		}
		for k := 1; k < len(a.IDs); k++ {
			if a.IDs[k] <= a.IDs[k-1] {
				t.Fatalf("account %d: ids %v not sorted and distinct", i, a.IDs)
			}
		}
		var b Account
		if err := b.Decode(a.Encode(nil), p.Tokens); err != nil || !bytes.Equal(b.Encode(nil), a.Encode(nil)) {
			t.Fatalf("round trip: %v", err)
		}
		if a.Native < m.nativeBase {
			t.Fatalf("native %d below the gas reserve %d", a.Native, m.nativeBase)
		}
	}
	// The read order is a permutation, for any n.
	for _, n := range []uint64{2, 3, 10, 97, 1000, 1024} {
		m := newModel(3, int64(n), p)
		o := m.order()
		seen := make([]bool, n)
		for i := uint64(0); i < n; i++ {
			j := o.at(i)
			if j >= n || seen[j] {
				t.Fatalf("n=%d: order visits %d twice or out of range", n, j)
			}
			seen[j] = true
		}
	}
	// Receivers are never the sender.
	for tx := uint64(0); tx < 10000; tx++ {
		tr := m.transfer(tx)
		if tr.sender == tr.receiver || tr.receiver >= m.n {
			t.Fatalf("transfer %d: %+v", tx, tr)
		}
	}
}

func TestBadParamsNameTheField(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{"tokens: 300", "t.yaml:10: workloads.tokens.params.tokens"},
		{"max_types: 200", "params.max_types"},
		{"runtx: {blocks: 1e6, block_size: 1e6}", "params.runtx.blocks"},
		{"nope: 1", "unknown field"},
	} {
		src := strings.Replace(smallStudy(1), "      genacc: {block_size: 1000}\n      runtx: {blocks: 4, block_size: 1500}\n", "      "+c.params+"\n", 1)
		s, err := study.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Workload{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.params, err, c.want)
		}
	}
}

// The built-in study plans at its defaults, at --scale seed (the seed's
// regime at n = 1e6, m = 5: its 0.16 transfers per account) and at the
// seed's own sizes (n = 1e8, m = 500: supplies still fit in 64 bits).
func TestBuiltinStudyAndSeedScale(t *testing.T) {
	seedSizes := "1e8"
	for _, c := range []struct {
		name string
		o    study.Override
		n, m int64
	}{
		{"default", study.Override{}, 1e6, 20},
		{"--scale seed", study.Override{Scale: "seed"}, 1e6, 5},
		{"the seed's own sizes", study.Override{Scale: "seed", Ladder: &seedSizes, Set: []string{"tokens.runtx.blocks=500"}}, 1e8, 500},
	} {
		s, err := study.Load("tokens")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(c.o); err != nil {
			t.Fatal(err)
		}
		raw, err := Workload{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		steps, err := Workload{}.Plan(sweep.PlanningOf(s), raw)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var p Params
		_ = json.Unmarshal(raw, &p)
		if n, m := steps[0].N, int64(p.Runtx.Blocks); n != c.n || m != c.m {
			t.Fatalf("%s: n = %d, m = %d, want %d and %d", c.name, n, m, c.n, c.m)
		}
	}
}

// Every step records item_bytes, one account as genacc writes it: a
// 20-byte address and 17 + 9 bytes per token held, at the mean holding of
// 1..max_types tokens; the genesis accounts in the store average that.
func TestItemBytesIsOneAccount(t *testing.T) {
	const maxTypes = 4
	want := 20 + 17 + 9*(1+maxTypes)/2.0
	steps := plan(t, `
name: t
ladder: [3000]
concurrency: 2
targets: [pebble]
workloads:
  - name: tokens
    params:
      tokens: 10
      max_types: 4
      genacc: {block_size: 1000}
      runtx: {blocks: 1, block_size: 500}
`)
	h := open(t, "pebble")
	for _, st := range steps {
		if got, ok := execute(t, h, st)[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", st.Phase, got, ok, want)
		}
		if st.Phase != "genacc" {
			continue
		}
		var accounts, bytes int
		if err := h.(kv.Store).Scan(nil, nil, func(k, v []byte) bool {
			if len(k) == AddrLen {
				accounts++
				bytes += len(k) + len(v)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if accounts != 3000 {
			t.Fatalf("%d accounts in the store, want 3000", accounts)
		}
		mean := float64(bytes) / float64(accounts)
		t.Logf("genesis accounts: %.2f bytes on average, item_bytes %v", mean, want)
		if mean < want-1 || mean > want+1 {
			t.Errorf("genesis accounts average %.2f bytes of key and value, item_bytes says %v", mean, want)
		}
	}
}
