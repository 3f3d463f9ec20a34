// Package bbolt is the storebench target for etcd's bbolt, a pure-Go
// copy-on-write B+tree in a single memory-mapped file.
package bbolt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the bbolt release in go.mod (a test in package all
// checks that they agree).
const moduleVersion = "v1.4.3"

var optionNames = []string{"freelist_type"}

// bucket holds every key: the contract has one flat key space.
var bucket = []byte("kv")

func init() {
	kv.Register(kv.Engine{
		Name:        "bbolt",
		Title:       "bbolt",
		Kind:        "pure-go",
		Open:        Open,
		Version:     moduleVersion,
		OptionNames: optionNames,
	})
}

// Store is an open bbolt database.
type Store struct {
	db       *bolt.DB
	settings map[string]string
}

// Open opens or creates the database file kv.db in o.Dir.
//
// Options (Extra): freelist_type ("array", bbolt's default, or "map",
// which etcd uses for large databases).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("bbolt", o, open) }

func open(o kv.Options) (*Store, error) {
	eo, err := targetkit.EmbeddedOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, extra := eo.Sync, eo.Extra
	freelist, err := extra.Choice("freelist_type", "array", "array", "map")
	if err != nil {
		return nil, err
	}
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(o.Dir, "kv.db"), 0o644, &bolt.Options{
		// Fail rather than hang if another process holds the file lock.
		Timeout: 5 * time.Second,
		// Skip writing the freelist at every commit (it is rebuilt by a
		// scan on open instead). This is not about durability, so it is
		// set in both modes: only the fsyncs differ between them.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistType(freelist),
		NoSync:         !sync,
		NoGrowSync:     !sync,
	})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{
		db: db,
		settings: map[string]string{
			"durability":   targetkit.DurabilitySetting(sync),
			"cache":        "OS page cache (memory-mapped file; cache size not applicable)",
			"bloom_filter": "none (B+tree)",
			"compression":  "none",
			"freelist":     freelist + ", not written at commit (NoFreelistSync)",
			"writers":      "one at a time (bbolt's write lock)",
		},
	}, nil
}

// lookup finds key in the bucket. It uses a cursor rather than Bucket.Get
// so that an empty stored value is told apart from an absent key by the
// key match, not by whether the value slice is nil.
func lookup(tx *bolt.Tx, key []byte) ([]byte, bool) {
	k, v := tx.Bucket(bucket).Cursor().Seek(key)
	if k == nil || !bytes.Equal(k, key) {
		return nil, false
	}
	return v, true
}

// Get returns a copy of the value under key.
func (s *Store) Get(key []byte) ([]byte, error) {
	var out []byte
	err := s.View(key, func(v []byte) error {
		out = targetkit.CopyBytes(v)
		return nil
	})
	return out, err
}

// View calls fn with the value inside the memory map, in a read
// transaction; nothing is copied.
func (s *Store) View(key []byte, fn func([]byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v, ok := lookup(tx, key)
		if !ok {
			return kv.ErrNotFound
		}
		return fn(v)
	})
}

// Put stores value under key in its own read-write transaction (bbolt
// allows one at a time; concurrent Puts queue). We do not use db.Batch:
// it would coalesce concurrent writers but delays each by up to 10 ms.
func (s *Store) Put(key, value []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put(key, value)
	})
	if err != nil {
		return fmt.Errorf("bbolt: put: %w", err)
	}
	return nil
}

// Delete removes key (bbolt ignores absent keys).
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("bbolt: delete", s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Delete(key)
	}))
}

// NewBatch buffers writes and applies them in one transaction.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	targetkit.Ops
}

func (b *batch) Commit() error {
	return b.Committed("bbolt", b.s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucket)
		return b.Apply(bk.Put, bk.Delete)
	}))
}

// Scan iterates [lower, upper) with a cursor in one read transaction; fn
// sees slices of the memory map. fn must not write to the store: a write
// that grows the map would wait for this read transaction to end.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, v := c.Seek(lower); k != nil; k, v = c.Next() {
			if upper != nil && bytes.Compare(k, upper) >= 0 {
				break
			}
			if !fn(k, v) {
				break
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bbolt: scan: %w", err)
	}
	return nil
}

// Sync fdatasyncs the database file (needed only with NoSync).
func (s *Store) Sync() error {
	return targetkit.Wrap("bbolt: sync", s.db.Sync())
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the database.
func (s *Store) Close() error {
	return targetkit.Wrap("bbolt: close", s.db.Close())
}
