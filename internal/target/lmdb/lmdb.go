//go:build cgo

package lmdb

import (
	"bytes"
	"fmt"

	"github.com/PowerDNS/lmdb-go/lmdb"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    = Open
	unavailable = ""
)

// lmdbGoVersion is the binding's version in go.mod (a test in package all
// checks that they agree); it fixes the bundled LMDB release.
const lmdbGoVersion = "v1.9.3"

func version() string {
	major, minor, patch, _ := lmdb.Version()
	return fmt.Sprintf("%d.%d.%d (bundled with lmdb-go %s)", major, minor, patch, lmdbGoVersion)
}

// defaultMapSize bounds the database file. It is only address space (the
// file grows as pages are used), so it is set far above any study's data
// set: LMDB fails writes with MDB_MAP_FULL once the map is full.
const defaultMapSize = 64 << 30

// maxReaders is the size of LMDB's reader table. The default (126) would
// cap the number of goroutines reading at once.
const maxReaders = 1024

// Store is an open LMDB environment with its unnamed (root) database.
type Store struct {
	env      *lmdb.Env
	dbi      lmdb.DBI
	settings map[string]string
}

// Open opens or creates an LMDB environment in o.Dir.
//
// Options (Extra): map_size (default 64 GiB of address space),
// no_readahead ("true" sets MDB_NORDAHEAD, which helps random reads of a
// database larger than RAM; default "false", LMDB's default).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("lmdb", o, open) }

func open(o kv.Options) (*Store, error) {
	eo, err := targetkit.EmbeddedOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, extra := eo.Sync, eo.Extra
	mapSize, err := extra.Bytes("map_size", defaultMapSize)
	if err != nil {
		return nil, err
	}
	noReadahead, err := extra.Choice("no_readahead", "false", "true", "false")
	if err != nil {
		return nil, err
	}
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}

	env, err := lmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	if err := env.SetMapSize(mapSize); err != nil {
		env.Close()
		return nil, err
	}
	if err := env.SetMaxReaders(maxReaders); err != nil {
		env.Close()
		return nil, err
	}
	// MDB_NOTLS ties a read transaction to the transaction object, not to
	// the OS thread: Go moves goroutines between threads, so without it
	// read transactions from many goroutines would misuse LMDB's per-thread
	// reader slots.
	flags := uint(lmdb.NoTLS)
	if !sync {
		// MDB_NOSYNC skips the fsync of data and meta pages at commit; the
		// OS still gets every write, and Sync() flushes them.
		flags |= lmdb.NoSync
	}
	if noReadahead == "true" {
		flags |= lmdb.NoReadahead
	}
	if err := env.Open(o.Dir, flags, 0o644); err != nil {
		env.Close()
		return nil, err
	}
	var dbi lmdb.DBI
	if err := env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenRoot(0)
		return err
	}); err != nil {
		env.Close()
		return nil, err
	}
	return &Store{
		env: env,
		dbi: dbi,
		settings: map[string]string{
			"durability":   targetkit.DurabilitySetting(sync),
			"cache":        "OS page cache (memory-mapped file; cache size not applicable)",
			"bloom_filter": "none (B+tree)",
			"compression":  "none",
			"map_size":     targetkit.FormatBytes(mapSize),
			"readahead":    map[string]string{"true": "off (MDB_NORDAHEAD)", "false": "on"}[noReadahead],
			"max_key_size": fmt.Sprintf("%d bytes", env.MaxKeySize()),
			"writers":      "one at a time (LMDB's write lock)",
		},
	}, nil
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
	return s.env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		v, err := txn.Get(s.dbi, key)
		if lmdb.IsNotFound(err) {
			return kv.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lmdb: get: %w", err)
		}
		return fn(v)
	})
}

// Put stores value under key in its own write transaction. LMDB allows one
// writer at a time; concurrent Puts queue on its write lock.
func (s *Store) Put(key, value []byte) error {
	err := s.env.Update(func(txn *lmdb.Txn) error {
		return txn.Put(s.dbi, key, value, 0)
	})
	if err != nil {
		return fmt.Errorf("lmdb: put: %w", err)
	}
	return nil
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("lmdb: delete", s.env.Update(func(txn *lmdb.Txn) error {
		return del(txn, s.dbi, key)
	}))
}

func del(txn *lmdb.Txn, dbi lmdb.DBI, key []byte) error {
	if err := txn.Del(dbi, key, nil); err != nil && !lmdb.IsNotFound(err) {
		return err
	}
	return nil
}

// NewBatch buffers writes and applies them in one write transaction.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	targetkit.Ops
}

func (b *batch) Commit() error {
	return b.Committed("lmdb", b.s.env.Update(func(txn *lmdb.Txn) error {
		return b.Apply(func(k, v []byte) error { return txn.Put(b.s.dbi, k, v, 0) },
			func(k []byte) error { return del(txn, b.s.dbi, k) })
	}))
}

// Scan iterates [lower, upper) with a cursor in one read transaction; fn
// sees slices of the memory map.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	err := s.env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		c, err := txn.OpenCursor(s.dbi)
		if err != nil {
			return err
		}
		defer c.Close()
		var k, v []byte
		if len(lower) == 0 {
			k, v, err = c.Get(nil, nil, lmdb.First)
		} else {
			k, v, err = c.Get(lower, nil, lmdb.SetRange)
		}
		for ; err == nil; k, v, err = c.Get(nil, nil, lmdb.Next) {
			if upper != nil && bytes.Compare(k, upper) >= 0 {
				return nil
			}
			if !fn(k, v) {
				return nil
			}
		}
		if lmdb.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("lmdb: scan: %w", err)
	}
	return nil
}

// Sync flushes the map to disk (needed only with MDB_NOSYNC).
func (s *Store) Sync() error {
	return targetkit.Wrap("lmdb: sync", s.env.Sync(true))
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the environment.
func (s *Store) Close() error {
	return targetkit.Wrap("lmdb: close", s.env.Close())
}
