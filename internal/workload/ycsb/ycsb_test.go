package ycsb

import (
	"context"
	"errors"
	"storebench/internal/workload/gen"
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/target/pebble"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
)

const smallStudy = `
name: t
ladder: [2000]
concurrency: 3
targets: [pebble]
workloads:
  - name: ycsb
    params:
      operations: 3000
      fields: 4
      field_length: 40
      max_scan_length: 20
`

func setup(t *testing.T) ([]workload.Step, kv.Store) {
	t.Helper()
	steps := worktest.Plan(t, YCSB{}, smallStudy)
	eng, _ := kv.Lookup("pebble")
	st, err := eng.Open(kv.Options{Dir: t.TempDir(), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return steps, st
}

func TestLoadAndEveryCoreWorkloadVerify(t *testing.T) {
	steps, st := setup(t)
	var phases []string
	for _, s := range steps {
		phases = append(phases, s.Phase)
		res, err := YCSB{}.Execute(context.Background(), &workload.Env{Target: st}, s)
		if err != nil {
			t.Fatalf("%s: %v", s.Phase, err)
		}
		if s.Phase == "load" {
			if res.Ops != 2000 {
				t.Fatalf("load inserted %d records", res.Ops)
			}
			continue
		}
		if res.Ops != 3000 || res.Verify.Checked == 0 {
			t.Fatalf("workload %s: ops %d verified %d", s.Phase, res.Ops, res.Verify.Checked)
		}
		m := core[s.Phase]
		for name, frac := range map[string]float64{"READ": m.read, "UPDATE": m.update, "INSERT": m.insert, "SCAN": m.scan, "READ-MODIFY-WRITE": m.rmw} {
			got := float64(res.ByOp[name].Count) / 3000
			if got < frac-0.05 || got > frac+0.05 {
				t.Errorf("workload %s: %s is %.2f of operations, want %.2f", s.Phase, name, got, frac)
			}
		}
	}
	if strings.Join(phases, ",") != "load,a,b,c,f,d,e" {
		t.Fatalf("plan: %v", phases)
	}
}

// The core workloads that insert (D, then E, on the table loaded once
// for the size) insert records of their own: the table ends with the
// loaded records and every insert of every workload, none written twice
// (on a SQL table a second insert of a key is a duplicate-key error that
// fails the step; on PostgreSQL and MariaDB E failed so after D).
func TestInsertsOfEachWorkloadAreNewRecords(t *testing.T) {
	steps, st := setup(t)
	want := int64(0)
	for _, s := range steps {
		res, err := YCSB{}.Execute(context.Background(), &workload.Env{Target: st}, s)
		if err != nil {
			t.Fatalf("%s: %v", s.Phase, err)
		}
		if s.Phase == "load" {
			want += res.Ops
		} else {
			want += res.ByOp["INSERT"].Count
		}
	}
	var got int64
	if err := st.Scan(nil, nil, func(k, v []byte) bool { got++; return true }); err != nil {
		t.Fatal(err)
	}
	if got != want || want <= 2000 {
		t.Fatalf("the table holds %d records; the load and the workloads' inserts made %d", got, want)
	}
}

func TestZipfianIsSkewed(t *testing.T) {
	z := newZipfian(1000)
	counts := make([]int, 1000)
	for i := 0; i < 100000; i++ {
		counts[z.rank(uniform01(gen.Mix(7, uint64(i))))]++
	}
	// With theta 0.99 over 1000 items rank 0 draws ~13% and the top 10
	// about 40%; uniform would give 0.1% and 1%.
	top10 := 0
	for _, c := range counts[:10] {
		top10 += c
	}
	if counts[0] < 8000 || top10 < 30000 || counts[999] > 200 {
		t.Fatalf("not zipfian: rank0=%d top10=%d last=%d", counts[0], top10, counts[999])
	}
}

func TestCorruptFieldFailsLoudly(t *testing.T) {
	steps, st := setup(t)
	if _, err := (YCSB{}).Execute(context.Background(), &workload.Env{Target: st}, steps[0]); err != nil {
		t.Fatal(err)
	}
	// Swap field values between two records, as a misdirected write would.
	db := KVDB{KV: st}
	for i := uint64(0); i < 2000; i++ {
		a, b := key(nil, i), key(nil, (i+1)%2000)
		fb, _ := db.Read(context.Background(), b)
		if err := db.Insert(context.Background(), a, fb); err != nil {
			t.Fatal(err)
		}
	}
	_, err := YCSB{}.Execute(context.Background(), &workload.Env{Target: st}, steps[3]) // workload c
	var ve *workload.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "belongs to another record") {
		t.Fatalf("misdirected data not caught: %v", err)
	}
}

func TestScanNeedsScanner(t *testing.T) {
	_, st := setup(t)
	if err := CanRun(st, "e"); err != nil {
		t.Fatalf("an ordered KV store can run E: %v", err)
	}
	type readOnly struct{ DB }
	if err := CanRun(readOnly{KVDB{KV: st}}, "e"); err == nil || !strings.Contains(err.Error(), "ordered scan") {
		t.Fatalf("a target without scans was accepted for E: %v", err)
	}
	if err := CanRun(readOnly{KVDB{KV: st}}, "a"); err != nil {
		t.Fatal(err)
	}
}

// Every step records item_bytes, a record's key and fields as written:
// "user" + 20 digits and fields × field_length, which is what each
// record in the store holds (its fields decoded out of the engine's
// framing).
func TestItemBytesIsKeyAndFields(t *testing.T) {
	const fields, fieldLength = 3, 16 // the least field_length allowed
	want := float64(len("user") + 20 + fields*fieldLength)
	steps := worktest.Plan(t, YCSB{}, `
name: t
ladder: [200]
concurrency: 2
targets: [pebble]
workloads:
  - name: ycsb
    params:
      workloads: [a, c]
      operations: 300
      fields: 3
      field_length: 16
`)
	eng, _ := kv.Lookup("pebble")
	st, err := eng.Open(kv.Options{Dir: t.TempDir(), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, s := range steps {
		res, err := YCSB{}.Execute(context.Background(), &workload.Env{Target: st}, s)
		if err != nil {
			t.Fatalf("%s: %v", s.Phase, err)
		}
		if got, ok := res.Metrics[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", s.Phase, got, ok, want)
		}
	}
	records := 0
	if err := st.Scan(nil, nil, func(k, v []byte) bool {
		f, err := decodeFields(v)
		if err != nil {
			t.Fatalf("record %q: %v", k, err)
		}
		n := len(k)
		for _, x := range f {
			n += len(x)
		}
		if float64(n) != want {
			t.Fatalf("record %q holds %d bytes of key and fields, want %v", k, n, want)
		}
		records++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if records != 200 {
		t.Fatalf("%d records in the store, want 200", records)
	}
}
