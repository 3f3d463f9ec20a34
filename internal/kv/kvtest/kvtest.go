// Package kvtest is the conformance suite every storage target must pass.
// An engine package's test calls Run with the engine's registered name:
//
//	func TestConformance(t *testing.T) { kvtest.Run(t, "pebble") }
//
// The suite checks the kv.Store contract (copies, ErrNotFound, atomic
// batches, ordered bounded scans, persistence, concurrency) and the
// optional capabilities a store declares. An engine that is registered as
// unavailable fails the test with its reason: a conformance run that
// silently skips an engine would hide a broken build.
package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"storebench/internal/kv"
)

// Wording every target uses for Settings()["durability"].
var durabilityWording = map[kv.Durability]string{
	kv.Sync:  "fsync per write batch",
	kv.Async: "no fsync (async)",
}

type testCase struct {
	name string
	fn   func(t *testing.T, h *harness)
}

var cases = []testCase{
	{"PutGetDelete", testPutGetDelete},
	{"Overwrite", testOverwrite},
	{"GetReturnsCopy", testGetReturnsCopy},
	{"Batch", testBatch},
	{"BatchAtomicUnderConcurrentScans", testBatchAtomic},
	{"Scan", testScan},
	{"BinaryKeys", testBinaryKeys},
	{"EmptyValues", testEmptyValues},
	{"LargeValues", testLargeValues},
	{"Reopen", testReopen},
	{"Concurrent", testConcurrent},
	{"Viewer", testViewer},
	{"Settings", testSettings},
	{"Compact", testCompact},
	{"RejectsUnknownOption", testRejectsUnknownOption},
}

// Run runs the suite against the engine registered as name, in both
// durability classes.
func Run(t *testing.T, name string) {
	t.Helper()
	e, err := kv.Lookup(name)
	if err != nil {
		t.Fatalf("kvtest: %v", err)
	}
	if e.Unavailable != "" {
		t.Fatalf("kvtest: engine %q is unavailable in this build: %s", name, e.Unavailable)
	}
	if e.Open == nil {
		t.Fatalf("kvtest: engine %q has no Open function", name)
	}
	for _, d := range []kv.Durability{kv.Sync, kv.Async} {
		t.Run(string(d), func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, &harness{engine: e, durability: d, dir: t.TempDir()})
				})
			}
		})
	}
}

// harness opens stores of one engine in one durability class, in the
// test's own directory.
type harness struct {
	engine     kv.Engine
	durability kv.Durability
	dir        string
	closed     map[kv.Store]bool
}

func (h *harness) sync() bool { return h.durability == kv.Sync }

// open opens the store (again, for a reopen) and closes it at the end of
// the test unless the test has closed it with h.close.
func (h *harness) open(t *testing.T) kv.Store {
	t.Helper()
	s, err := h.engine.Open(kv.Options{Dir: h.dir, Durability: h.durability})
	if err != nil {
		t.Fatalf("open %s: %v", h.dir, err)
	}
	t.Cleanup(func() {
		if !h.closed[s] {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	return s
}

func (h *harness) close(t *testing.T, s kv.Store) {
	t.Helper()
	if h.closed == nil {
		h.closed = map[kv.Store]bool{}
	}
	h.closed[s] = true
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// ---- assertion helpers ----

func mustPut(t *testing.T, s kv.Store, k, v []byte) {
	t.Helper()
	if err := s.Put(k, v); err != nil {
		t.Fatalf("Put(%q): %v", k, err)
	}
}

func mustDelete(t *testing.T, s kv.Store, k []byte) {
	t.Helper()
	if err := s.Delete(k); err != nil {
		t.Fatalf("Delete(%q): %v", k, err)
	}
}

func mustCommit(t *testing.T, b kv.Batch) {
	t.Helper()
	if err := b.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func expectValue(t *testing.T, s kv.Store, k, want []byte) {
	t.Helper()
	got, err := s.Get(k)
	if err != nil {
		t.Fatalf("Get(%q): %v", short(k), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %q (len %d), want %q (len %d)", short(k), short(got), len(got), short(want), len(want))
	}
}

func expectAbsent(t *testing.T, s kv.Store, k []byte) {
	t.Helper()
	got, err := s.Get(k)
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want kv.ErrNotFound", short(k), short(got), err)
	}
}

// short keeps failure messages readable when a value is megabytes long.
func short(b []byte) []byte {
	if len(b) > 64 {
		return append(append([]byte(nil), b[:64]...), "..."...)
	}
	return b
}

type pair struct{ k, v []byte }

// scanAll collects a scan, copying the slices (they are only valid during
// the callback).
func scanAll(t *testing.T, s kv.Store, lower, upper []byte) []pair {
	t.Helper()
	var out []pair
	err := s.Scan(lower, upper, func(k, v []byte) bool {
		out = append(out, pair{bytes.Clone(k), bytes.Clone(v)})
		return true
	})
	if err != nil {
		t.Fatalf("Scan(%q, %q): %v", lower, upper, err)
	}
	return out
}

func expectScan(t *testing.T, s kv.Store, lower, upper []byte, want []pair) {
	t.Helper()
	got := scanAll(t, s, lower, upper)
	if len(got) != len(want) {
		t.Fatalf("Scan(%q, %q) returned %d entries %q, want %d %q", lower, upper, len(got), keysOf(got), len(want), keysOf(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].k, want[i].k) || !bytes.Equal(got[i].v, want[i].v) {
			t.Fatalf("Scan(%q, %q) entry %d = %q=%q, want %q=%q", lower, upper, i, got[i].k, short(got[i].v), want[i].k, short(want[i].v))
		}
	}
}

func keysOf(ps []pair) [][]byte {
	out := make([][]byte, len(ps))
	for i, p := range ps {
		out[i] = p.k
	}
	return out
}

// model is the expected content of a store, to compare scans against.
type model map[string][]byte

func (m model) sorted() []pair {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // Go string order is byte order, as the contract's
	out := make([]pair, len(keys))
	for i, k := range keys {
		out[i] = pair{[]byte(k), m[k]}
	}
	return out
}

func (m model) between(lower, upper []byte) []pair {
	var out []pair
	for _, p := range m.sorted() {
		if bytes.Compare(p.k, lower) >= 0 && (upper == nil || bytes.Compare(p.k, upper) < 0) {
			out = append(out, p)
		}
	}
	return out
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func key(format string, args ...any) []byte { return []byte(fmt.Sprintf(format, args...)) }
