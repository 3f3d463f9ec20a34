package layout

import "sync"

// PerHandle holds a layout's state for each engine handle (K: the handle,
// or what identifies its database), so that the steps of a run on one
// handle share what the first one made: the tables it created, the
// statements it built. It keeps every handle it was asked for: a worker
// process serves one target.
type PerHandle[K comparable, V any] struct{ m sync.Map }

// Of is h's state, made by mk the first time h is asked for. Steps that
// race on a new handle may each call mk; one result is kept, and every
// caller gets it.
func (p *PerHandle[K, V]) Of(h K, mk func() V) V {
	if v, ok := p.m.Load(h); ok {
		return v.(V)
	}
	v, _ := p.m.LoadOrStore(h, mk())
	return v.(V)
}
