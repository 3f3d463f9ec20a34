// Package layout holds each workload's layouts as data: an ordered table
// of the ways the workload keeps its data on the primitives a target's
// handle may offer (its own store, a RESP client, a CQL session, SQL, an
// ordered key-value store, ...). A workload finds its layout on a handle
// by asking its table instead of a hand-written type switch, and the
// capability check (package workload/worktest/captest) reads every
// registered table instead of mapping each workload's switch by hand, so
// what an engine can do is decided in two places that are checked
// against each other: the capabilities a target declares, and these
// tables.
package layout

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"storebench/internal/target"
)

// Layout is one way a workload keeps its data on one engine primitive.
type Layout[S any] struct {
	// Name is the layout in a word: "own" (the target's own
	// implementation), "resp", "cql", "mongo", "aerospike", "sql",
	// "sqlite", "postgis", "postgres", "kv".
	Name string
	// On is the primitive in words, e.g. "a RESP client (conn.RESP)".
	On string
	// Open is the layout on handle h; false when h does not offer the
	// primitive (or offers it in a form the layout cannot use, e.g. an
	// SQL dialect it has no statements for).
	Open func(h any) (S, bool)
	// Closes says that the store Open returns holds something of its
	// own (connections) which whoever opened it closes: the store is
	// then an io.Closer. A store that is the handle itself (an own
	// layout) must not be closed: that would close the target.
	Closes bool
	// Provides is what the workload finds on a handle through this
	// layout, in capabilities (it may look at s, e.g. whether a YCSB
	// table also scans); nil when the layout says nothing of its own
	// (the target's own store: what it offers is declared by the
	// target, and checked through its primitives).
	Provides func(s S) target.Caps
}

// Needs is what a target must declare (target.Info.Provides) for a
// workload to find a layout of its table there: every capability of All,
// and, when Any is set, all of one of its sets. The workload's steps
// require it (workload.Step's Requires and RequiresAny, a step adding
// what only it needs), so that the coordinator plans a step runnable
// exactly where the table has a layout; the generic check
// (captest.CheckLayouts) proves that on every target's handle, for every
// registered table.
type Needs struct {
	All target.Caps
	Any []target.Caps
}

// CannotRunOn says why a target declaring p has no layout of the table
// ("" when it has one).
func (n Needs) CannotRunOn(p target.Caps) string {
	if why := p.CannotRun(n.All); why != "" {
		return why
	}
	return p.CannotRunAny(n.Any)
}

// Table is a workload's layouts in its order of preference: the first
// one that opens on a handle is the one the workload uses there.
type Table[S any] struct {
	workload string
	needs    Needs
	layouts  []Layout[S]
}

// NewTable makes the table of a workload's layouts, in order of
// preference, with what a target must declare to have one of them, and
// registers it (Tables) so that one generic check covers every workload.
// It panics on a workload registered twice, on needs that name nothing
// or a layout without a name or Open: a table is fixed at init, and a
// wrong one is a programming error.
func NewTable[S any](workload string, needs Needs, ls ...Layout[S]) *Table[S] {
	t := &Table[S]{workload: workload, needs: needs, layouts: slices.Clone(ls)}
	if len(needs.All) == 0 && len(needs.Any) == 0 {
		panic("layout: workload " + workload + "'s table needs nothing of a target")
	}
	for _, l := range ls {
		if l.Name == "" || l.Open == nil {
			panic(fmt.Sprintf("layout: workload %s has a layout without a name or Open (%q)", workload, l.Name))
		}
	}
	register(Entry{Workload: workload, Needs: needs, Layouts: t.Names(), Find: t.find})
	return t
}

// Workload is the name of the workload whose layouts these are.
func (t *Table[S]) Workload() string { return t.workload }

// Needs is what a target must declare to have a layout of the table.
func (t *Table[S]) Needs() Needs { return t.needs }

// Names are the layouts' names, in order of preference.
func (t *Table[S]) Names() []string {
	var n []string
	for _, l := range t.layouts {
		n = append(n, l.Name)
	}
	return n
}

// Of is the first layout that opens on h, with what it opened; false
// when none does. When the layout Closes, the caller closes the store.
func (t *Table[S]) Of(h any) (S, Layout[S], bool) {
	for _, l := range t.layouts {
		if s, ok := l.Open(h); ok {
			return s, l, true
		}
	}
	var zero S
	return zero, Layout[S]{}, false
}

// find is Of for the check, type-erased: the layout's name and what it
// provides on h. It closes what the layout opened, so that checking a
// handle leaves nothing open on it.
func (t *Table[S]) find(h any) (string, target.Caps, bool) {
	s, l, ok := t.Of(h)
	if !ok {
		return "", nil, false
	}
	var caps target.Caps
	if l.Provides != nil {
		caps = l.Provides(s)
	}
	if l.Closes {
		if c, ok := any(s).(io.Closer); ok {
			c.Close()
		}
	}
	return l.Name, caps, true
}

// Entry is one registered table, type-erased, for the checks that read
// every workload's layouts alike.
type Entry struct {
	// Workload is the workload whose table this is.
	Workload string
	// Needs is what a target must declare to have one of its layouts.
	Needs Needs
	// Layouts are the layouts' names, in order of preference.
	Layouts []string
	// Find is the first layout that opens on h: its name and the
	// capabilities the workload finds through it. It closes whatever
	// it opened.
	Find func(h any) (layout string, provides target.Caps, ok bool)
}

var (
	mu      sync.Mutex
	entries []Entry
)

func register(e Entry) {
	mu.Lock()
	defer mu.Unlock()
	for _, x := range entries {
		if x.Workload == e.Workload {
			panic("layout: workload " + e.Workload + " registers a second table")
		}
	}
	entries = append(entries, e)
}

// Tables are the registered tables, by workload name: those of the
// workload packages linked into the program.
func Tables() []Entry {
	mu.Lock()
	defer mu.Unlock()
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Workload, b.Workload) })
	return out
}
