package documents_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"storebench/internal/kv"
	"storebench/internal/results"
	_ "storebench/internal/server/ferretdb"
	_ "storebench/internal/server/postgres"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/mongodb"
	_ "storebench/internal/target/postgres"
	_ "storebench/internal/target/sqlite"
	"storebench/internal/workload"
	"storebench/internal/workload/documents"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
)

// TestMain lets the test binary stand in for storebench: the FerretDB
// server package starts `<this executable> server-main ferretdb ...`.
func TestMain(m *testing.M) { servertest.Main(m) }

const study = `
name: t
seed: 7
ladder: [100]
concurrency: 4
targets: [sqlite]
workloads:
  - name: documents
    params:
      collections: 3
      operations: %OPS%
      duration: %DUR%
      text_size: 12
      batch: 64
`

func plan(t *testing.T, ops int, dur string) []workload.Step {
	src := strings.NewReplacer("%OPS%", fmt.Sprint(ops), "%DUR%", dur).Replace(study)
	return worktest.Plan(t, documents.Documents{}, src)
}

// open opens a target the documents workload runs on: SQLite in a
// temporary directory, or a server's target on the shared server, in a
// database of the test's own (captest.URI on PostgreSQL: another
// package's fresh step empties the workload tables, perf1..perf3 among
// them, of the database it runs in, which on the server's own would be
// this test's mid-run).
func open(t *testing.T, name string) io.Closer {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Provides.Has(target.DocumentStore) {
		t.Fatalf("%s does not declare a document store", name)
	}
	o := target.Options{Durability: kv.Async}
	switch name {
	case "sqlite":
		o.Dir = t.TempDir()
	case "mongodb", "ferretdb-pg":
		base := servertest.URI(t, info.Server)
		o.URI = strings.TrimSuffix(base, "/storebench") + fmt.Sprintf("/sbdocs_%d", time.Now().UnixNano())
	default:
		o.URI = captest.URI(t, name, "documents_test")
	}
	h, err := info.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// mongodb is FerretDB on SQLite; ferretdb-pg FerretDB on PostgreSQL.
var targets = []string{"sqlite", "postgres", "mongodb", "ferretdb-pg"}

func exec(t *testing.T, h io.Closer, st workload.Step) *results.Step {
	t.Helper()
	res, err := documents.Documents{}.Execute(context.Background(), &workload.Env{Target: h}, st)
	if err != nil {
		t.Fatalf("%s: %v", st.Phase, err)
	}
	return res
}

func counts(t *testing.T, s documents.Store) (total int64) {
	t.Helper()
	for c := 0; c < 3; c++ {
		n, maxID, err := s.DocumentStats(context.Background(), documents.Collection(c))
		if err != nil {
			t.Fatal(err)
		}
		if n != maxID {
			t.Fatalf("%s: %d documents, highest _id %d", documents.Collection(c), n, maxID)
		}
		total += n
	}
	return total
}

func TestEveryModeOnEveryTarget(t *testing.T) {
	for _, name := range targets {
		t.Run(name, func(t *testing.T) {
			h := open(t, name)
			s, _ := documents.StoreOf(h)
			if c, ok := s.(io.Closer); ok {
				t.Cleanup(func() { c.Close() })
			}
			steps := plan(t, 90, "0s")
			var phases []string
			for _, st := range steps {
				phases = append(phases, st.Phase)
			}
			if strings.Join(phases, ",") != "prepare,insert,iterate_one,update_one,delete_one" {
				t.Fatalf("plan: %v", phases)
			}
			prep := exec(t, h, steps[0])
			if prep.Verify.Checked != 300 || prep.Metrics["documents"] != 300 || counts(t, s) != 300 {
				t.Fatalf("prepare: checked %d, documents %v", prep.Verify.Checked, prep.Metrics["documents"])
			}
			if prep.Facts["index"] == "" {
				t.Fatal("prepare states no index")
			}
			for c := 0; c < 3; c++ {
				idx, err := s.DocumentIndexes(context.Background(), documents.Collection(c))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(strings.Join(idx, "\n"), "_id") {
					t.Fatalf("%s has no index on _id: %q", documents.Collection(c), idx)
				}
			}
			ins := exec(t, h, steps[1])
			if ins.Ops != 90 || counts(t, s) != 390 {
				t.Fatalf("insert: %d ops, %d documents", ins.Ops, counts(t, s))
			}
			it := exec(t, h, steps[2])
			if it.Ops != 90 || it.Verify.Checked < 90 {
				t.Fatalf("iterate_one: %d ops, %d checked", it.Ops, it.Verify.Checked)
			}
			up := exec(t, h, steps[3])
			if up.Ops != 90 || up.Verify.Checked < 90 {
				t.Fatalf("update_one: %d ops, %d checked", up.Ops, up.Verify.Checked)
			}
			// Reads after updates still verify (v and rnd of an update).
			if it := exec(t, h, steps[2]); it.Verify.Checked < 90 {
				t.Fatalf("iterate_one after updates: %d checked", it.Verify.Checked)
			}
			del := exec(t, h, steps[4])
			if del.Ops != 90 || counts(t, s) != 300 {
				t.Fatalf("delete_one: %d ops, %d documents left", del.Ops, counts(t, s))
			}
			for _, k := range []string{"count", "mean_rate", "m1_rate", "median_ns", "p999_ns", "threads"} {
				if _, ok := del.Metrics[k]; !ok {
					t.Errorf("metric %s missing", k)
				}
			}
			if del.Metrics["count"] != 90 || del.Metrics["threads"] != 4 || del.Metrics["min_ns"] <= 0 || del.Metrics["max_ns"] < del.Metrics["median_ns"] {
				t.Errorf("timer figures: %v", del.Metrics)
			}

			// A corrupted document fails the phase: rnd overwritten with a
			// value the generator never writes.
			for c := 0; c < 3; c++ {
				for id := int64(1); id <= 100; id++ {
					if _, err := s.UpdateDocument(context.Background(), documents.Collection(c), id, 12345); err != nil {
						t.Fatal(err)
					}
				}
			}
			_, err := documents.Documents{}.Execute(context.Background(), &workload.Env{Target: h}, steps[2])
			var ve *workload.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), "rnd 12345") {
				t.Fatalf("a corrupted document was not caught: %v", err)
			}
		})
	}
}

