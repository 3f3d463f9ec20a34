package servers

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/workload/geo"
	"storebench/internal/workload/http"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/pointselect"
	"storebench/internal/workload/ycsb"
)

// The conformance checks every server target's tests run. They take T, the
// part of testing.TB they use (*testing.T satisfies it), so that package
// testing stays out of the storebench binary.

// T is what the checks need from a test.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// OpenTimeout is the longest Open may take to report an unreachable
// server or refused credentials. The targets give up after 3–5 s of their
// own; the bound is what catches an Open that waits on a server forever,
// with room for a make test whose packages share 2 cores with their
// servers (MySQL's 4 s timeout once took 5.4 s there).
const OpenTimeout = 8 * time.Second

// TestPassword is the password the credential checks put in URIs: it must
// never show in an error or in Settings.
const TestPassword = "Pw-s3cret-7f2q"

// Open opens a registered target or fails the test, closing it when the
// returned cleanup runs.
func Open(t T, name string, o target.Options) io.Closer {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	start := time.Now()
	h, err := info.Open(o)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Logf("opened %s in %v", name, time.Since(start).Round(time.Millisecond))
	CheckCaps(t, info, h)
	return h
}

// CheckCaps checks that what a target declares it provides is what its
// handle implements, capability by capability: the coordinator matches
// steps against the declaration, so a wrong one would fail a step that
// was expected to run, or call n/a a step the target can run.
func CheckCaps(t T, info target.Info, h any) {
	t.Helper()
	_, isKV := h.(kv.Store)
	adsStore, isADS := h.(ads.Store)
	db, isDB := ycsb.Of(h)
	_, isScanner := db.(ycsb.Scanner)
	_, isAttacher := db.(ycsb.Attacher)
	isAttacher = isAttacher && !isKV // an embedded engine is one process's
	_, _, isLedger := ledger.StoreOf(h)
	_, isPipeliner := h.(target.Pipeliner)
	_, isSelecter := h.(target.IntSelecter)
	_, isSQLDB := h.(target.SQLDB)
	_, isSQLDriver := h.(target.SQLDriver)
	isSQL := isSelecter && (isSQLDB || isSQLDriver)
	_, isHTTP := h.(http.Site)
	_, isCompacter := h.(kv.Compacter)
	closer, _ := h.(io.Closer)
	_, geoErr := geo.StoreOf(closer)
	isGeo := geoErr == nil
	for _, c := range []struct {
		cap target.Cap
		has bool
	}{
		{target.KeyValue, isKV || isDB},
		{target.OrderedScan, isKV || isDB && isScanner},
		{target.Secondary, isKV || isLedger},
		{target.Pipeline, isKV || isPipeliner},
		{target.SQL, isSQL},
		{target.Batch, isKV || isADS},
		{target.AuthRoots, isADS && ads.Authenticated(adsStore)},
		{target.HTTP, isHTTP},
		{target.Compaction, isCompacter},
		{target.Geo, isKV || isGeo},
		{target.Shared, isAttacher},
	} {
		if info.Provides.Has(c.cap) != c.has {
			t.Errorf("%s declares %s: %v, but its handle %T implements it: %v", info.Name, c.cap, info.Provides.Has(c.cap), h, c.has)
		}
	}
}

// Info checks what a server target registers.
func Info(t T, name, server string, schemes ...string) {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if info.Kind != "server" || info.Title == "" || info.Version == "" || info.Open == nil || info.Server != server {
		t.Errorf("%s registered as %+v", name, info)
	}
	if !contains(info.OptionNames, "pool") {
		t.Errorf("%s: option names %v lack pool", name, info.OptionNames)
	}
	for _, s := range schemes {
		got, err := target.Lookup(s + "://127.0.0.1:1/x")
		if err != nil || got.Name != name {
			t.Errorf("scheme %s:// selects %q, %v; want %s", s, got.Name, err, name)
		}
	}
	if len(info.Schemes) != len(schemes) {
		t.Errorf("%s: schemes %v, want %v", name, info.Schemes, schemes)
	}
}

