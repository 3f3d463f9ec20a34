package durability

import (
	"testing"

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
	attempts = append(attempts, Attempt{0, 0, 0, 1, true}, Attempt{0, 1, 1, 1, true})
	for s := uint64(2); s < 6; s++ {
		attempts = append(attempts, Attempt{0, s, 2, 4, true})
	}
	attempts = append(attempts, Attempt{0, 6, 6, 1, false})
	for s := uint64(0); s < 3; s++ {
		attempts = append(attempts, Attempt{1, s, 0, 3, false})
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
	c, err := Check(attempts, n, get)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Acked: 6, Unacked: 4, Phantom: 4}); c != want {
		t.Fatalf("all present: got %+v, want %+v", c, want)
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
	c, err = Check(attempts, n, get)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Acked: 6, Unacked: 4, Lost: 2, Corrupted: 1, Torn: 2, Phantom: 1}); c != want {
		t.Fatalf("after the faults: got %+v, want %+v", c, want)
	}

	// A record whose content is another record's (a misplaced write)
	// is corrupted, checksum or not.
	store[string(Key(0, 2))] = Value(0, 4, 2, 4, n)
	c, _ = Check(attempts, n, get)
	if c.Corrupted != 2 {
		t.Fatalf("misplaced record: corrupted %d, want 2", c.Corrupted)
	}
}
