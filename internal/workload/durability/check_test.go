package durability

import (
	"testing"
	"time"

	"storebench/internal/kv"
)

// The checker counts each fault it exists to catch, apart: a lost
// acknowledged write, a corrupted record, a torn batch and a phantom
// (unacknowledged but present), on crafted read-backs.
func TestCheckCountsLostCorruptedTornPhantom(t *testing.T) {
	const n = 16
	// Writer 0: records 0, 1 single puts, acknowledged; 2..5 a batch of
	// 4, acknowledged; 6 a single put in flight (unacknowledged).
	// Writer 1: 0..2 a batch of 3, unacknowledged.
	var attempts []Attempt
	attempts = append(attempts, Attempt{0, 0, 0, 1, true, 1 * time.Millisecond, false}, Attempt{0, 1, 1, 1, true, 2 * time.Millisecond, false})
	for s := uint64(2); s < 6; s++ {
		attempts = append(attempts, Attempt{0, s, 2, 4, true, 3 * time.Millisecond, false})
	}
	attempts = append(attempts, Attempt{0, 6, 6, 1, false, 0, false})
	for s := uint64(0); s < 3; s++ {
		attempts = append(attempts, Attempt{1, s, 0, 3, false, 0, false})
	}
	store := map[string][]byte{}
	put := func(a Attempt) { store[string(Key(a.Writer, a.Seq))] = Value(a.Writer, a.Seq, a.Batch, a.BatchSize, n) }
	for _, a := range attempts {
		put(a)
	}
	get := func(k []byte) ([]byte, error) {
		v, ok := store[string(k)]
		if !ok {
			return nil, kv.ErrNotFound
		}
		return v, nil
	}

	// Everything present: no loss; the two unacknowledged writes (1 +
	// the batch of 3) are phantoms.
	c, lost, err := Check(attempts, n, get)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Acked: 6, Unacked: 4, Phantom: 4}); c != want || len(lost) != 0 {
		t.Fatalf("all present: got %+v (lost %v), want %+v", c, lost, want)
	}

	// Record 0/1 lost; 0/3 (in the acknowledged batch) lost too: the
	// batch is torn; 0/0 corrupted (a flipped payload byte); writer 1's
	// batch torn (only its first record landed); 0/6 absent (not a loss:
	// never acknowledged).
	delete(store, string(Key(0, 1)))
	delete(store, string(Key(0, 3)))
	v := append([]byte(nil), store[string(Key(0, 0))]...)
	v[headerLen+3] ^= 0xff
	store[string(Key(0, 0))] = v
	delete(store, string(Key(1, 1)))
	delete(store, string(Key(1, 2)))
	delete(store, string(Key(0, 6)))
	c, lost, err = Check(attempts, n, get)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Acked: 6, Unacked: 4, Lost: 2, Corrupted: 1, Torn: 2, Phantom: 1}); c != want {
		t.Fatalf("after the faults: got %+v, want %+v", c, want)
	}
	if len(lost) != 2 || lost[0].Seq != 1 || lost[1].Seq != 3 {
		t.Fatalf("after the faults: lost %+v, want writer 0's records 1 and 3", lost)
	}
	// Crashed 10 ms after the writers started: the acknowledged writes
	// span 9 ms (from 0/0's at 1 ms), the oldest lost (0/1) 8 ms.
	if w, want := LossWindow(attempts, lost, 10*time.Millisecond), (Window{Span: 9 * time.Millisecond, OldestLost: 8 * time.Millisecond}); w != want {
		t.Fatalf("loss window %+v, want %+v", w, want)
	}

	// A record whose content is another record's (a misplaced write)
	// is corrupted, checksum or not.
	store[string(Key(0, 2))] = Value(0, 4, 2, 4, n)
	c, _, _ = Check(attempts, n, get)
	if c.Corrupted != 2 {
		t.Fatalf("misplaced record: corrupted %d, want 2", c.Corrupted)
	}
}

// The loss window tells a loss of the last writes from a loss of all of
// them, and an acknowledgement that came as the crash was decided counts
// as lost at the crash, not after it.
func TestLossWindowTellsTheLastSecondFromEverything(t *testing.T) {
	s := time.Second
	all := []Attempt{{Seq: 0, Acked: true, At: 0}, {Seq: 1, Acked: true, At: 2 * s}, {Seq: 2, Acked: true, At: 3 * s}, {Seq: 3, Acked: true, At: 4*s + 1}, {Seq: 4}}
	if w := LossWindow(all, all[2:4], 4*s); w != (Window{Span: 4 * s, OldestLost: s}) {
		t.Errorf("the last second lost: %+v, want a span of 4 s, the oldest lost 1 s before the crash", w)
	}
	if w := LossWindow(all, all[:4], 4*s); w != (Window{Span: 4 * s, OldestLost: 4 * s}) {
		t.Errorf("everything lost: %+v, want the oldest lost as old as the span, 4 s", w)
	}
	if w := LossWindow(all, nil, 4*s); w != (Window{Span: 4 * s}) {
		t.Errorf("nothing lost: %+v, want no oldest loss", w)
	}
	if w := LossWindow(nil, nil, 4*s); w != (Window{}) {
		t.Errorf("nothing acknowledged: %+v, want an empty window", w)
	}
}
