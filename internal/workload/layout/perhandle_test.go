package layout

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestPerHandleKeepsOneStatePerHandle(t *testing.T) {
	type state struct{ of string }
	var p PerHandle[any, *state]
	var made atomic.Int32
	mk := func(h string) func() *state {
		return func() *state { made.Add(1); return &state{of: h} }
	}
	a1, a2 := p.Of("a", mk("a")), p.Of("a", mk("a"))
	if a1 != a2 || made.Load() != 1 {
		t.Fatalf("the same handle got two states (%p, %p) or made %d", a1, a2, made.Load())
	}
	if b := p.Of("b", mk("b")); b == a1 || b.of != "b" {
		t.Fatalf("another handle shares a's state: %+v", b)
	}
	// Steps racing on a new handle may each make one; all get the kept one.
	var wg sync.WaitGroup
	got := make([]*state, 16)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = p.Of("c", mk("c")) }()
	}
	wg.Wait()
	for _, s := range got {
		if s != got[0] {
			t.Fatal("racing steps got different states for one handle")
		}
	}
}
