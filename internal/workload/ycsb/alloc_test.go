package ycsb

import (
	"context"
	"fmt"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/workload"
)

// The key is YCSB's "user" + 20 zero-padded digits, as it was with
// fmt's %020d.
func TestKeyIsZeroPadded(t *testing.T) {
	for _, i := range []uint64{0, 1, 7, 1 << 20, 1<<63 + 5, ^uint64(0)} {
		if got, want := string(key(nil, i)), fmt.Sprintf("user%020d", fnv64(i)); got != want {
			t.Fatalf("key(%d) = %q, want %q", i, got, want)
		}
	}
}

// Building a key, generating a record and verifying a read of it
// allocate nothing once the goroutine's buffers exist; a wrong byte is
// still caught.
func TestValueGenerationAndVerificationAllocateNothing(t *testing.T) {
	r := &run{p: Params{Fields: 10, FieldLength: 100}, seed: 1, goroutines: 1}
	s := &r.states()[0]
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		s.key = key(s.key, uint64(n))
		fields := r.record(s, s.key, uint64(n))
		if err := r.checkFields("c", s.key, fields, s.scratch); err != nil {
			t.Fatal(err)
		}
		n++
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per record built and verified", allocs)
	}
	fields := r.record(s, s.key, 3)
	fields[9][99] ^= 1
	if err := r.checkFields("c", s.key, fields, s.scratch); err == nil {
		t.Fatal("a flipped byte passed verification")
	}
}

// A YCSB C read on an embedded engine (Pebble: kv.View) allocates nothing
// of the workload's own: key, decoding and verification included.
func TestEmbeddedReadPathAllocatesNothing(t *testing.T) {
	steps, st := setup(t)
	if _, err := (YCSB{}).Execute(context.Background(), &workload.Env{Target: st}, steps[0]); err != nil {
		t.Fatal(err)
	}
	r := &run{db: KVDB{KV: st}, p: Params{Fields: 4, FieldLength: 40}, seed: uint64(steps[0].Seed), n: 2000, goroutines: 1, phase: "c"}
	ws := r.states()
	verified := workload.NewTally(1)
	m := &mix{
		plan: func(w int, s *wstate, seq int64) int { s.key = key(s.key, uint64(seq)%2000); return opRead },
		check: func(w int, s *wstate, f [][]byte) error {
			if err := r.checkFields("c", s.key, f, s.scratch); err != nil {
				return err
			}
			verified.Add(w, 1)
			return nil
		},
	}
	op := r.op(goroutineLoad(), ws, m)
	seq := int64(0)
	baseline := testing.AllocsPerRun(200, func() {
		if err := kv.View(st, key(nil, 5), func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	allocs := testing.AllocsPerRun(1000, func() {
		if err := op(context.Background(), 0, seq); err != nil {
			t.Fatal(err)
		}
		seq++
	})
	// The engine's own View may allocate (baseline: a key of our own,
	// made here, included); the workload adds nothing.
	if allocs > baseline {
		t.Fatalf("%.1f allocations per YCSB read, the engine's View alone %.1f", allocs, baseline)
	}
	if verified.Sum() < 1000 {
		t.Fatalf("%d reads verified", verified.Sum())
	}
}

func BenchmarkRecordGenerateAndVerify(b *testing.B) {
	r := &run{p: Params{Fields: 10, FieldLength: 100}, seed: 1, goroutines: 1}
	s := &r.states()[0]
	b.ReportAllocs()
	b.SetBytes(1000)
	for i := 0; b.Loop(); i++ {
		s.key = key(s.key, uint64(i))
		fields := r.record(s, s.key, uint64(i))
		if err := r.checkFields("c", s.key, fields, s.scratch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKey(b *testing.B) {
	var k []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k = key(k, uint64(i))
	}
}

func goroutineLoad() workload.Load { return workload.Load{} }
