// Package kv holds the small ordered key-value contract every embedded
// target implements, the optional capabilities a target may add, and the
// registry through which targets are found by name.
//
// The contract is deliberately small (get, put, delete, atomic batch,
// ordered scan, sync, close) so that every engine, from bbolt to RocksDB,
// can implement it without emulation layers that would distort timings.
// Anything more is an optional interface discovered by type assertion.
package kv

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned by Get when the key is absent.
var ErrNotFound = errors.New("key not found")

// Durability is the durability class of writes: every target in a study
// runs in the same class so that comparisons are fair.
type Durability string

const (
	// Sync: a Put, Delete or Batch.Commit is durable (fsynced) on return.
	Sync Durability = "sync"
	// Async: writes may sit in OS or engine buffers; a crash can lose them.
	Async Durability = "async"
	// Default: each engine as it ships, the way the seeds ran them. It is
	// a study's choice, never a store's: the coordinator resolves it per
	// target to the class of the engine's own default (Engine.Default,
	// target.Info.Default) before anything opens, and the report says
	// what that default is (DefaultNote).
	Default Durability = "default"
)

// Options configure a store when it is opened.
type Options struct {
	// Dir is the data directory owned by the store. It may not exist yet.
	Dir string
	// Durability of writes (see Durability).
	Durability Durability
	// CacheBytes sizes the engine's block/page cache; 0 means the target's
	// default (each target documents it in Settings).
	CacheBytes int64
	// Extra holds target-specific options from the study file, already
	// validated against the target's OptionNames if it declares them.
	Extra map[string]string
}

// Store is an open ordered key-value store.
//
// Implementations need not be safe for concurrent Batch use, but Get, Put,
// Delete, Scan and NewBatch().Commit() must be safe to call from many
// goroutines at once: the runner drives a store from several workers.
type Store interface {
	// Get returns a copy of the value stored under key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Put stores value under key (durably if the store is in Sync mode).
	Put(key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error
	// NewBatch starts an atomic batch of writes.
	NewBatch() Batch
	// Scan calls fn for each key in [lower, upper) in ascending byte order.
	// A nil upper means no upper bound. The slices passed to fn are only
	// valid during the call. Returning false from fn stops the scan.
	Scan(lower, upper []byte, fn func(key, value []byte) bool) error
	// Sync makes every write so far durable.
	Sync() error
	// Close releases the store. The data stays in Dir for a later reopen.
	Close() error
}

// Batch is an atomic group of writes: after Commit either all of them are
// visible or none is.
type Batch interface {
	Put(key, value []byte)
	Delete(key []byte)
	// Len is the number of writes in the batch.
	Len() int
	// Commit applies the batch atomically (durably in Sync mode). A batch
	// is not reused after Commit.
	Commit() error
}

// Viewer is an optional capability: View calls fn with the stored value
// without copying it out of the engine. The runner uses it on hot read
// paths so that our client costs the engine as little CPU as possible.
type Viewer interface {
	View(key []byte, fn func(value []byte) error) error
}

// Describer is an optional capability: the settings that matter for a
// fair reading of the numbers (bloom filter, cache size, sync mode, ...).
// Every report prints them.
type Describer interface {
	Settings() map[string]string
}

// Compacter is an optional capability: force a full compaction, so that
// disk-usage figures can be read both before and after it.
type Compacter interface {
	Compact() error
}

// RangeDeleter is an optional capability: delete every key in
// [start, end) in one write (a range tombstone), whatever the number of
// keys, instead of finding and deleting them one by one.
type RangeDeleter interface {
	DeleteRange(start, end []byte) error
}

// View reads key through the Viewer capability when the store has it and
// falls back to Get otherwise.
func View(s Store, key []byte, fn func(value []byte) error) error {
	if v, ok := s.(Viewer); ok {
		return v.View(key, fn)
	}
	val, err := s.Get(key)
	if err != nil {
		return err
	}
	return fn(val)
}

// PrefixEnd returns the smallest key greater than every key with the given
// prefix, or nil if there is none (prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Engine describes a registered target.
type Engine struct {
	// Name is the identifier used in study files and on the command line.
	Name string
	// Title is the human name used in reports ("RocksDB", "GoLevelDB").
	Title string
	// Kind is "pure-go" or "cgo".
	Kind string
	// Open opens (or creates) a store. Nil when the engine is not built in.
	Open func(Options) (Store, error)
	// Version reports the engine's library version.
	Version string
	// Unavailable, when non-empty, says why this binary cannot open the
	// engine and what would fix it (e.g. the apt line and build tag).
	Unavailable string
	// OptionNames lists the target-specific option keys it accepts in Extra.
	OptionNames []string
	// Default is the class the engine's own default write falls in (what
	// a study's durability "default" runs it in), and DefaultNote what
	// that default is. Empty: not stated, and such a study refuses it.
	Default     Durability
	DefaultNote string
	// More names capabilities (target.Cap values) its store offers beyond
	// a kv.Store's, through interfaces of their own (SQLite: "sql",
	// "documents").
	More []string
}

var registry = map[string]Engine{}

// Register adds an engine. It is called from the engine package's init, so
// a duplicate name is a programming error and panics at start-up.
func Register(e Engine) {
	if _, dup := registry[e.Name]; dup {
		panic("kv: engine registered twice: " + e.Name)
	}
	if e.Open == nil && e.Unavailable == "" {
		panic("kv: engine " + e.Name + " has neither Open nor Unavailable")
	}
	registry[e.Name] = e
}

// Lookup finds an engine by name.
func Lookup(name string) (Engine, error) {
	e, ok := registry[name]
	if !ok {
		return Engine{}, fmt.Errorf("unknown target %q (see `storebench list`)", name)
	}
	return e, nil
}

// Engines returns every registered engine sorted by name.
func Engines() []Engine {
	out := make([]Engine, 0, len(registry))
	for _, e := range registry {
		out = append(out, e)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
