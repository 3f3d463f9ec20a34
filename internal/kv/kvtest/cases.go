package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"storebench/internal/kv"
)

func testPutGetDelete(t *testing.T, h *harness) {
	s := h.open(t)
	k, v := []byte("alpha"), []byte("one")
	expectAbsent(t, s, k)
	mustPut(t, s, k, v)
	expectValue(t, s, k, v)
	expectAbsent(t, s, []byte("alph"))   // a prefix of a stored key
	expectAbsent(t, s, []byte("alpha0")) // a key a stored key is a prefix of
	mustDelete(t, s, k)
	expectAbsent(t, s, k)
	// Deleting an absent key (never written, or already deleted) is fine.
	mustDelete(t, s, k)
	mustDelete(t, s, []byte("never-written"))
	err := kv.View(s, k, func([]byte) error { return nil })
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("kv.View of a deleted key: %v, want kv.ErrNotFound", err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

func testOverwrite(t *testing.T, h *harness) {
	s := h.open(t)
	k := []byte("k")
	for _, v := range []string{"first", "a much longer second value", "3", ""} {
		mustPut(t, s, k, []byte(v))
		expectValue(t, s, k, []byte(v))
	}
	mustPut(t, s, k, []byte("final"))
	expectScan(t, s, nil, nil, []pair{{k, []byte("final")}})
}

func testGetReturnsCopy(t *testing.T, h *harness) {
	s := h.open(t)
	k := []byte("copy")
	v := []byte("original")
	mustPut(t, s, k, v)
	// The store must have copied the value: the caller may reuse its buffer.
	copy(v, "XXXXXXXX")
	expectValue(t, s, k, []byte("original"))
	// Get must return a copy: scribbling on it changes nothing stored.
	got, err := s.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = 0xAA
	}
	expectValue(t, s, k, []byte("original"))
	// Same for a batch's key and value buffers, reused before Commit.
	b := s.NewBatch()
	bk, bv := []byte("batched"), []byte("value")
	b.Put(bk, bv)
	copy(bk, "XXXXXXX")
	copy(bv, "YYYYY")
	mustCommit(t, b)
	expectValue(t, s, []byte("batched"), []byte("value"))
	expectAbsent(t, s, []byte("XXXXXXX"))
}

func testBatch(t *testing.T, h *harness) {
	s := h.open(t)
	mustPut(t, s, []byte("b/keep"), []byte("old"))
	mustPut(t, s, []byte("b/del"), []byte("doomed"))

	b := s.NewBatch()
	b.Put([]byte("b/new1"), []byte("n1"))
	b.Put([]byte("b/new2"), []byte("n2"))
	b.Put([]byte("b/keep"), []byte("new"))
	b.Delete([]byte("b/del"))
	b.Delete([]byte("b/absent")) // deleting an absent key in a batch is fine
	// Later writes to the same key win, in batch order.
	b.Put([]byte("b/tmp"), []byte("x"))
	b.Delete([]byte("b/tmp"))
	b.Delete([]byte("b/back"))
	b.Put([]byte("b/back"), []byte("again"))
	if b.Len() != 9 {
		t.Fatalf("Len() = %d, want 9", b.Len())
	}

	// Nothing is visible before Commit.
	expectAbsent(t, s, []byte("b/new1"))
	expectAbsent(t, s, []byte("b/back"))
	expectValue(t, s, []byte("b/keep"), []byte("old"))
	expectValue(t, s, []byte("b/del"), []byte("doomed"))
	expectScan(t, s, []byte("b/"), kv.PrefixEnd([]byte("b/")), []pair{
		{[]byte("b/del"), []byte("doomed")},
		{[]byte("b/keep"), []byte("old")},
	})

	mustCommit(t, b)
	expectScan(t, s, []byte("b/"), kv.PrefixEnd([]byte("b/")), []pair{
		{[]byte("b/back"), []byte("again")},
		{[]byte("b/keep"), []byte("new")},
		{[]byte("b/new1"), []byte("n1")},
		{[]byte("b/new2"), []byte("n2")},
	})
	expectAbsent(t, s, []byte("b/del"))
	expectAbsent(t, s, []byte("b/tmp"))

	// An empty batch commits as a no-op.
	empty := s.NewBatch()
	if empty.Len() != 0 {
		t.Fatalf("empty batch Len() = %d", empty.Len())
	}
	mustCommit(t, empty)

	// A batch dropped without Commit leaves no trace.
	dropped := s.NewBatch()
	dropped.Put([]byte("b/dropped"), []byte("x"))
	dropped.Delete([]byte("b/keep"))
	expectAbsent(t, s, []byte("b/dropped"))
	expectValue(t, s, []byte("b/keep"), []byte("new"))
}

// testBatchAtomic commits batches that set ten keys to the same
// generation while other goroutines scan them: every scan must see all ten
// keys at one generation. (It relies on a Scan reading one consistent
// snapshot, which every registered engine provides.)
func testBatchAtomic(t *testing.T, h *harness) {
	s := h.open(t)
	const nkeys = 10
	rounds := 100
	if h.sync() {
		rounds = 25 // each commit is an fsync
	}
	prefix := []byte("atom/")
	write := func(gen int) error {
		b := s.NewBatch()
		for i := 0; i < nkeys; i++ {
			b.Put(key("atom/%02d", i), key("gen-%06d", gen))
		}
		return b.Commit()
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var first []byte
				n := 0
				err := s.Scan(prefix, kv.PrefixEnd(prefix), func(k, v []byte) bool {
					if first == nil {
						first = bytes.Clone(v)
					} else if !bytes.Equal(first, v) {
						t.Errorf("torn batch: %q = %q but an earlier key has %q", k, v, first)
					}
					n++
					return true
				})
				if err != nil {
					t.Errorf("Scan: %v", err)
					return
				}
				if n != nkeys {
					t.Errorf("scan saw %d keys, want %d", n, nkeys)
					return
				}
			}
		}()
	}
	for gen := 1; gen <= rounds; gen++ {
		if err := write(gen); err != nil {
			t.Errorf("Commit: %v", err)
			break
		}
	}
	close(stop)
	wg.Wait()
}

