package layout

import (
	"slices"
	"testing"

	"storebench/internal/target"
)

// Primitives a fake handle may offer.
type (
	reds  interface{ Red() }
	blues interface{ Blue() }
)

type red struct{}

func (red) Red() {}

type purple struct{ red }

func (purple) Blue() {}

// store is what a fake layout opens; closed counts its Close calls.
type store struct {
	layout string
	closed *int
}

func (s store) Close() error {
	*s.closed++
	return nil
}

// fakeTable prefers the red layout to the blue one, and the blue one's
// store is the caller's to close.
func fakeTable(name string, closed *int) *Table[store] {
	return NewTable(name, Needs{All: target.Caps{target.KeyValue}},
		Layout[store]{Name: "red", On: "a red thing", Open: func(h any) (store, bool) {
			_, ok := h.(reds)
			return store{"red", closed}, ok
		}, Provides: func(store) target.Caps { return target.Caps{target.KeyValue} }},
		Layout[store]{Name: "blue", On: "a blue thing", Closes: true, Open: func(h any) (store, bool) {
			_, ok := h.(blues)
			return store{"blue", closed}, ok
		}, Provides: func(store) target.Caps { return target.Caps{target.Log} }},
	)
}

// The table picks the first layout, in its order, that opens on a
// handle: a handle offering both primitives gets the first.
func TestOfPicksTheFirstLayoutThatOpens(t *testing.T) {
	var closed int
	tb := fakeTable("layout-test-order", &closed)
	for _, c := range []struct {
		h    any
		want string
	}{
		{red{}, "red"},
		{purple{}, "red"},
		{struct{ blues }{purple{}}, "blue"},
	} {
		s, l, ok := tb.Of(c.h)
		if !ok || l.Name != c.want || s.layout != c.want {
			t.Errorf("Of(%T) = %q, %q, %v; want %q", c.h, s.layout, l.Name, ok, c.want)
		}
	}
	if _, l, ok := tb.Of(struct{}{}); ok {
		t.Errorf("Of(a handle with neither primitive) found %q", l.Name)
	}
	if got := tb.Names(); !slices.Equal(got, []string{"red", "blue"}) {
		t.Errorf("Names() = %v", got)
	}
	if closed != 0 {
		t.Errorf("Of closed %d stores: closing is the caller's", closed)
	}
}

// The registered entry finds what Of finds, says what it provides, and
// closes what it opened exactly when the layout Closes.
func TestTablesFindAndClose(t *testing.T) {
	var closed int
	fakeTable("layout-test-tables", &closed)
	var e *Entry
	for _, x := range Tables() {
		if x.Workload == "layout-test-tables" {
			e = &x
		}
	}
	if e == nil {
		t.Fatal("the table is not registered")
	}
	if !slices.Equal(e.Layouts, []string{"red", "blue"}) {
		t.Errorf("Layouts = %v", e.Layouts)
	}
	name, caps, ok := e.Find(purple{})
	if !ok || name != "red" || !slices.Equal(caps, target.Caps{target.KeyValue}) || closed != 0 {
		t.Errorf("Find(purple) = %q, %v, %v, %d closed; want red, key-value, nothing closed", name, caps, ok, closed)
	}
	name, caps, ok = e.Find(struct{ blues }{purple{}})
	if !ok || name != "blue" || !slices.Equal(caps, target.Caps{target.Log}) || closed != 1 {
		t.Errorf("Find(blue) = %q, %v, %v, %d closed; want blue, log, one closed", name, caps, ok, closed)
	}
	if _, _, ok := e.Find(struct{}{}); ok {
		t.Error("Find(a handle with neither primitive) found a layout")
	}
}

// A workload registers one table.
func TestNewTablePanicsOnASecondTable(t *testing.T) {
	var closed int
	fakeTable("layout-test-twice", &closed)
	defer func() {
		if recover() == nil {
			t.Error("a second table for one workload was registered")
		}
	}()
	fakeTable("layout-test-twice", &closed)
}
