//go:build leveldb && cgo

package leveldb

// #cgo LDFLAGS: -lleveldb
// #include <stdlib.h>
// #include "leveldb/c.h"
import "C"

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/jmhodges/levigo"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    = Open
	unavailable = ""
)

// levigoVersion is the binding's version in go.mod (a test in package all
// checks that they agree); the library's comes from the library itself.
const levigoVersion = "v1.0.0"

func version() string {
	return fmt.Sprintf("%d.%d (system libleveldb; levigo %s)",
		levigo.GetLevelDBMajorVersion(), levigo.GetLevelDBMinorVersion(),
		levigoVersion)
}

// Store is an open LevelDB database. The C objects it owns (options,
// cache, filter policy) must outlive the database and are freed in Close.
type Store struct {
	db       *levigo.DB
	dir      string
	opts     *levigo.Options
	cache    *levigo.Cache
	filter   *levigo.FilterPolicy
	ro       *levigo.ReadOptions
	wo       *levigo.WriteOptions
	settings map[string]string
}

// Open opens or creates a LevelDB database in o.Dir.
//
// Options (Extra): bloom_bits_per_key (default 10; 0 disables the filter),
// write_buffer_bytes (memtable size, default LevelDB's 4 MiB),
// compression (snappy, the default, or none).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("leveldb", o, open) }

func open(o kv.Options) (*Store, error) {
	lo, err := targetkit.LSMOptions(o, optionNames, "write_buffer_bytes", 4<<20, "snappy", "none")
	if err != nil {
		return nil, err
	}
	sync, bits, writeBuffer, compName := lo.Sync, lo.BloomBits, lo.Memtable, lo.Compression

	s := &Store{dir: o.Dir, opts: levigo.NewOptions()}
	s.opts.SetCreateIfMissing(true)
	// LevelDB's default cache is 8 MiB; an explicit LRU cache makes it the
	// same size as every other engine's.
	s.cache = levigo.NewLRUCache(int(lo.CacheBytes))
	s.opts.SetCache(s.cache)
	s.opts.SetWriteBufferSize(int(writeBuffer))
	if compName == "none" {
		s.opts.SetCompression(levigo.NoCompression)
	} else {
		s.opts.SetCompression(levigo.SnappyCompression)
	}
	if bits > 0 {
		// LevelDB has no filter unless asked; its documentation recommends
		// 10 bits/key so that reads of absent keys skip most tables.
		s.filter = levigo.NewBloomFilter(bits)
		s.opts.SetFilterPolicy(s.filter)
	}
	s.ro = levigo.NewReadOptions()
	s.wo = levigo.NewWriteOptions()
	s.wo.SetSync(sync)

	db, err := levigo.Open(o.Dir, s.opts)
	if err != nil {
		s.free()
		return nil, err
	}
	s.db = db
	s.settings = map[string]string{
		"durability":   targetkit.DurabilitySetting(sync),
		"cache":        lo.CacheDesc + " block cache (LRU)",
		"bloom_filter": lo.BloomDesc(),
		"compression":  compName,
		"memtable":     targetkit.FormatBytes(writeBuffer),
	}
	return s, nil
}

// free releases the C option objects (after the database is closed).
func (s *Store) free() {
	if s.ro != nil {
		s.ro.Close()
	}
	if s.wo != nil {
		s.wo.Close()
	}
	s.opts.Close()
	s.cache.Close()
	if s.filter != nil {
		s.filter.Close()
	}
}

// Get returns a copy of the value. The C API always returns a malloc'd
// copy, so there is no zero-copy View for this engine.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(s.ro, key)
	if err != nil {
		return nil, fmt.Errorf("leveldb: get: %w", err)
	}
	// levigo signals "absent" with nil. An empty stored value still comes
	// back non-nil: the C API returns malloc(0), which glibc makes a
	// non-NULL pointer (the conformance suite's EmptyValues test checks it).
	if v == nil {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// Put stores value under key.
func (s *Store) Put(key, value []byte) error {
	return targetkit.Wrap("leveldb: put", s.db.Put(s.wo, key, value))
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("leveldb: delete", s.db.Delete(s.wo, key))
}

// NewBatch buffers writes in Go; the C batch is built only in Commit, so a
// batch dropped without Commit leaks no C memory.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	targetkit.Ops
}

func (b *batch) Commit() error {
	wb := levigo.NewWriteBatch()
	defer wb.Close()
	b.Fill(wb)
	return b.Committed("leveldb", b.s.db.Write(b.s.wo, wb))
}

// Scan iterates [lower, upper) over an implicit snapshot.
//
// levigo's Iterator.Key/Value copy every entry into Go memory; the C API
// hands out pointers valid until the next move, which is all the Scan
// contract needs, so we call it directly on levigo's iterator handle and
// give fn views of LevelDB's memory, as the other engines do.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	it := s.db.NewIterator(s.ro)
	defer it.Close()
	cit := (*C.leveldb_iterator_t)(unsafe.Pointer(it.Iter))
	if len(lower) == 0 {
		it.SeekToFirst()
	} else {
		it.Seek(lower)
	}
	for ; it.Valid(); it.Next() {
		var klen, vlen C.size_t
		kp := C.leveldb_iter_key(cit, &klen)
		k := unsafe.Slice((*byte)(unsafe.Pointer(kp)), int(klen))
		if upper != nil && bytes.Compare(k, upper) >= 0 {
			break
		}
		vp := C.leveldb_iter_value(cit, &vlen)
		v := unsafe.Slice((*byte)(unsafe.Pointer(vp)), int(vlen))
		if !fn(k, v) {
			break
		}
	}
	return targetkit.Wrap("leveldb: scan", it.GetError())
}

// Sync makes earlier unsynced writes durable by fsyncing the journal files
// (LevelDB hands every write to the OS before returning; see
// targetkit.SyncFiles).
func (s *Store) Sync() error {
	return targetkit.Wrap("leveldb: sync", targetkit.SyncFiles(s.dir, ".log"))
}

// Compact compacts the whole key range.
func (s *Store) Compact() error {
	s.db.CompactRange(levigo.Range{})
	return nil
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the database, then frees the C objects it used.
func (s *Store) Close() error {
	s.db.Close()
	s.free()
	return nil
}
