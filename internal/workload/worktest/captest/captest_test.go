package captest_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	"storebench/internal/workload/layout"
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

// declarations are the errors that compare the declaration with the
// handle, without those of the steps planned runnable.
func (r *recorder) declarations() []string {
	var out []string
	for _, e := range r.errs {
		if !strings.Contains(e, "steps planned runnable") {
			out = append(out, e)
		}
	}
	return out
}

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
	if len(r.declarations()) != 1 || !r.has("fake declares "+target.SortedSets.String()+": true") || !r.has("fake: geo steps planned runnable: true") {
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

// gadget is a fake engine primitive, and gadgetHandle a fake target's
// handle that offers it.
type gadget interface{ Gadget() }

type gadgetHandle struct{ closer }

func (gadgetHandle) Gadget() {}

// gadgetLayouts is a fake workload's table: its one layout, on a
// gadget, gives documents and SQL; its steps need a log (which no
// embedded target declares).
var gadgetLayouts = layout.NewTable("captest-gadget", layout.Needs{All: target.Caps{target.Log}}, layout.Layout[gadget]{
	Name: "gadget", On: "a gadget",
	Open:     func(h any) (gadget, bool) { g, ok := h.(gadget); return g, ok },
	Provides: func(gadget) target.Caps { return target.Caps{target.DocumentStore, target.SQL} },
})

// The generic check reads every registered table: it fails on a target
// that declares a capability no layout of its handle gives, and on one
// whose layouts give a capability it does not declare, an engine
// interface's (SQL) included when the handle does not implement it.
func TestCheckLayoutsReadsEveryTable(t *testing.T) {
	if _, _, ok := gadgetLayouts.Of(gadgetHandle{}); !ok {
		t.Fatal("the gadget layout does not open on its handle")
	}
	var r recorder
	captest.CheckLayouts(&r, target.Info{Name: "fake", Provides: target.Caps{target.DocumentStore, target.SQL, target.Log}}, gadgetHandle{})
	if len(r.declarations()) != 1 || !r.has("fake declares "+target.Log.String()+": true, but its handle captest_test.gadgetHandle offers it: false") {
		t.Errorf("a declared capability no layout gives: %q", r.errs)
	}

	r = recorder{}
	captest.CheckLayouts(&r, target.Info{Name: "fake", Provides: target.Caps{target.Log}}, gadgetHandle{})
	want := []string{
		"fake declares " + target.SQL.String() + ": false, but its handle captest_test.gadgetHandle offers it: true (captest-gadget layout gadget)",
		"fake declares " + target.DocumentStore.String() + ": false, but its handle captest_test.gadgetHandle offers it: true (captest-gadget layout gadget)",
		"fake declares " + target.Log.String() + ": true",
	}
	for _, w := range want {
		if !r.has(w) {
			t.Errorf("no error %q in %q", w, r.errs)
		}
	}
	if got := r.declarations(); len(got) != len(want) {
		t.Errorf("%d errors, want %d: %q", len(got), len(want), got)
	}
}

// The workloads whose layouts the check reads have registered their
// tables (captest imports them).
func TestTheWorkloadsTablesAreRegistered(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var makers []string // the workload packages that make a table
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if dir := filepath.Base(filepath.Dir(f)); !strings.HasSuffix(f, "_test.go") && dir != "layout" &&
			strings.Contains(string(b), "layout.NewTable(") && !slices.Contains(makers, dir) {
			makers = append(makers, dir)
		}
	}
	got := map[string]bool{}
	for _, e := range layout.Tables() {
		got[e.Workload] = true
	}
	for _, w := range makers {
		if !got[w] {
			t.Errorf("package workload/%s makes a table of layouts, and none is registered for %s", w, w)
		}
	}
	if len(makers) < 5 || len(got) != len(makers)+1 { // +1: this test's gadget
		t.Errorf("%d packages make a table (%v), %d tables registered", len(makers), makers, len(got))
	}
}

// The check fails where a workload's steps would be planned runnable on
// a target whose handle has no layout of its table (they would fail), and
// where a layout is there but the steps would be planned n/a.
func TestCheckLayoutsCatchesAStepPlannedWithoutALayout(t *testing.T) {
	var r recorder
	captest.CheckLayouts(&r, target.Info{Name: "fake", Provides: target.Caps{target.Log}}, io.Closer(closer{}))
	if !r.has("fake: captest-gadget steps planned runnable: true, but a captest-gadget layout on its handle captest_test.closer: false") {
		t.Errorf("steps planned runnable without a layout: %q", r.errs)
	}
	r = recorder{}
	captest.CheckLayouts(&r, target.Info{Name: "fake", Provides: target.Caps{target.SQL}}, gadgetHandle{})
	if !r.has("fake: captest-gadget steps planned runnable: false (") || !r.has("but a captest-gadget layout on its handle captest_test.gadgetHandle: true (gadget)") {
		t.Errorf("a layout whose steps are planned n/a: %q", r.errs)
	}
}
