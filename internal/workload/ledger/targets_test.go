package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"storebench/internal/kv"
	_ "storebench/internal/server/all"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
)

// TestMain lets the test binary stand in for storebench (FerretDB).
func TestMain(m *testing.M) { servertest.Main(m) }

// The ledger's layout on every server target that has one, each on the
// server make test shares (or one started for the test; Aerospike only
// on the one STOREBENCH_TEST_AEROSPIKE_URI names, else its subtest is
// skipped, saying so), with sync
// durability: MongoDB and FerretDB on PostgreSQL with addresses as
// strings and as binary _ids (the layout for MongoDB itself).
func TestLayoutOnServerTargets(t *testing.T) {
	for _, c := range []struct {
		target string
		extra  map[string]string
	}{
		{"redis", map[string]string{"pool": "8"}},
		{"mysql", nil},
		{"postgres", nil},
		{"mongodb", nil},
		{"mongodb", map[string]string{"address_id": "binary"}},
		{"ferretdb-pg", nil},
		{"ferretdb-pg", map[string]string{"address_id": "binary"}},
		{"cassandra", nil},
		{"aerospike", map[string]string{"pool": "8"}},
	} {
		name := c.target
		if c.extra["address_id"] != "" {
			name += ",address_id=" + c.extra["address_id"]
		}
		t.Run(name, func(t *testing.T) {
			h := captest.Open(t, c.target, target.Options{URI: captest.URI(t, c.target, "ledger_test"), Durability: kv.Sync, Extra: c.extra})
			defer h.Close()
			if id := c.extra["address_id"]; id != "" {
				if s := h.(kv.Describer).Settings(); s["address_id"] != id {
					t.Errorf("address_id %q, want %q", s["address_id"], id)
				}
			}
			checkLayout(t, h)
			checkUnindexed(t, h, c.target)
		})
	}
}

// checkUnindexed checks the layout without its chain index
// (chains.index false): transactions round-trip by address, Chain
// refuses, and where the index is data of its own (not an index MongoDB
// keeps on the documents) the indexed layout finds no chain entries.
// SQL layouts refuse it.
func checkUnindexed(t *testing.T, h any, name string) {
	t.Helper()
	s, _, _ := ledger.StoreOf(h)
	u, ok := ledger.WithoutChainIndex(s)
	if name == "mysql" || name == "postgres" {
		if ok {
			t.Fatal("an SQL layout offered to drop its chain index")
		}
		return
	}
	if !ok {
		t.Fatalf("%T cannot drop its chain index", s)
	}
	ctx := context.Background()
	if err := ledger.Prepare(ctx, u); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	c := makeChain(rng, 7)
	if err := u.PutTxs(ctx, c); err != nil {
		t.Fatalf("PutTxs without the chain index: %v", err)
	}
	for _, tx := range c {
		got, err := u.GetTx(ctx, tx.Address)
		if err != nil || !bytes.Equal(ledger.Encode(nil, got), ledger.Encode(nil, tx)) {
			t.Fatalf("GetTx %x without the chain index: %v", tx.Address[:4], err)
		}
	}
	if err := u.Chain(ctx, c[0].Address, func(ledger.Tx) bool { return true }); !errors.Is(err, ledger.ErrNoChainIndex) {
		t.Errorf("Chain without the chain index: %v", err)
	}
	if strings.HasPrefix(name, "mongodb") || strings.HasPrefix(name, "ferretdb") {
		return
	}
	n := 0
	if err := s.Chain(ctx, c[0].Address, func(ledger.Tx) bool { n++; return true }); err != nil || n != 0 {
		t.Errorf("the chain index holds %d entries of a chain written without it (%v)", n, err)
	}
}

