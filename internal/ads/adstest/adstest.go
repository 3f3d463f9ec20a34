// Package adstest is the conformance suite of ads.Store implementations
// (the authenticated targets mpt, iavl and moeingads, and plain kv stores
// presented through ads.FromKV). A target's test calls Run with a function
// that opens its store on a data directory:
//
//	func TestConformance(t *testing.T) {
//		adstest.Run(t, func(t *testing.T, dir string) ads.Store { ... })
//	}
//
// It checks the block contract (versions 1, 2, ...; reads of staged and
// committed writes; deletes; reopening at the last version; concurrent
// reads) and, for stores that return roots, that roots are deterministic
// and follow the content, and that proofs verify and catch tampering.
package adstest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"storebench/internal/ads"
	"storebench/internal/kv"
)

// Opener opens (or reopens) the store kept in dir. It must return a
// usable store or fail t.
type Opener func(t *testing.T, dir string) ads.Store

type harness struct {
	open Opener
}

// Run runs every check; each opens fresh stores in its own directory.
func Run(t *testing.T, open Opener) {
	t.Helper()
	h := &harness{open: open}
	for _, c := range []struct {
		name string
		fn   func(*testing.T, *harness)
	}{
		{"Versions", testVersions},
		{"RootFollowsContent", testRootFollowsContent},
		{"Deterministic", testDeterministic},
		{"ReadsStagedAndCommitted", testReads},
		{"Delete", testDelete},
		{"GetReturnsCopy", testGetReturnsCopy},
		{"Reopen", testReopen},
		{"ConcurrentGets", testConcurrentGets},
		{"Prover", testProver},
		{"Settings", testSettings},
		{"Timing", testTiming},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// fresh opens a new store in its own directory and closes it when the
// test ends (a test that closes it itself sets the pointer to nil).
func (h *harness) fresh(t *testing.T, name string) (ads.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	s := h.open(t, dir)
	closeAtEnd(t, &s)
	return s, dir
}

func closeAtEnd(t *testing.T, s *ads.Store) {
	t.Cleanup(func() {
		if *s != nil {
			if err := (*s).Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
}

// pairs returns n deterministic random 32-byte keys and values, the
// shape of the seed's workload.
func pairs(seed uint64, n int) (keys, values [][]byte) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	keys, values = make([][]byte, n), make([][]byte, n)
	for i := range keys {
		keys[i], values[i] = random32(r), random32(r)
	}
	return keys, values
}

func random32(r *rand.Rand) []byte {
	b := make([]byte, 32)
	for i := 0; i < 32; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func mustSet(t *testing.T, s ads.Store, k, v []byte) {
	t.Helper()
	if err := s.Set(k, v); err != nil {
		t.Fatalf("Set(%x): %v", k, err)
	}
}

func mustDelete(t *testing.T, s ads.Store, k []byte) {
	t.Helper()
	if err := s.Delete(k); err != nil {
		t.Fatalf("Delete(%x): %v", k, err)
	}
}

func mustCommit(t *testing.T, s ads.Store, wantVersion int64) []byte {
	t.Helper()
	root, v, err := s.Commit()
	if err != nil {
		t.Fatalf("Commit (block %d): %v", wantVersion, err)
	}
	if v != wantVersion {
		t.Fatalf("Commit returned version %d, want %d", v, wantVersion)
	}
	if ads.Authenticated(s) && len(root) == 0 {
		t.Fatalf("Commit (block %d) returned an empty root", v)
	}
	if !ads.Authenticated(s) && root != nil {
		t.Fatalf("an unauthenticated store returned root %x", root)
	}
	return root
}

func expectValue(t *testing.T, s ads.Store, k, want []byte) {
	t.Helper()
	got, err := s.Get(k)
	if err != nil {
		t.Fatalf("Get(%x): %v, want %x", k, err, want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%x) = %x, want %x", k, got, want)
	}
}

func expectAbsent(t *testing.T, s ads.Store, k []byte) {
	t.Helper()
	got, err := s.Get(k)
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(%x) = %x, %v; want kv.ErrNotFound", k, got, err)
	}
}

func testVersions(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	if v, ok := s.(ads.Versioned); ok && v.Version() != 0 {
		t.Fatalf("a new store has version %d, want 0", v.Version())
	}
	keys, values := pairs(1, 30)
	for b := int64(1); b <= 3; b++ {
		for i := (b - 1) * 10; i < b*10; i++ {
			mustSet(t, s, keys[i], values[i])
		}
		mustCommit(t, s, b)
		if v, ok := s.(ads.Versioned); ok && v.Version() != b {
			t.Fatalf("Version() = %d after commit %d", v.Version(), b)
		}
	}
	// A block without writes is still a block.
	mustCommit(t, s, 4)
}

func testRootFollowsContent(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	if !ads.Authenticated(s) {
		// A plain store's blocks have no root whatever they hold.
		mustSet(t, s, []byte("k"), []byte("v"))
		mustCommit(t, s, 1) // fails on a non-nil root
		return
	}
	keys, values := pairs(2, 20)
	var roots [][]byte
	for b := int64(1); b <= 4; b++ {
		for i := (b - 1) * 5; i < b*5; i++ {
			mustSet(t, s, keys[i], values[i])
		}
		root := mustCommit(t, s, b)
		for i, r := range roots {
			if bytes.Equal(r, root) {
				t.Fatalf("block %d has the root of block %d (%x) although keys were added", b, i+1, root)
			}
		}
		roots = append(roots, root)
	}
	// Changing one value changes the root.
	mustSet(t, s, keys[0], values[1])
	changed := mustCommit(t, s, 5)
	if bytes.Equal(changed, roots[3]) {
		t.Fatalf("changing a value left the root at %x", changed)
	}
}

func testDeterministic(t *testing.T, h *harness) {
	a, _ := h.fresh(t, "a")
	b, _ := h.fresh(t, "b")
	if !ads.Authenticated(a) {
		// No roots to compare; what the store holds is compared in
		// testReads and testReopen.
		return
	}
	keys, values := pairs(3, 300)
	for blk := int64(1); blk <= 3; blk++ {
		for i := (blk - 1) * 100; i < blk*100; i++ {
			for _, s := range []ads.Store{a, b} {
				mustSet(t, s, keys[i], values[i])
				if i%7 == 0 && blk > 1 {
					mustDelete(t, s, keys[i-50])
				}
			}
		}
		ra, rb := mustCommit(t, a, blk), mustCommit(t, b, blk)
		if !bytes.Equal(ra, rb) {
			t.Fatalf("block %d: same writes, different roots %x and %x", blk, ra, rb)
		}
	}
}

func testReads(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	keys, values := pairs(4, 6)
	expectAbsent(t, s, keys[0])
	mustSet(t, s, keys[0], values[0])
	expectValue(t, s, keys[0], values[0]) // staged
	mustCommit(t, s, 1)
	expectValue(t, s, keys[0], values[0]) // committed

	// The token workload reads an account it changed earlier in the block.
	mustSet(t, s, keys[0], values[1])
	mustSet(t, s, keys[1], values[2])
	expectValue(t, s, keys[0], values[1])
	expectValue(t, s, keys[1], values[2])
	mustSet(t, s, keys[1], values[3]) // overwritten twice in one block
	expectValue(t, s, keys[1], values[3])
	expectAbsent(t, s, keys[2])
	mustCommit(t, s, 2)
	expectValue(t, s, keys[0], values[1])
	expectValue(t, s, keys[1], values[3])
	expectAbsent(t, s, keys[2])

	// Keys that differ in one bit, and prefixes, are different keys.
	near := bytes.Clone(keys[0])
	near[31] ^= 1
	expectAbsent(t, s, near)
	expectAbsent(t, s, keys[0][:31])
}

func testDelete(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	keys, values := pairs(5, 4)
	for i := range keys {
		mustSet(t, s, keys[i], values[i])
	}
	before := mustCommit(t, s, 1)

	mustDelete(t, s, keys[0])
	expectAbsent(t, s, keys[0]) // a staged delete hides the committed value
	mustDelete(t, s, keys[0])   // deleting twice is fine
	never, _ := pairs(99, 1)
	mustDelete(t, s, never[0]) // so is deleting a key never written
	after := mustCommit(t, s, 2)
	expectAbsent(t, s, keys[0])
	expectValue(t, s, keys[1], values[1])
	if ads.Authenticated(s) && bytes.Equal(before, after) {
		t.Fatalf("deleting a key left the root at %x", after)
	}

	// Set then delete in one block leaves nothing; delete then set
	// leaves the new value.
	mustSet(t, s, keys[0], values[0])
	mustDelete(t, s, keys[0])
	mustDelete(t, s, keys[2])
	mustSet(t, s, keys[2], values[0])
	expectAbsent(t, s, keys[0])
	expectValue(t, s, keys[2], values[0])
	mustCommit(t, s, 3)
	expectAbsent(t, s, keys[0])
	expectValue(t, s, keys[2], values[0])

	// Deleting everything.
	for _, k := range keys {
		mustDelete(t, s, k)
	}
	mustCommit(t, s, 4)
	for _, k := range keys {
		expectAbsent(t, s, k)
	}
}

func testGetReturnsCopy(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	keys, values := pairs(6, 2)
	k, v := bytes.Clone(keys[0]), bytes.Clone(values[0])
	mustSet(t, s, k, v)
	// The store must have copied key and value: callers reuse buffers.
	k[0] ^= 0xff
	v[0] ^= 0xff
	expectValue(t, s, keys[0], values[0])
	for _, commit := range []bool{false, true} {
		if commit {
			mustCommit(t, s, 1)
		}
		got, err := s.Get(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = 0xAA
		}
		expectValue(t, s, keys[0], values[0])
	}
}

func testReopen(t *testing.T, h *harness) {
	dir := filepath.Join(t.TempDir(), "s")
	s := h.open(t, dir)
	closeAtEnd(t, &s)
	keys, values := pairs(7, 60)
	var root []byte
	for b := int64(1); b <= 3; b++ {
		for i := (b - 1) * 20; i < b*20; i++ {
			mustSet(t, s, keys[i], values[i])
		}
		mustDelete(t, s, keys[(b-1)*20])
		root = mustCommit(t, s, b)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = nil
	s = h.open(t, dir)
	// FromKV keeps its block counter in memory only (it writes nothing
	// but the workload's keys into the kv store), so its version restarts
	// at 0; authenticated stores must resume at the last version.
	resumes := ads.Authenticated(s)
	if v, ok := s.(ads.Versioned); ok && resumes && v.Version() != 3 {
		t.Fatalf("reopened at version %d, want 3", v.Version())
	}
	for i := range keys {
		if i%20 == 0 {
			expectAbsent(t, s, keys[i])
		} else {
			expectValue(t, s, keys[i], values[i])
		}
	}
	// The reopened state has the old root: a proof from it verifies
	// against the root returned before closing ...
	if p, ok := s.(ads.Prover); ok && ads.Authenticated(s) {
		v, proof, err := p.GetWithProof(keys[1])
		if err != nil {
			t.Fatalf("GetWithProof after reopen: %v", err)
		}
		if err := p.VerifyProof(root, keys[1], v, proof); err != nil {
			t.Fatalf("a proof from the reopened store does not verify against the root before closing: %v", err)
		}
	}
	// ... and the next block lands where it lands on a store that was
	// never closed.
	more, moreValues := pairs(8, 10)
	for i := range more {
		mustSet(t, s, more[i], moreValues[i])
	}
	if !resumes {
		t.Logf("version after reopening not checked: the store does not persist it")
		return
	}
	reopened := mustCommit(t, s, 4)
	ref, _ := h.fresh(t, "ref")
	for b := int64(1); b <= 3; b++ {
		for i := (b - 1) * 20; i < b*20; i++ {
			mustSet(t, ref, keys[i], values[i])
		}
		mustDelete(t, ref, keys[(b-1)*20])
		mustCommit(t, ref, b)
	}
	for i := range more {
		mustSet(t, ref, more[i], moreValues[i])
	}
	if r := mustCommit(t, ref, 4); !bytes.Equal(r, reopened) {
		t.Fatalf("block 4 after reopening has root %x; without reopening %x", reopened, r)
	}
}

func testConcurrentGets(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	const n = 2000
	keys, values := pairs(9, n)
	for i := range keys {
		mustSet(t, s, keys[i], values[i])
	}
	mustCommit(t, s, 1)
	absent, _ := pairs(10, 50)
	check := func(staged map[int][]byte) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for j := 0; j < 400; j++ {
					i := (g*7919 + j*31) % n
					want := values[i]
					if v, ok := staged[i]; ok {
						want = v
					}
					got, err := s.Get(keys[i])
					if err != nil || !bytes.Equal(got, want) {
						errs <- fmt.Errorf("goroutine %d: Get(key %d) = %x, %v; want %x", g, i, got, err, want)
						return
					}
					if j%40 == 0 {
						if _, err := s.Get(absent[j/40]); !errors.Is(err, kv.ErrNotFound) {
							errs <- fmt.Errorf("goroutine %d: Get(absent key) err = %v", g, err)
							return
						}
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	check(nil)
	if t.Failed() {
		return
	}
	// Concurrent readers are also allowed while a block has staged
	// writes (no writer runs meanwhile).
	staged := map[int][]byte{}
	newValues, _ := pairs(11, 100)
	for j := 0; j < 100; j++ {
		i := j * 13
		mustSet(t, s, keys[i], newValues[j])
		staged[i] = newValues[j]
	}
	check(staged)
	mustCommit(t, s, 2)
	check(staged)
}

func testProver(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	p, ok := s.(ads.Prover)
	switch {
	case !ads.Authenticated(s):
		if ok {
			t.Fatal("a store without roots offers proofs: against what?")
		}
		return
	case !ok:
		t.Fatal("an authenticated store must offer proofs (ads.Prover): mpt, iavl and moeingads all can")
	}
	keys, values := pairs(12, 200)
	for i := range keys {
		mustSet(t, s, keys[i], values[i])
	}
	root := mustCommit(t, s, 1)
	for _, i := range []int{0, 57, 199} {
		v, proof, err := p.GetWithProof(keys[i])
		if err != nil {
			t.Fatalf("GetWithProof(key %d): %v", i, err)
		}
		if !bytes.Equal(v, values[i]) {
			t.Fatalf("GetWithProof(key %d) value %x, want %x", i, v, values[i])
		}
		if err := p.VerifyProof(root, keys[i], v, proof); err != nil {
			t.Fatalf("proof of key %d does not verify: %v", i, err)
		}
		tampered := bytes.Clone(v)
		tampered[0] ^= 1
		if err := p.VerifyProof(root, keys[i], tampered, proof); err == nil {
			t.Fatalf("proof of key %d verifies a tampered value", i)
		}
		if err := p.VerifyProof(root, keys[(i+1)%len(keys)], v, proof); err == nil {
			t.Fatalf("proof of key %d verifies for another key", i)
		}
		badRoot := bytes.Clone(root)
		badRoot[len(badRoot)-1] ^= 1
		if err := p.VerifyProof(badRoot, keys[i], v, proof); err == nil {
			t.Fatalf("proof of key %d verifies against a wrong root", i)
		}
		if len(proof) > 1 {
			cut := proof[:len(proof)/2]
			if err := p.VerifyProof(root, keys[i], v, cut); err == nil {
				t.Fatalf("a truncated proof of key %d verifies", i)
			}
		}
	}
	// A proof is against the last commit: after an update, the old
	// proof no longer verifies against the new root.
	_, oldProof, err := p.GetWithProof(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, s, keys[0], values[1])
	newRoot := mustCommit(t, s, 2)
	v, proof, err := p.GetWithProof(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v, values[1]) {
		t.Fatalf("GetWithProof after an update = %x, want %x", v, values[1])
	}
	if err := p.VerifyProof(newRoot, keys[0], v, proof); err != nil {
		t.Fatalf("proof after an update does not verify: %v", err)
	}
	if err := p.VerifyProof(newRoot, keys[0], values[0], oldProof); err == nil {
		t.Fatalf("the proof of the old value verifies against the new root")
	}
	absent, _ := pairs(13, 1)
	if _, _, err := p.GetWithProof(absent[0]); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("GetWithProof of an absent key: %v, want kv.ErrNotFound", err)
	}
}

func testSettings(t *testing.T, h *harness) {
	s, _ := h.fresh(t, "s")
	d, ok := s.(kv.Describer)
	if !ok {
		t.Fatal("store does not describe its settings (kv.Describer)")
	}
	set := d.Settings()
	if set["durability"] == "" {
		t.Errorf("Settings has no durability: %v", set)
	}
	for k, v := range set {
		t.Logf("%s: %s", k, v)
	}
}

// testTiming logs (does not judge) the time of the seed's write pattern at
// a small scale, 10 blocks of 10,000 random 32-byte pairs, and of reading
// every pair back once, so that the test log gives a first comparison of
// the engines.
func testTiming(t *testing.T, h *harness) {
	if testing.Short() || raceEnabled {
		return // timings under -short or -race mean nothing
	}
	s, _ := h.fresh(t, "s")
	const blocks, perBlock = 10, 10000
	keys, values := pairs(14, blocks*perBlock)
	start := time.Now()
	var commit time.Duration
	for b := int64(1); b <= blocks; b++ {
		for i := (b - 1) * perBlock; i < b*perBlock; i++ {
			mustSet(t, s, keys[i], values[i])
		}
		c := time.Now()
		mustCommit(t, s, b)
		commit += time.Since(c)
	}
	write := time.Since(start)
	start = time.Now()
	for i := range keys {
		got, err := s.Get(keys[i])
		if err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("Get(key %d) = %x, %v; want %x", i, got, err, values[i])
		}
	}
	read := time.Since(start)
	t.Logf("%d blocks x %d 32-byte pairs: write %v (%v in Commit), then %d serial Gets %v (%.1f µs/Get)",
		blocks, perBlock, write.Round(time.Millisecond), commit.Round(time.Millisecond),
		len(keys), read.Round(time.Millisecond), float64(read.Microseconds())/float64(len(keys)))
}
