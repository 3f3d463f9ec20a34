package adsrw

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

func smallStudy(seed int64) string {
	return fmt.Sprintf(`
name: t
seed: %d
ladder: [4500]
targets: [pebble]
workloads:
  - name: ads-rw
    params:
      block_size: 1000
      reads: 3000
      readers: 8
`, seed)
}

func plan(t *testing.T, src string) []workload.Step {
	return worktest.Plan(t, Workload{}, src)
}

func open(t *testing.T, name string) io.Closer {
	return targettest.Open(t, name, kv.Async)
}

func TestEveryPhaseRunsAndVerifies(t *testing.T) {
	steps := plan(t, smallStudy(1))
	var phases []string
	for _, st := range steps {
		phases = append(phases, st.Phase)
	}
	if got := strings.Join(phases, ","); got != "create,read-serial,read-parallel" {
		t.Fatalf("plan = %s", got)
	}
	for _, name := range targets {
		t.Run(name, func(t *testing.T) {
			h := open(t, name)
			for _, st := range steps {
				res, err := Workload{}.Execute(context.Background(), &workload.Env{Target: h}, st)
				if err != nil {
					t.Fatalf("%s: %v", st.Phase, err)
				}
				switch st.Phase {
				case "create":
					// 4500 pairs in blocks of 1000: the last block is short.
					if res.Ops != 5 || res.Metrics["pairs"] != 4500 {
						t.Fatalf("create: %d blocks, %v", res.Ops, res.Metrics)
					}
					store, _ := ads.As(h)
					if ads.Authenticated(store) != (res.Facts[roots.Root] != "") || (res.Facts[roots.Root] != "") != (res.Facts[roots.Digest] != "") {
						t.Fatalf("create: root %q, digest %q", res.Facts[roots.Root], res.Facts[roots.Digest])
					}
				default:
					if res.Verify.Checked != 3000 || res.Latency.Count != 3000 {
						t.Fatalf("%s: checked %d, latency count %d", st.Phase, res.Verify.Checked, res.Latency.Count)
					}
				}
			}
		})
	}
}

func TestCorruptionFailsLoudly(t *testing.T) {
	steps := plan(t, smallStudy(1))
	h := open(t, "pebble")
	if _, err := (Workload{}).Execute(context.Background(), &workload.Env{Target: h}, steps[0]); err != nil {
		t.Fatal(err)
	}
	// Flip one bit of every value, as a lossy engine might.
	var p Params
	_ = json.Unmarshal(steps[0].Params, &p)
	d := data{seed: 1, keyLen: p.KeyBytes, valLen: p.ValueBytes}
	store, _ := ads.As(h)
	for i := uint64(0); i < 4500; i++ {
		v := d.value(nil, i)
		v[0] ^= 1
		if err := store.Set(d.key(nil, i), v); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := store.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err := (Workload{}).Execute(context.Background(), &workload.Env{Target: h}, steps[2])
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || ve.Phase != "read-parallel" {
		t.Fatalf("got %v, want a verification error", err)
	}
}

// Same seed, same root after every block; another seed, other roots. ADS
// targets give their own roots; on plain engines a Recorder hashes the
// writes issued, which shows that every engine gets the same operations.
func TestSameSeedSameRoots(t *testing.T) {
	for _, name := range targets {
		t.Run(name, func(t *testing.T) {
			once := func(seed int64) [][]byte {
				st := plan(t, smallStudy(seed))[0]
				store, _ := ads.As(open(t, name))
				if !ads.Authenticated(store) {
					store = roots.NewRecorder(store)
				}
				var p Params
				_ = json.Unmarshal(st.Params, &p)
				r := &run{env: &workload.Env{}, st: st, p: p, store: store, d: data{seed: uint64(seed), keyLen: p.KeyBytes, valLen: p.ValueBytes}}
				res, all, err := r.create(context.Background(), true)
				if err != nil {
					t.Fatal(err)
				}
				if res.Facts[roots.Root] == "" || res.Facts[roots.Digest] == "" {
					t.Fatalf("no root recorded: %+v", res)
				}
				return all
			}
			a, b, c := once(1), once(1), once(2)
			if len(a) != 5 || len(b) != 5 || len(c) != 5 {
				t.Fatalf("%d, %d, %d roots, want 5", len(a), len(b), len(c))
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

func TestBadParamsNameTheField(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{"key_bytes: 8", "t.yaml:9: workloads.ads-rw.params.key_bytes"},
		{"readers: 0", "params.readers"},
		{"block_size: 0", "params.block_size"},
		{"nope: 1", "unknown field"},
	} {
		src := strings.Replace(smallStudy(1), "      block_size: 1000\n", "      "+c.params+"\n", 1)
		if c.params[:5] == "block" {
			src = strings.Replace(smallStudy(1), "block_size: 1000", c.params, 1)
		}
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

// The built-in study plans at its defaults and at --scale seed (the
// seed's 4096 blocks of 10,000).
func TestBuiltinStudyAndSeedScale(t *testing.T) {
	for scale, want := range map[string]int64{"": 1e6, "seed": 4096 * 10000} {
		s, err := study.Load("ads-rw")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Scale: scale}); err != nil {
			t.Fatal(err)
		}
		raw, err := Workload{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
		if err != nil {
			t.Fatal(err)
		}
		steps, err := Workload{}.Plan(sweep.PlanningOf(s), raw)
		if err != nil {
			t.Fatal(err)
		}
		if steps[0].N != want || len(steps) != 3 {
			t.Fatalf("scale %q: %d steps, N = %d", scale, len(steps), steps[0].N)
		}
	}
}

// Every step records item_bytes, one pair as create writes it: key_bytes
// and value_bytes, which is what each pair in the store holds.
func TestItemBytesIsOnePair(t *testing.T) {
	const keyBytes, valueBytes = 24, 100
	want := float64(keyBytes + valueBytes)
	steps := plan(t, `
name: t
ladder: [500]
targets: [pebble]
workloads:
  - name: ads-rw
    params:
      block_size: 200
      key_bytes: 24
      value_bytes: 100
      reads: 100
      readers: 2
`)
	h := open(t, "pebble")
	for _, st := range steps {
		res, err := Workload{}.Execute(context.Background(), &workload.Env{Target: h}, st)
		if err != nil {
			t.Fatalf("%s: %v", st.Phase, err)
		}
		if got, ok := res.Metrics[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", st.Phase, got, ok, want)
		}
	}
	pairs := 0
	if err := h.(kv.Store).Scan(nil, nil, func(k, v []byte) bool {
		if n := len(k) + len(v); float64(n) != want {
			t.Fatalf("pair %x: %d bytes of key and value, want %v", k, n, want)
		}
		pairs++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if pairs != 500 {
		t.Fatalf("%d pairs in the store, want 500", pairs)
	}
}