// checkLayout checks the ledger.Store a target offers: transactions
// round-trip byte for byte, a chain written out of order across two calls
// reads back in index order and stops when asked, rewrites are accepted,
// balances round-trip, and absent keys wrap kv.ErrNotFound.
func checkLayout(t *testing.T, h any) {
	t.Helper()
	s, _, ok := ledger.StoreOf(h)
	if !ok {
		t.Fatalf("%T offers no ledger layout", h)
	}
	ctx := context.Background()
	if err := ledger.Prepare(ctx, s); err != nil {
		t.Fatalf("ledger tables: %v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	a := makeChain(rng, 12)
	b := makeChain(rng, 5)

	// Out of order, across two calls, interleaved with another chain.
	first := append([]ledger.Tx{a[9], a[3], b[4], a[11], a[7]}, a[5], b[0])
	second := []ledger.Tx{a[0], a[10], b[2], a[1], a[2], b[1], a[4], b[3], a[6], a[8]}
	if err := s.PutTxs(ctx, first); err != nil {
		t.Fatalf("PutTxs: %v", err)
	}
	if err := s.PutTxs(ctx, second); err != nil {
		t.Fatalf("PutTxs: %v", err)
	}
	if err := s.PutTxs(ctx, nil); err != nil {
		t.Errorf("PutTxs(nil): %v", err)
	}
	for _, tx := range append(append([]ledger.Tx(nil), a...), b...) {
		got, err := s.GetTx(ctx, tx.Address)
		if err != nil {
			t.Fatalf("GetTx %x: %v", tx.Address[:4], err)
		}
		if !bytes.Equal(ledger.Encode(nil, got), ledger.Encode(nil, tx)) {
			t.Errorf("GetTx %x: got %+v, want %+v", tx.Address[:4], brief(got), brief(tx))
		}
	}
	// The returned transaction is the caller's: scribbling on it changes
	// nothing stored.
	got, _ := s.GetTx(ctx, a[1].Address)
	for i := range got.Payload {
		got.Payload[i] ^= 0xff
	}
	if again, err := s.GetTx(ctx, a[1].Address); err != nil || !bytes.Equal(ledger.Encode(nil, again), ledger.Encode(nil, a[1])) {
		t.Errorf("GetTx after scribbling on a returned transaction: %v", err)
	}

	missing := worktest.RandomBytes(rng, 32)
	if _, err := s.GetTx(ctx, missing); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("GetTx of a missing address: %v, want kv.ErrNotFound", err)
	}

	checkChain(t, s, "chain a", a)
	checkChain(t, s, "chain b", b)
	var n int
	if err := s.Chain(ctx, a[0].Address, func(tx ledger.Tx) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Errorf("Chain stopped after %d transactions (%v), want 3", n, err)
	}
	n = 0
	if err := s.Chain(ctx, missing, func(ledger.Tx) bool { n++; return true }); err != nil || n != 0 {
		t.Errorf("Chain of an unknown genesis: %d transactions, %v", n, err)
	}

	// Writing the same transactions again (a ladder re-inserts the first
	// N) succeeds and changes nothing.
	if err := s.PutTxs(ctx, a[:6]); err != nil {
		t.Fatalf("PutTxs again: %v", err)
	}
	checkChain(t, s, "chain a rewritten", a)

	// A large payload and a batch larger than any driver's chunk.
	big := makeChain(rng, 600)
	big[1].Payload = worktest.RandomBytes(rng, 3<<20)
	if err := s.PutTxs(ctx, big); err != nil {
		t.Fatalf("PutTxs of %d transactions: %v", len(big), err)
	}
	checkChain(t, s, "long chain", big)

	// Balances, including the extremes of uint64.
	addrs := [][]byte{worktest.RandomBytes(rng, 32), worktest.RandomBytes(rng, 32), worktest.RandomBytes(rng, 32), worktest.RandomBytes(rng, 32)}
	amounts := []uint64{0, 1, math.MaxUint64, 1 << 63}
	if err := s.PutBalances(ctx, addrs, amounts); err != nil {
		t.Fatalf("PutBalances: %v", err)
	}
	amounts[1] = 42
	if err := s.PutBalances(ctx, addrs[1:2], amounts[1:2]); err != nil {
		t.Fatalf("PutBalances (overwrite): %v", err)
	}
	for i, addr := range addrs {
		got, err := s.GetBalance(ctx, addr)
		if err != nil || got != amounts[i] {
			t.Errorf("GetBalance %x = %d, %v; want %d", addr[:4], got, err, amounts[i])
		}
	}
	if _, err := s.GetBalance(ctx, missing); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("GetBalance of a missing address: %v, want kv.ErrNotFound", err)
	}
	many := make([][]byte, 3000)
	vals := make([]uint64, len(many))
	for i := range many {
		many[i] = worktest.RandomBytes(rng, 32)
		vals[i] = rng.Uint64()
	}
	if err := s.PutBalances(ctx, many, vals); err != nil {
		t.Fatalf("PutBalances of %d: %v", len(many), err)
	}
	for _, i := range []int{0, 1, 1500, len(many) - 1} {
		if got, err := s.GetBalance(ctx, many[i]); err != nil || got != vals[i] {
			t.Errorf("GetBalance #%d = %d, %v; want %d", i, got, err, vals[i])
		}
	}

	// Many goroutines at once, as the stress phase drives it.
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(a); i += 8 {
				got, err := s.GetTx(ctx, a[i].Address)
				if err != nil || !bytes.Equal(ledger.Encode(nil, got), ledger.Encode(nil, a[i])) {
					t.Errorf("concurrent GetTx %d: %v", i, err)
				}
			}
		}(w)
	}
	wg.Wait()
}

func checkChain(t *testing.T, s ledger.Store, what string, want []ledger.Tx) {
	t.Helper()
	var got []ledger.Tx
	err := s.Chain(context.Background(), want[0].Address, func(tx ledger.Tx) bool {
		got = append(got, tx)
		return true
	})
	if err != nil {
		t.Fatalf("%s: Chain: %v", what, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: Chain gave %d transactions, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(ledger.Encode(nil, got[i]), ledger.Encode(nil, want[i])) {
			t.Fatalf("%s: Chain entry %d is %+v, want %+v", what, i, brief(got[i]), brief(want[i]))
		}
	}
}

// makeChain builds n transactions of a fresh chain, with payloads of
// varied sizes (including none).
func makeChain(rng *rand.Rand, n int) []ledger.Tx {
	txs := make([]ledger.Tx, n)
	for i := range txs {
		tx := &txs[i]
		tx.Address = worktest.RandomBytes(rng, 32)
		tx.Prev = make([]byte, 32)
		if i > 0 {
			tx.Prev = txs[i-1].Address
			tx.Genesis = txs[0].Address
		} else {
			tx.Genesis = tx.Address
		}
		tx.Index = uint64(i)
		tx.Timestamp = 1_600_000_000_000 + int64(i)*1000 - int64(rng.IntN(500))
		tx.Type = uint8(i % 4)
		if i == 4 {
			tx.Type = 255
		}
		size := []int{100, 0, 1, 1024, 4096}[i%5]
		tx.Payload = worktest.RandomBytes(rng, size)
	}
	return txs
}

type briefTx struct {
	Addr, Prev, Genesis string
	Index               uint64
	Timestamp           int64
	Type                uint8
	Payload             int
}

func brief(tx ledger.Tx) briefTx {
	h := func(b []byte) string {
		if len(b) > 4 {
			return fmt.Sprintf("%x…(%d)", b[:4], len(b))
		}
		return fmt.Sprintf("%x", b)
	}
	return briefTx{h(tx.Address), h(tx.Prev), h(tx.Genesis), tx.Index, tx.Timestamp, tx.Type, len(tx.Payload)}
}
