// Package badger is the storebench target for Dgraph's Badger, a pure-Go
// LSM tree that keeps large values in a separate value log (WiscKey).
package badger

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the Badger release in go.mod (a test in package all
// checks that they agree).
const moduleVersion = "v4.9.6"

var optionNames = []string{"memtable_bytes", "value_threshold", "compression"}

func init() {
	kv.Register(kv.Engine{
		Name:        "badger",
		Title:       "Badger",
		Kind:        "pure-go",
		Open:        Open,
		Version:     moduleVersion,
		OptionNames: optionNames,
		More:        []string{"compaction"}, // kv.Compacter
	})
}

// Store is an open Badger database.
type Store struct {
	db       *badger.DB
	settings map[string]string
}

// Open opens or creates a Badger database in o.Dir.
//
// Options (Extra): memtable_bytes (default Badger's 64 MiB),
// value_threshold (values at least this large go to the value log;
// default Badger's 1 MiB), compression (snappy, the default, zstd or none).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("badger", o, open) }

func open(o kv.Options) (*Store, error) {
	eo, err := targetkit.EmbeddedOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, cacheBytes, cacheDesc, extra := eo.Sync, eo.CacheBytes, eo.CacheDesc, eo.Extra
	def := badger.DefaultOptions(o.Dir)
	memtable, err := extra.Bytes("memtable_bytes", def.MemTableSize)
	if err != nil {
		return nil, err
	}
	threshold, err := extra.Bytes("value_threshold", def.ValueThreshold)
	if err != nil {
		return nil, err
	}
	compName, err := extra.Choice("compression", "snappy", "snappy", "zstd", "none")
	if err != nil {
		return nil, err
	}
	comp := map[string]options.CompressionType{
		"snappy": options.Snappy, "zstd": options.ZSTD, "none": options.None,
	}[compName]
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}

	opts := def.
		WithSyncWrites(sync).
		WithLogger(warnLogger{log.New(os.Stderr, "badger: ", log.LstdFlags)}).
		// Badger's 256 MiB default block cache would give it four times
		// the memory of the other engines; size it like theirs. The index
		// cache stays off, so table indexes and Bloom filters live in
		// memory as in LevelDB and RocksDB's defaults.
		WithBlockCacheSize(cacheBytes).
		WithIndexCacheSize(0).
		WithMemTableSize(memtable).
		WithValueThreshold(threshold).
		WithCompression(comp).
		// We never read inside update transactions, so there is nothing
		// for conflict detection to find; it only costs memory and CPU.
		WithDetectConflicts(false)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	return &Store{
		db: db,
		settings: map[string]string{
			"durability":      targetkit.DurabilitySetting(sync),
			"cache":           cacheDesc + " block cache; no index cache (indexes and filters in memory)",
			"bloom_filter":    fmt.Sprintf("%g%% false positives (Badger default)", opts.BloomFalsePositive*100),
			"compression":     compName,
			"memtable":        targetkit.FormatBytes(memtable),
			"value_threshold": targetkit.FormatBytes(threshold) + " (larger values go to the value log)",
			"batch_limit":     "one transaction per batch, at most ~15% of the memtable (ErrTxnTooBig)",
		},
	}, nil
}

// warnLogger passes on Badger's warnings and errors but drops its chatty
// informational messages (several per open, compaction and close).
type warnLogger struct{ l *log.Logger }

func (w warnLogger) Errorf(f string, a ...interface{})   { w.l.Printf("ERROR: "+f, a...) }
func (w warnLogger) Warningf(f string, a ...interface{}) { w.l.Printf("WARNING: "+f, a...) }
func (warnLogger) Infof(string, ...interface{})          {}
func (warnLogger) Debugf(string, ...interface{})         {}

// Get returns a copy of the value under key.
func (s *Store) Get(key []byte) ([]byte, error) {
	var out []byte
	err := s.View(key, func(v []byte) error {
		out = targetkit.CopyBytes(v)
		return nil
	})
	return out, err
}

// View calls fn with the value as Badger holds it (LSM block or value-log
// mapping) without copying, inside a read transaction.
func (s *Store) View(key []byte, fn func([]byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return kv.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("badger: get: %w", err)
		}
		return item.Value(fn)
	})
}

// Put stores value under key in its own transaction.
func (s *Store) Put(key, value []byte) error {
	return targetkit.Wrap("badger: put", s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) }))
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("badger: delete", s.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) }))
}

// NewBatch buffers writes and applies them in one update transaction, so
// that the batch is atomic. (badger.WriteBatch is not: it splits into
// several transactions as it fills.) The price is Badger's transaction
// size limit, far above the batches storebench issues.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	targetkit.Ops
}

func (b *batch) Commit() error {
	return b.Committed("badger", b.s.db.Update(func(txn *badger.Txn) error {
		return b.Apply(txn.Set, txn.Delete)
	}))
}

// Scan iterates [lower, upper) in one read transaction. Values are not
// prefetched: a scan that stops early would pay for values it never sees.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Seek(lower); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			if upper != nil && bytes.Compare(k, upper) >= 0 {
				return nil
			}
			more := true
			if err := item.Value(func(v []byte) error {
				more = fn(k, v)
				return nil
			}); err != nil {
				return err
			}
			if !more {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("badger: scan: %w", err)
	}
	return nil
}

// Sync fsyncs the write-ahead and value logs.
func (s *Store) Sync() error {
	return targetkit.Wrap("badger: sync", s.db.Sync())
}

// Compact flattens the LSM tree into one level, then garbage-collects the
// value log until Badger finds nothing more worth rewriting.
func (s *Store) Compact() error {
	if err := s.db.Flatten(2); err != nil {
		return fmt.Errorf("badger: compact: %w", err)
	}
	// Each pass rewrites at most one value log file, so the passes are
	// bounded by the files there are; the bound is a way out should a
	// pass keep finding something to rewrite.
	for pass := 0; pass < maxGCPasses; pass++ {
		err := s.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("badger: value log gc: %w", err)
		}
	}
	return fmt.Errorf("badger: value log gc: still rewriting after %d passes", maxGCPasses)
}

// maxGCPasses bounds Compact's value log garbage collection.
const maxGCPasses = 10000

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the database.
func (s *Store) Close() error {
	return targetkit.Wrap("badger: close", s.db.Close())
}
