//go:build rocksdb && cgo

package rocksdb

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/linxGnu/grocksdb"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    = Open
	unavailable = ""
)

// grocksdbVersion is the binding's version in go.mod (a test in package
// all checks that they agree).
const grocksdbVersion = "v1.7.15"

func version() string {
	return libraryVersion + " (librocksdb-dev; grocksdb " + grocksdbVersion + ")"
}

// Store is an open RocksDB database. The C option objects must outlive the
// database and are freed in Close.
type Store struct {
	db       *grocksdb.DB
	opts     *grocksdb.Options
	bbto     *grocksdb.BlockBasedTableOptions
	cache    *grocksdb.Cache
	ro       *grocksdb.ReadOptions
	wo       *grocksdb.WriteOptions
	settings map[string]string
}

var compressions = map[string]grocksdb.CompressionType{
	"snappy": grocksdb.SnappyCompression,
	"lz4":    grocksdb.LZ4Compression,
	"zstd":   grocksdb.ZSTDCompression,
	"none":   grocksdb.NoCompression,
}

// Open opens or creates a RocksDB database in o.Dir.
//
// Options (Extra): bloom_bits_per_key (default 10; 0 disables the filter),
// write_buffer_bytes (memtable size, default RocksDB's 64 MiB),
// compression (snappy, the default, lz4, zstd or none).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("rocksdb", o, open) }

func open(o kv.Options) (*Store, error) {
	lo, err := targetkit.LSMOptions(o, optionNames, "write_buffer_bytes", 64<<20, "snappy", "lz4", "zstd", "none")
	if err != nil {
		return nil, err
	}
	sync, bits, writeBuffer, compName := lo.Sync, lo.BloomBits, lo.Memtable, lo.Compression

	s := &Store{opts: grocksdb.NewDefaultOptions(), bbto: grocksdb.NewDefaultBlockBasedTableOptions()}
	// An explicit LRU block cache, sized like every other engine's (the
	// built-in default is a small internal cache).
	s.cache = grocksdb.NewLRUCache(uint64(lo.CacheBytes))
	s.bbto.SetBlockCache(s.cache)
	if bits > 0 {
		// Without a filter policy RocksDB reads a data block of every
		// overlapping table for an absent key; 10 bits/key (~1% false
		// positives) is the setting RocksDB's tuning guide starts from.
		s.bbto.SetFilterPolicy(grocksdb.NewBloomFilterFull(float64(bits)))
	}
	s.opts.SetBlockBasedTableFactory(s.bbto)
	s.opts.SetCreateIfMissing(true)
	s.opts.SetWriteBufferSize(uint64(writeBuffer))
	s.opts.SetCompression(compressions[compName])
	s.ro = grocksdb.NewDefaultReadOptions()
	s.wo = grocksdb.NewDefaultWriteOptions()
	s.wo.SetSync(sync)

	db, err := grocksdb.OpenDb(s.opts, o.Dir)
	if err != nil {
		s.free()
		return nil, err
	}
	s.db = db
	s.settings = map[string]string{
		"durability":      targetkit.DurabilitySetting(sync),
		"cache":           lo.CacheDesc + " block cache (LRU)",
		"bloom_filter":    lo.BloomDesc(),
		"compression":     compName,
		"memtable":        targetkit.FormatBytes(writeBuffer),
		"library_version": recordedVersion(o.Dir),
	}
	return s, nil
}

// recordedVersion reads the version of the linked library from the newest
// OPTIONS file RocksDB wrote on open ("rocksdb_version=7.8.3").
func recordedVersion(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	if len(files) == 0 {
		return "unknown"
	}
	sort.Strings(files) // same-width numbers: the last is the newest
	f, err := os.Open(files[len(files)-1])
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "rocksdb_version="); ok {
			return v
		}
	}
	return "unknown"
}

func (s *Store) free() {
	if s.ro != nil {
		s.ro.Destroy()
	}
	if s.wo != nil {
		s.wo.Destroy()
	}
	s.opts.Destroy()
	s.bbto.Destroy()
	s.cache.Destroy()
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

// View calls fn with the value pinned in RocksDB's memory (block cache or
// memtable), avoiding the malloc and copy of a plain Get.
func (s *Store) View(key []byte, fn func([]byte) error) error {
	h, err := s.db.GetPinned(s.ro, key)
	if err != nil {
		return fmt.Errorf("rocksdb: get: %w", err)
	}
	defer h.Destroy()
	if !h.Exists() {
		return kv.ErrNotFound
	}
	return fn(h.Data())
}

// Put stores value under key.
func (s *Store) Put(key, value []byte) error {
	return targetkit.Wrap("rocksdb: put", s.db.Put(s.wo, key, value))
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("rocksdb: delete", s.db.Delete(s.wo, key))
}

// DeleteRange implements kv.RangeDeleter: one range tombstone, written
// through a WriteBatch (the binding's only DeleteRange on the default
// column family).
func (s *Store) DeleteRange(start, end []byte) error {
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	wb.DeleteRange(start, end)
	return targetkit.Wrap("rocksdb: delete range", s.db.Write(s.wo, wb))
}

// NewBatch buffers writes in Go; the C WriteBatch is built only in Commit,
// so a batch dropped without Commit leaks no C memory.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	targetkit.Ops
}

func (b *batch) Commit() error {
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	b.Fill(wb)
	return b.Committed("rocksdb", b.s.db.Write(b.s.wo, wb))
}

// Scan iterates [lower, upper) over an implicit snapshot, handing fn
// views of RocksDB's memory (valid until the iterator moves). The upper
// bound is checked in Go: grocksdb's iterate_upper_bound would keep a
// pointer to Go memory inside C.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	ro := s.ro
	if upper != nil {
		// The bound goes to RocksDB (iterate_upper_bound): without it a
		// seek past the last live key before upper walks every deletion
		// tombstone after it, up to the next live key, before the check
		// below can stop it (geo's timeline of a user who does not exist
		// after the point-by-point GC took minutes).
		ro = grocksdb.NewDefaultReadOptions()
		defer ro.Destroy()
		ro.SetIterateUpperBound(upper)
	}
	it := s.db.NewIterator(ro)
	defer it.Close()
	if len(lower) == 0 {
		it.SeekToFirst()
	} else {
		it.Seek(lower)
	}
	for ; it.Valid(); it.Next() {
		k := it.Key().Data()
		if upper != nil && bytes.Compare(k, upper) >= 0 {
			break
		}
		if !fn(k, it.Value().Data()) {
			break
		}
	}
	return targetkit.Wrap("rocksdb: scan", it.Err())
}

// Sync fsyncs the WAL, which holds every write so far.
func (s *Store) Sync() error {
	return targetkit.Wrap("rocksdb: sync", s.db.FlushWAL(true))
}

// Compact compacts the whole key range.
func (s *Store) Compact() error {
	s.db.CompactRange(grocksdb.Range{})
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