// Settings checks that a handle describes itself with the keys every
// server target reports, and never with a password.
func Settings(t T, h any, extraKeys ...string) map[string]string {
	t.Helper()
	d, ok := h.(kv.Describer)
	if !ok {
		t.Fatalf("%T does not implement kv.Describer", h)
	}
	s := d.Settings()
	for _, k := range append([]string{"server", "client", "durability", "pool", "layout.ycsb"}, extraKeys...) {
		if s[k] == "" {
			t.Errorf("Settings lacks %q: %v", k, s)
		}
	}
	for k, v := range s {
		if strings.Contains(v, TestPassword) {
			t.Errorf("Settings[%q] shows the password: %q", k, v)
		}
	}
	return s
}

// ClosedPort returns a local port nothing listens on (a listener bound then
// closed), so that a connection to it is refused.
func ClosedPort(t T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Unreachable opens the target on a closed port and checks that it fails
// within OpenTimeout with an error that names the target and the redacted
// URI and does not show the password. uriFormat takes the password and
// the port, e.g. "redis://bench:%s@127.0.0.1:%d/0".
func Unreachable(t T, name, uriFormat string) {
	t.Helper()
	uri := fmt.Sprintf(uriFormat, TestPassword, ClosedPort(t))
	err := OpenFails(t, name, uri)
	redacted := redact.Text(uri)
	if !strings.Contains(err.Error(), redacted) {
		t.Errorf("error does not name the redacted URI %s: %v", redacted, err)
	}
}

// OpenFails opens uri (Sync durability), checks that it fails within
// OpenTimeout without showing TestPassword and naming the target, and
// returns the error.
func OpenFails(t T, name, uri string) error {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	start := time.Now()
	h, err := info.Open(target.Options{URI: uri, Durability: kv.Sync})
	took := time.Since(start)
	if err == nil {
		h.Close()
		t.Fatalf("open %s succeeded", redact.Text(uri))
	}
	t.Logf("open %s failed in %v: %v", redact.Text(uri), took.Round(time.Millisecond), err)
	if took >= OpenTimeout {
		t.Errorf("open took %v to fail, want < %v", took, OpenTimeout)
	}
	msg := err.Error()
	if strings.Contains(msg, TestPassword) {
		t.Errorf("error shows the password: %v", err)
	}
	if !strings.Contains(msg, name) {
		t.Errorf("error does not name the target %s: %v", name, err)
	}
	return err
}

// WithCredentials puts user and TestPassword into a URI's authority,
// replacing any it had.
func WithCredentials(uri, user string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if slash := strings.Index(rest, "/"); slash < 0 || slash > at {
			rest = rest[at+1:]
		}
	}
	return scheme + "://" + user + ":" + TestPassword + "@" + rest
}

