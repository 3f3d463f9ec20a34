package ycsb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
	"storebench/internal/workload/ycsb"
)

// TestMain lets the test binary stand in for storebench (FerretDB).
func TestMain(m *testing.M) { servertest.Main(m) }

// The YCSB layout on the server targets that have one, each on the server
// make test shares (or one started for the test; Aerospike only on the
// one STOREBENCH_TEST_AEROSPIKE_URI names, else its subtest is skipped,
// saying so); scan says whether the target offers Scan (workload E). Redis is checked in TestOnRedis, a
// Redis Cluster in TestClusterRedisYCSB (build tag cluster).
func TestLayoutOnServerTargets(t *testing.T) {
	for _, c := range []struct {
		target string
		d      kv.Durability
		scan   bool
	}{
		{"mysql", kv.Async, true},
		{"postgres", kv.Async, true},
		{"mongodb", kv.Async, true},
		{"ferretdb-pg", kv.Async, true},
		{"memcached", kv.Sync, false},
		{"cassandra", kv.Async, false},
		{"aerospike", kv.Async, false},
	} {
		t.Run(c.target, func(t *testing.T) {
			h := captest.Open(t, c.target, target.Options{URI: captest.URI(t, c.target, "ycsb_test"), Durability: c.d})
			defer h.Close()
			checkDB(t, h, c.scan)
		})
	}
}

// checkDB checks the ycsb.DB a target offers: Init, Insert, Read, partial
// Update, Read of a missing key, Init dropping the previous run's
// records, and Scan (order, count, early stop) when scanner says the
// target must offer it.
func checkDB(t *testing.T, h any, scanner bool) {
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
			f[j] = worktest.RandomBytes(rng, 10+i+j*7)
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

func checkFields(t *testing.T, what string, got, want [][]byte) {
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