func testScan(t *testing.T, h *harness) {
	s := h.open(t)
	m := model{}
	for _, k := range []string{
		"\x00", "\x00\x00", "\x00\x01", "\x01",
		"a", "a\x00", "a\x00\x00", "a\x7f", "a\x80", "a\xff", "ab", "abc", "b",
		"\x7f", "\x80", "\xfe\xff", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff",
	} {
		m[k] = []byte("v:" + k)
	}
	b := s.NewBatch()
	for k, v := range m {
		b.Put([]byte(k), v)
	}
	mustCommit(t, b)

	all := m.sorted()
	expectScan(t, s, nil, nil, all)
	expectScan(t, s, []byte{}, nil, all)
	for _, r := range []struct{ lower, upper string }{
		{"a", "b"},           // upper is exclusive: "b" is left out
		{"a\x00", "ab"},      // lower is inclusive
		{"a\x01", "a\xff"},   // bounds that are not stored keys
		{"\x00", "\x00\x01"}, // zero bytes
		{"\xfe", "\xff\x00"}, // high bytes
		{"abc", "abc\x00"},   // a single key
		{"ab", "ab"},         // empty range
		{"zz", "zzz"},        // nothing there
	} {
		lower, upper := []byte(r.lower), []byte(r.upper)
		expectScan(t, s, lower, upper, m.between(lower, upper))
	}
	expectScan(t, s, []byte("\xff"), nil, m.between([]byte("\xff"), nil))
	expectScan(t, s, []byte("\xff\xff\xff\x00"), nil, nil)
	// An upper bound below the lower bound is an empty range, not an error.
	expectScan(t, s, []byte("b"), []byte("a"), nil)

	// Prefix scans, including a prefix of 0xff bytes whose PrefixEnd is nil.
	for _, p := range []string{"a", "a\x00", "\x00", "\xff", "\xff\xff", "ab"} {
		prefix := []byte(p)
		var want []pair
		for _, e := range all {
			if bytes.HasPrefix(e.k, prefix) {
				want = append(want, e)
			}
		}
		expectScan(t, s, prefix, kv.PrefixEnd(prefix), want)
	}

	// Returning false stops the scan at once.
	calls := 0
	if err := s.Scan(nil, nil, func(k, v []byte) bool { calls++; return calls < 3 }); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("scan continued after fn returned false: %d calls, want 3", calls)
	}

	// Deleted keys disappear from scans.
	mustDelete(t, s, []byte("ab"))
	delete(m, "ab")
	expectScan(t, s, []byte("a"), []byte("b"), m.between([]byte("a"), []byte("b")))
}

