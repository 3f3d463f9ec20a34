package captest_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	"storebench/internal/workload/worktest/captest"
)

// Every embedded target declares exactly the layout capabilities the
// workloads find on its handle (the engine interfaces' are checked in
// package target/all; the server targets' by captest.Open in the
// workloads' tests).
func TestEmbeddedTargetsDeclareTheirLayouts(t *testing.T) {
	n := 0
	for _, i := range target.All() {
		if !i.Embedded() || i.Open == nil {
			continue
		}
		h, err := i.Open(target.Options{Dir: t.TempDir(), Durability: kv.Async})
		if err != nil {
			t.Fatalf("%s: %v", i.Name, err)
		}
		captest.CheckLayouts(t, i, h)
		h.Close()
		n++
	}
	if n < 3 {
		t.Errorf("only %d embedded targets opened", n)
	}
}

// recorder is a test that keeps what the check reports.
type recorder struct{ errs []string }

func (r *recorder) Helper()                      {}
func (r *recorder) Logf(string, ...any)          {}
func (r *recorder) Fatalf(f string, a ...any)    { r.Errorf(f, a...) }
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) has(sub string) bool {
	for _, e := range r.errs {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

type closer struct{}

func (closer) Close() error { return nil }

// The check fails on the fault it exists to catch: a capability declared
// that no workload finds a layout for, and one a layout offers that is
// not declared.
func TestCheckLayoutsCatchesAWrongDeclaration(t *testing.T) {
	var r recorder
	captest.CheckLayouts(&r, target.Info{Name: "fake", Provides: target.Caps{target.SortedSets}}, io.Closer(closer{}))
	if len(r.errs) != 2 || !r.has("fake declares "+target.SortedSets.String()+": true") || !r.has("fake: geo steps planned runnable: true") {
		t.Errorf("a declared capability without a layout: %q", r.errs)
	}

	pebble, err := target.Lookup("pebble")
	if err != nil {
		t.Fatal(err)
	}
	h, err := pebble.Open(target.Options{Dir: t.TempDir(), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r = recorder{}
	pebble.Provides = target.Caps{target.Secondary} // KeyValue, OrderedScan and Batch left out
	captest.CheckLayouts(&r, pebble, h)
	if !r.has("pebble: geo steps planned runnable: false") || !r.has("declares "+target.KeyValue.String()+": false") {
		t.Errorf("layouts offered but not declared: %q", r.errs)
	}
}