func TestDeleteStopsWhenTheCollectionsAreEmpty(t *testing.T) {
	h := open(t, "sqlite")
	steps := plan(t, 5000, "0s")
	exec(t, h, steps[0])
	del := exec(t, h, steps[4])
	if del.Ops > 300 || del.Facts["stopped"] == "" {
		t.Fatalf("delete_one: %d ops, facts %v", del.Ops, del.Facts)
	}
	// The next delete step stops at once, and finds still fail loudly.
	if del := exec(t, h, steps[4]); del.Facts["stopped"] == "" {
		t.Fatalf("second delete_one: %v", del.Facts)
	}
	if _, err := (documents.Documents{}).Execute(context.Background(), &workload.Env{Target: h}, steps[2]); err == nil {
		t.Fatal("iterate_one on empty collections succeeded")
	}
}

// ewmaClosedForm is the Dropwizard moving average written out: the first
// 5 s interval's rate x1 weighted (1-a)^(k-1), each later x_j a(1-a)^(k-j).
func ewmaClosedForm(xs []float64, minutes float64) float64 {
	a := 1 - math.Exp(-5.0/60/minutes)
	k := len(xs)
	if k == 0 {
		return 0
	}
	r := math.Pow(1-a, float64(k-1)) * xs[0]
	for j := 2; j <= k; j++ {
		r += a * math.Pow(1-a, float64(k-j)) * xs[j-1]
	}
	return r
}

// The 1-, 5- and 15-minute rates of a real run, recomputed from the
// per-tick series it stores.
func TestEWMARatesRecomputedFromTheSeries(t *testing.T) {
	h := open(t, "sqlite")
	steps := plan(t, 0, "11s")
	exec(t, h, steps[0])
	res := exec(t, h, steps[2])
	if len(res.Series) < 11 {
		t.Fatalf("series of %d ticks", len(res.Series))
	}
	var xs []float64
	for w := 0; w < 2; w++ {
		var n int64
		for _, tk := range res.Series[w*5 : w*5+5] {
			n += tk.Ops
		}
		xs = append(xs, float64(n)/5)
	}
	if xs[0] == 0 || xs[1] == 0 {
		t.Fatalf("empty intervals: %v", xs)
	}
	for _, m := range []struct {
		key string
		min float64
	}{{"m1_rate", 1}, {"m5_rate", 5}, {"m15_rate", 15}} {
		want := ewmaClosedForm(xs, m.min)
		if got := res.Metrics[m.key]; math.Abs(got-want) > 1e-6*want {
			t.Errorf("%s = %v, recomputed %v from %v", m.key, got, want, xs)
		}
	}
	if got, want := res.Metrics["mean_rate"], float64(res.Ops)/res.Seconds; math.Abs(got-want) > 1e-9*want {
		t.Errorf("mean rate %v, want %v", got, want)
	}
	// Operations of the last, short interval are in none of the averages
	// (the library ticks whole intervals only): a series ending mid-way
	// gives the same rates as one cut at 10 s.
	m1, _, _ := documents.Rates(res.Series[:10])
	if math.Abs(m1-res.Metrics["m1_rate"]) > 1e-6*m1 {
		t.Errorf("the partial interval changed the 1-minute rate: %v against %v", res.Metrics["m1_rate"], m1)
	}
}

// Every step records item_bytes, one document as written: the sum of its
// fields, _id, threadRunCount and rnd (int64), threadId and v (int32),
// and rndTxt of text_size characters.
func TestItemBytesIsOneDocument(t *testing.T) {
	var d documents.Doc
	want := float64(unsafe.Sizeof(d.ID)+unsafe.Sizeof(d.ThreadID)+unsafe.Sizeof(d.ThreadRunCount)+unsafe.Sizeof(d.Rnd)+unsafe.Sizeof(d.V)) + 12 // the study's text_size
	if want != 8+4+8+8+4+12 {
		t.Fatalf("a document's fields are %v bytes", want)
	}
	h := open(t, "sqlite")
	for _, st := range plan(t, 50, "0s") {
		if got, ok := exec(t, h, st).Metrics[workload.MetricItemBytes]; !ok || got != want {
			t.Errorf("%s: item_bytes %v (recorded %v), want %v", st.Phase, got, ok, want)
		}
	}
}