func testBinaryKeys(t *testing.T, h *harness) {
	s := h.open(t)
	m := model{}
	b := s.NewBatch()
	// Every single-byte key: an engine comparing signed bytes, or stopping
	// at a zero byte, gets the order (or the keys) wrong.
	for i := 0; i < 256; i++ {
		k := []byte{byte(i)}
		m[string(k)] = []byte{byte(i), byte(255 - i)}
		b.Put(k, m[string(k)])
	}
	mustCommit(t, b)
	// Keys that are prefixes of each other, and a long key (LMDB allows
	// 511 bytes at most).
	chain := [][]byte{
		[]byte("p"), []byte("p\x00"), []byte("p\x00\x00"), []byte("p\x00\x01"),
		[]byte("p\x01"), []byte("pp"), []byte("ppp"), bytes.Repeat([]byte("p\xff"), 200),
	}
	for i, k := range chain {
		v := key("chain-%d", i)
		m[string(k)] = v
		mustPut(t, s, k, v)
	}
	for k, v := range m {
		expectValue(t, s, []byte(k), v)
	}
	got := scanAll(t, s, nil, nil)
	for i := 1; i < len(got); i++ {
		if bytes.Compare(got[i-1].k, got[i].k) >= 0 {
			t.Fatalf("scan out of order: %q then %q", got[i-1].k, got[i].k)
		}
	}
	expectScan(t, s, nil, nil, m.sorted())
	expectScan(t, s, []byte("p"), kv.PrefixEnd([]byte("p")), m.between([]byte("p"), []byte("q")))
}

