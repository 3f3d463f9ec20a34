package targetkit

import "fmt"

// Ops buffers the writes of a batch in Go memory until Commit.
//
// Engines whose native batch lives in C memory (LevelDB, RocksDB) or that
// can only apply writes inside a transaction callback (LMDB, bbolt, Badger,
// SQLite) use it: nothing leaks if a batch is dropped without Commit, and
// the caller may reuse its key and value buffers right after Put, as with
// the Go-native batches. Keys and values are copied into one growing
// arena to keep a large batch to a handful of allocations.
type Ops struct {
	arena []byte
	ops   []op
}

type op struct {
	del              bool
	koff, klen, vlen int
}

// Put buffers a put.
func (o *Ops) Put(key, value []byte) {
	o.ops = append(o.ops, op{koff: len(o.arena), klen: len(key), vlen: len(value)})
	o.arena = append(o.arena, key...)
	o.arena = append(o.arena, value...)
}

// Delete buffers a delete.
func (o *Ops) Delete(key []byte) {
	o.ops = append(o.ops, op{del: true, koff: len(o.arena), klen: len(key)})
	o.arena = append(o.arena, key...)
}

// Len is the number of buffered writes.
func (o *Ops) Len() int { return len(o.ops) }

// Each calls fn for every buffered write in order; value is nil for a
// delete and a non-nil (possibly empty) slice for a put. It stops at the
// first error.
func (o *Ops) Each(fn func(del bool, key, value []byte) error) error {
	empty := []byte{}
	for _, w := range o.ops {
		k := o.arena[w.koff : w.koff+w.klen : w.koff+w.klen]
		var v []byte
		if !w.del {
			v = empty
			if w.vlen > 0 {
				end := w.koff + w.klen + w.vlen
				v = o.arena[w.koff+w.klen : end : end]
			}
		}
		if err := fn(w.del, k, v); err != nil {
			return err
		}
	}
	return nil
}

// Writer is a native write batch that Fill replays buffered writes into
// (LevelDB's and RocksDB's WriteBatch).
type Writer interface {
	Put(key, value []byte)
	Delete(key []byte)
}

// Fill replays every buffered write, in order, into the native batch w.
func (o *Ops) Fill(w Writer) {
	_ = o.Each(func(del bool, k, v []byte) error {
		if del {
			w.Delete(k)
		} else {
			w.Put(k, v)
		}
		return nil
	})
}

// Apply applies every buffered write, in order, with put and del (an
// engine's transaction), stopping at the first error.
func (o *Ops) Apply(put func(key, value []byte) error, del func(key []byte) error) error {
	return o.Each(func(isDel bool, k, v []byte) error {
		if isDel {
			return del(k)
		}
		return put(k, v)
	})
}

// Committed is nil when err is, and otherwise err as the failed commit
// of the batch by engine name ("badger: commit batch of 3: ...").
func (o *Ops) Committed(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: commit batch of %d: %w", name, o.Len(), err)
	}
	return nil
}