// ModuleVersion checks that go.mod requires module at version: each target
// states its client's version as a constant (test binaries carry no module
// build information to read it from).
func ModuleVersion(t T, module, version string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("%v", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
				if len(f) >= 2 && f[0] == module {
					if f[1] != version {
						t.Errorf("go.mod requires %s %s, the target says %s", module, f[1], version)
					}
					return
				}
			}
			t.Errorf("go.mod does not require %s", module)
			return
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Ledger checks a ledger.Store: transactions round-trip byte for byte, a
// chain written out of order across two calls reads back in index order
// and stops when asked, rewrites are accepted, balances round-trip, and
// absent keys wrap kv.ErrNotFound.
func Ledger(t T, h any) {
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

	missing := random(rng, 32)
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
	big[1].Payload = random(rng, 3<<20)
	if err := s.PutTxs(ctx, big); err != nil {
		t.Fatalf("PutTxs of %d transactions: %v", len(big), err)
	}
	checkChain(t, s, "long chain", big)

	// Balances, including the extremes of uint64.
	addrs := [][]byte{random(rng, 32), random(rng, 32), random(rng, 32), random(rng, 32)}
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
		many[i] = random(rng, 32)
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

func checkChain(t T, s ledger.Store, what string, want []ledger.Tx) {
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
		tx.Address = random(rng, 32)
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
		tx.Payload = random(rng, size)
	}
	return txs
}

func random(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(b[i:], w[:])
	}
	return b
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

// YCSB checks a ycsb.DB: Init, Insert, Read, partial Update, Read of a
// missing key, Init dropping the previous run's records, and Scan (order,
// count, early stop) when scanner says the target must offer it.
func YCSB(t T, h any, scanner bool) {
	t.Helper()
	db, ok := ycsb.Of(h)
	if !ok {
		t.Fatalf("%T offers no YCSB table", h)
	}
	sc, isScanner := db.(ycsb.Scanner)
	if isScanner != scanner {
		t.Errorf("%T implements ycsb.Scanner: %v, want %v", h, isScanner, scanner)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	const fieldCount = 4
	if err := db.Init(ctx, fieldCount); err != nil {
		t.Fatalf("Init: %v", err)
	}
	record := func(i int) [][]byte {
		f := make([][]byte, fieldCount)
		for j := range f {
			f[j] = random(rng, 10+i+j*7)
			f[j][0] = byte(i) // distinct even if the generator repeated
		}
		return f
	}
	keys := make([][]byte, 20)
	want := make([][][]byte, len(keys))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user%04d", 1000+i*10))
	}
	// Insert in a scrambled order; the key buffer is reused by the caller.
	buf := make([]byte, 0, 16)
	for _, i := range rng.Perm(len(keys)) {
		want[i] = record(i)
		buf = append(buf[:0], keys[i]...)
		if err := db.Insert(ctx, buf, want[i]); err != nil {
			t.Fatalf("Insert %s: %v", keys[i], err)
		}
		for j := range buf {
			buf[j] = 'X'
		}
	}
	for i, k := range keys {
		got, err := db.Read(ctx, k)
		if err != nil {
			t.Fatalf("Read %s: %v", k, err)
		}
		checkFields(t, "Read "+string(k), got, want[i])
	}
	// Partial update: only field 1 changes.
	upd := make([][]byte, fieldCount)
	upd[1] = []byte("updated value of field1")
	if err := db.Update(ctx, keys[3], upd); err != nil {
		t.Fatalf("Update: %v", err)
	}
	want[3][1] = upd[1]
	got, err := db.Read(ctx, keys[3])
	if err != nil {
		t.Fatalf("Read after Update: %v", err)
	}
	checkFields(t, "Read after a partial Update", got, want[3])
	// Full update.
	full := record(99)
	if err := db.Update(ctx, keys[4], full); err != nil {
		t.Fatalf("Update of every field: %v", err)
	}
	want[4] = full
	got, err = db.Read(ctx, keys[4])
	if err != nil {
		t.Fatalf("Read after Update: %v", err)
	}
	checkFields(t, "Read after a full Update", got, want[4])

	if _, err := db.Read(ctx, []byte("user0999")); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Read of a missing key: %v, want kv.ErrNotFound", err)
	}

	if scanner && isScanner {
		var gotKeys []string
		err := sc.Scan(ctx, []byte("user1045"), 5, func(k []byte, f [][]byte) bool {
			gotKeys = append(gotKeys, string(k))
			i := (int(k[4]-'0')*1000 + int(k[5]-'0')*100 + int(k[6]-'0')*10 + int(k[7]-'0') - 1000) / 10
			if i >= 0 && i < len(want) {
				checkFields(t, "Scan "+string(k), f, want[i])
			}
			return true
		})
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		if w := []string{"user1050", "user1060", "user1070", "user1080", "user1090"}; strings.Join(gotKeys, ",") != strings.Join(w, ",") {
			t.Errorf("Scan from user1045, 5 records: %v, want %v", gotKeys, w)
		}
		gotKeys = nil
		if err := sc.Scan(ctx, []byte("user1150"), 100, func(k []byte, _ [][]byte) bool {
			gotKeys = append(gotKeys, string(k))
			return true
		}); err != nil || strings.Join(gotKeys, ",") != "user1150,user1160,user1170,user1180,user1190" {
			t.Errorf("Scan to the end: %v, %v", gotKeys, err)
		}
		n := 0
		if err := sc.Scan(ctx, []byte("user"), 10, func([]byte, [][]byte) bool { n++; return n < 2 }); err != nil || n != 2 {
			t.Errorf("Scan stopped after %d records (%v), want 2", n, err)
		}
	}

	// Concurrent inserts and reads.
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				k := []byte(fmt.Sprintf("user9%02d%02d", w, i))
				f := [][]byte{k, []byte("b"), []byte("c"), []byte("d")}
				if err := db.Insert(ctx, k, f); err != nil {
					t.Errorf("concurrent Insert: %v", err)
					return
				}
				got, err := db.Read(ctx, k)
				if err != nil || len(got) != fieldCount || !bytes.Equal(got[0], k) {
					t.Errorf("concurrent Read %s: %q, %v", k, got, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()

	// Init drops what the previous run left.
	if err := db.Init(ctx, fieldCount); err != nil {
		t.Fatalf("Init again: %v", err)
	}
	if _, err := db.Read(ctx, keys[0]); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Read after Init: %v, want kv.ErrNotFound", err)
	}
	if err := db.Insert(ctx, keys[0], want[0]); err != nil {
		t.Fatalf("Insert after Init: %v", err)
	}
	if got, err := db.Read(ctx, keys[0]); err != nil {
		t.Errorf("Read after Init and Insert: %v", err)
	} else {
		checkFields(t, "Read after Init and Insert", got, want[0])
	}
}

func checkFields(t T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d fields, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s: field %d is %q, want %q", what, i, got[i], want[i])
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SetGet checks a target.Pipeliner: pipelined SETs read back by pipelined
// GETs on sessions of their own, an absent key as nil.
func SetGet(t T, h any) {
	t.Helper()
	p, ok := h.(target.Pipeliner)
	if !ok {
		t.Fatalf("%T does not implement target.Pipeliner", h)
	}
	a, err := p.NewSession(context.Background())
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer a.Close()
	b, err := p.NewSession(context.Background())
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer b.Close()
	prefix := fmt.Sprintf("setget:%d:", time.Now().UnixNano())
	keys := [][]byte{[]byte(prefix + "a"), []byte(prefix + "b"), []byte(prefix + "c")}
	vals := [][]byte{[]byte("xxx"), bytes.Repeat([]byte{'y'}, 100<<10), {}}
	if err := a.Set(keys, vals); err != nil {
		t.Fatalf("Set: %v", err)
	}
	got := make([][]byte, 4)
	err = b.Get(append(keys, []byte(prefix+"missing")), func(i int, v []byte) error {
		if v != nil {
			v = append([]byte{}, v...)
		}
		got[i] = v
		return nil
	})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	for i := range vals {
		if got[i] == nil || !bytes.Equal(got[i], vals[i]) {
			t.Errorf("Get %s: %d bytes, want %d", keys[i], len(got[i]), len(vals[i]))
		}
	}
	if got[3] != nil {
		t.Errorf("Get of a missing key: %q, want nil", got[3])
	}
}

// PointSelect checks a target.IntSelecter, with the pointselect
// workload's select, on a table whose rows (key -> value) the test
// created.
func PointSelect(t T, h any, table, key, value string, rows map[int64]int64) {
	t.Helper()
	if _, ok := h.(target.IntSelecter); !ok {
		t.Fatalf("%T does not implement target.IntSelecter", h)
	}
	ctx := context.Background()
	c, err := pointselect.Open(ctx, h, table, key, value)
	if err != nil {
		t.Fatalf("pointselect.Open: %v", err)
	}
	defer c.Close()
	for k, want := range rows {
		got, found, err := c.Select(ctx, k)
		if err != nil || !found || got != want {
			t.Errorf("Select %d = %d, %v, %v; want %d", k, got, found, err, want)
		}
	}
	if _, found, err := c.Select(ctx, -12345); err != nil || found {
		t.Errorf("Select of a missing key: found %v, %v", found, err)
	}
	if _, err := pointselect.Open(ctx, h, "no_such_table", key, value); err == nil {
		t.Errorf("pointselect.Open accepted a missing table")
	}
}

// Silent opens the target on a port that accepts connections but never
// answers (a hung server) and checks that Open gives up within
// OpenTimeout with an error that does not show the password. uriFormat is
// as for Unreachable.
func Silent(t T, name, uriFormat string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	OpenFails(t, name, fmt.Sprintf(uriFormat, TestPassword, l.Addr().(*net.TCPAddr).Port))
}