func testEmptyValues(t *testing.T, h *harness) {
	s := h.open(t)
	mustPut(t, s, []byte("e/empty"), []byte{})
	mustPut(t, s, []byte("e/nil"), nil) // a nil value is an empty value
	b := s.NewBatch()
	b.Put([]byte("e/batch"), []byte{})
	mustCommit(t, b)
	check := func(s kv.Store) {
		t.Helper()
		for _, k := range []string{"e/batch", "e/empty", "e/nil"} {
			got, err := s.Get([]byte(k))
			if err != nil || len(got) != 0 {
				t.Fatalf("Get(%q) = %q, %v; want an empty value and no error", k, got, err)
			}
			err = kv.View(s, []byte(k), func(v []byte) error {
				if len(v) != 0 {
					return fmt.Errorf("View(%q) saw %q", k, v)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("View(%q): %v", k, err)
			}
		}
		expectScan(t, s, []byte("e/"), []byte("e0"), []pair{
			{[]byte("e/batch"), []byte{}},
			{[]byte("e/empty"), []byte{}},
			{[]byte("e/nil"), []byte{}},
		})
	}
	check(s)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	h.close(t, s)
	check(h.open(t))
}

func testLargeValues(t *testing.T, h *harness) {
	s := h.open(t)
	r := rand.New(rand.NewPCG(1, 2))
	big := randomBytes(r, 4<<20)
	mustPut(t, s, []byte("large"), big)
	expectValue(t, s, []byte("large"), big)
	b := s.NewBatch()
	mid := randomBytes(r, 1<<20)
	b.Put([]byte("large-batched"), mid)
	b.Put([]byte("small"), []byte("s"))
	mustCommit(t, b)
	expectScan(t, s, nil, nil, []pair{
		{[]byte("large"), big},
		{[]byte("large-batched"), mid},
		{[]byte("small"), []byte("s")},
	})
	if err := kv.View(s, []byte("large"), func(v []byte) error {
		if !bytes.Equal(v, big) {
			return errors.New("View of the large value differs from what was put")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Shrinking a large value works too.
	mustPut(t, s, []byte("large"), []byte("tiny"))
	expectValue(t, s, []byte("large"), []byte("tiny"))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	h.close(t, s)
	s = h.open(t)
	expectValue(t, s, []byte("large-batched"), mid)
	expectValue(t, s, []byte("large"), []byte("tiny"))
}

// testReopen checks that data outlives Close: in Sync mode every write is
// durable; in Async mode after Sync().
func testReopen(t *testing.T, h *harness) {
	s := h.open(t)
	m := model{}
	for i := 0; i < 20; i++ {
		k, v := key("r/%03d", i), key("value-%d", i)
		mustPut(t, s, k, v)
		m[string(k)] = v
	}
	b := s.NewBatch()
	for i := 20; i < 200; i++ {
		k, v := key("r/%03d", i), key("batched-%d", i)
		b.Put(k, v)
		m[string(k)] = v
	}
	b.Delete(key("r/%03d", 5))
	delete(m, string(key("r/%03d", 5)))
	mustCommit(t, b)
	mustDelete(t, s, key("r/%03d", 7))
	delete(m, string(key("r/%03d", 7)))
	if !h.sync() {
		if err := s.Sync(); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	h.close(t, s)

	s = h.open(t)
	expectScan(t, s, nil, nil, m.sorted())
	expectAbsent(t, s, key("r/%03d", 5))
	expectAbsent(t, s, key("r/%03d", 7))
	// A second generation of writes survives a second reopen.
	mustPut(t, s, []byte("r/after"), []byte("reopen"))
	m["r/after"] = []byte("reopen")
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	h.close(t, s)
	s = h.open(t)
	expectScan(t, s, nil, nil, m.sorted())
}

// testConcurrent drives one store from 8 goroutines mixing Put, Get,
// Delete, batches and scans, then checks the final content.
func testConcurrent(t *testing.T, h *harness) {
	s := h.open(t)
	const goroutines = 8
	n := 200
	if h.sync() {
		n = 30 // every write is an fsync
	}
	val := concurrentVal
	var wg sync.WaitGroup
	for w := 0; w < goroutines; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < n; i++ {
				k := key("c/%d/%04d", w, i)
				var err error
				if i%10 == 9 {
					b := s.NewBatch()
					b.Put(k, val(w, i))
					b.Put(key("c/%d/batch", w), val(w, i))
					err = b.Commit()
				} else {
					err = s.Put(k, val(w, i))
				}
				if err != nil {
					t.Errorf("goroutine %d write %d: %v", w, i, err)
					return
				}
				if got, err := s.Get(k); err != nil || !bytes.Equal(got, val(w, i)) {
					t.Errorf("goroutine %d: Get(%q) = %q, %v right after writing it", w, k, got, err)
					return
				}
				// Read another worker's key: absent or exactly as written.
				o, j := r.IntN(goroutines), r.IntN(n)
				got, err := s.Get(key("c/%d/%04d", o, j))
				if err != nil && !errors.Is(err, kv.ErrNotFound) {
					t.Errorf("goroutine %d: Get: %v", w, err)
					return
				}
				if err == nil && !bytes.Equal(got, val(o, j)) {
					t.Errorf("goroutine %d: Get(c/%d/%04d) = %q, want %q", w, o, j, got, val(o, j))
					return
				}
				if i%20 == 0 {
					prefix := key("c/%d/", o)
					if err := s.Scan(prefix, kv.PrefixEnd(prefix), func(k, v []byte) bool { return true }); err != nil {
						t.Errorf("goroutine %d: Scan: %v", w, err)
						return
					}
				}
				if i%7 == 3 {
					if err := s.Delete(k); err != nil {
						t.Errorf("goroutine %d: Delete: %v", w, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	expectScan(t, s, nil, nil, concurrentModel(goroutines, n).sorted())
}

// concurrentVal is the value goroutine w writes at its i-th step of
// testConcurrent, of a length varying with i so values of several sizes
// are mixed.
func concurrentVal(w, i int) []byte {
	return key("w%d-i%d-%s", w, i, bytes.Repeat([]byte{'x'}, i%50))
}

// concurrentModel is what the store must hold once testConcurrent's
// goroutines of n steps are done: each goroutine's keys but those it deleted
// (i%7 == 3), and its batch key at the value of its last batch, so the
// final scan checks that no write was lost or torn.
func concurrentModel(goroutines, n int) model {
	m := model{}
	for w := 0; w < goroutines; w++ {
		for i := 0; i < n; i++ {
			if i%7 != 3 {
				m[string(key("c/%d/%04d", w, i))] = concurrentVal(w, i)
			}
		}
		last := 0 // the last batch a worker committed
		for i := 0; i < n; i++ {
			if i%10 == 9 {
				last = i
			}
		}
		m[string(key("c/%d/batch", w))] = concurrentVal(w, last)
	}
	return m
}

func testViewer(t *testing.T, h *harness) {
	s := h.open(t)
	v, ok := s.(kv.Viewer)
	if !ok {
		t.Logf("%s has no zero-copy View; kv.View falls back to Get", h.engine.Name)
	}
	mustPut(t, s, []byte("view"), []byte("through"))
	var seen []byte
	if err := kv.View(s, []byte("view"), func(b []byte) error { seen = bytes.Clone(b); return nil }); err != nil {
		t.Fatal(err)
	}
	expectValue(t, s, []byte("view"), seen)
	if !ok {
		return
	}
	if err := v.View([]byte("absent"), func([]byte) error { return nil }); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("View(absent) = %v, want kv.ErrNotFound", err)
	}
	sentinel := errors.New("from fn")
	if err := v.View([]byte("view"), func([]byte) error { return sentinel }); !errors.Is(err, sentinel) {
		t.Fatalf("View did not return fn's error: %v", err)
	}
	// Concurrent views agree with Get.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				err := v.View([]byte("view"), func(b []byte) error {
					if string(b) != "through" {
						return fmt.Errorf("View saw %q", b)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func testSettings(t *testing.T, h *harness) {
	s := h.open(t)
	d, ok := s.(kv.Describer)
	if !ok {
		t.Fatalf("%s does not implement kv.Describer", h.engine.Name)
	}
	set := d.Settings()
	if got, want := set["durability"], durabilityWording[h.durability]; got != want {
		t.Errorf(`Settings()["durability"] = %q, want %q`, got, want)
	}
	if set["cache"] == "" {
		t.Errorf(`Settings() has no "cache" entry: %v`, set)
	}
	for k, v := range set {
		if k == "" || v == "" {
			t.Errorf("Settings() has an empty name or value: %q=%q", k, v)
		}
	}
	t.Logf("%s settings: %v", h.engine.Name, set)
}

func testCompact(t *testing.T, h *harness) {
	s := h.open(t)
	c, ok := s.(kv.Compacter)
	if !ok {
		t.Logf("%s has no compaction call", h.engine.Name)
	}
	m := model{}
	b := s.NewBatch()
	for i := 0; i < 500; i++ {
		k, v := key("z/%04d", i), bytes.Repeat([]byte{byte(i)}, 100)
		b.Put(k, v)
		m[string(k)] = v
	}
	mustCommit(t, b)
	for i := 0; i < 500; i += 3 {
		mustDelete(t, s, key("z/%04d", i))
		delete(m, string(key("z/%04d", i)))
	}
	if ok {
		if err := c.Compact(); err != nil {
			t.Fatalf("Compact: %v", err)
		}
	}
	expectScan(t, s, nil, nil, m.sorted())
	// An empty store compacts too.
	if ok {
		h2 := &harness{engine: h.engine, durability: h.durability, dir: t.TempDir()}
		if err := h2.open(t).(kv.Compacter).Compact(); err != nil {
			t.Fatalf("Compact of an empty store: %v", err)
		}
	}
}

func testRejectsUnknownOption(t *testing.T, h *harness) {
	s, err := h.engine.Open(kv.Options{
		Dir:        h.dir,
		Durability: h.durability,
		Extra:      map[string]string{"no_such_option": "1"},
	})
	if err == nil {
		s.Close()
		t.Fatalf("Open accepted an unknown option")
	}
	s, err = h.engine.Open(kv.Options{Dir: t.TempDir(), Durability: "sometimes"})
	if err == nil {
		s.Close()
		t.Fatalf("Open accepted an unknown durability class")
	}
}
