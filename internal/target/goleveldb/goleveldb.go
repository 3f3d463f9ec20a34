// Package goleveldb is the storebench target for syndtr/goleveldb, the
// pure-Go port of LevelDB.
package goleveldb

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the goleveldb version in go.mod (a test in package all
// checks that they agree).
const moduleVersion = "v1.0.1-0.20220721030215-126854af5e6d"

var optionNames = []string{"bloom_bits_per_key", "write_buffer_bytes", "compression"}

func init() {
	kv.Register(kv.Engine{
		Name:        "goleveldb",
		Title:       "GoLevelDB",
		Kind:        "pure-go",
		Open:        Open,
		Version:     moduleVersion,
		OptionNames: optionNames,
		More:        []string{"compaction"}, // kv.Compacter
		Default:     kv.Async,
		DefaultNote: "goleveldb's default write: WriteOptions.Sync false (never fsynced)",
	})
}

// Store is an open goleveldb database.
type Store struct {
	db       *leveldb.DB
	dir      string
	wo       *opt.WriteOptions
	settings map[string]string
}

// Open opens or creates a goleveldb database in o.Dir.
//
// Options (Extra): bloom_bits_per_key (default 10; 0 disables the filter),
// write_buffer_bytes (memtable size, default goleveldb's 4 MiB),
// compression (snappy, the default, or none).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("goleveldb", o, open) }

func open(o kv.Options) (*Store, error) {
	lo, err := targetkit.LSMOptions(o, optionNames, "write_buffer_bytes", int64(opt.DefaultWriteBuffer), "snappy", "none")
	if err != nil {
		return nil, err
	}
	sync, bits, writeBuffer, compName := lo.Sync, lo.BloomBits, lo.Memtable, lo.Compression
	opts := &opt.Options{
		BlockCacheCapacity: int(lo.CacheBytes),
		WriteBuffer:        int(writeBuffer),
		Compression:        opt.SnappyCompression,
	}
	if compName == "none" {
		opts.Compression = opt.NoCompression
	}
	if bits > 0 {
		// Like Pebble, goleveldb ships without a filter; LevelDB's own
		// documentation recommends a 10 bits/key Bloom filter, which keeps
		// reads of absent keys from touching every level.
		opts.Filter = filter.NewBloomFilter(bits)
	}
	db, err := leveldb.OpenFile(o.Dir, opts)
	if err != nil {
		return nil, err
	}
	return &Store{
		db:  db,
		dir: o.Dir,
		wo:  &opt.WriteOptions{Sync: sync},
		settings: map[string]string{
			"durability":   targetkit.DurabilitySetting(sync),
			"cache":        lo.CacheDesc + " block cache (LRU)",
			"bloom_filter": lo.BloomDesc(),
			"compression":  compName,
			"memtable":     targetkit.FormatBytes(writeBuffer),
		},
	}, nil
}

// Get returns the value under key; goleveldb already hands back its own
// copy (there is no zero-copy read, hence no View).
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("goleveldb: get: %w", err)
	}
	if v == nil {
		v = []byte{} // an empty stored value comes back nil
	}
	return v, nil
}

// Put stores value under key.
func (s *Store) Put(key, value []byte) error {
	return targetkit.Wrap("goleveldb: put", s.db.Put(key, value, s.wo))
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("goleveldb: delete", s.db.Delete(key, s.wo))
}

// NewBatch starts a goleveldb batch (it copies keys and values).
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	b leveldb.Batch
}

func (b *batch) Put(key, value []byte) { b.b.Put(key, value) }
func (b *batch) Delete(key []byte)     { b.b.Delete(key) }
func (b *batch) Len() int              { return b.b.Len() }

func (b *batch) Commit() error {
	if err := b.s.db.Write(&b.b, b.s.wo); err != nil {
		return fmt.Errorf("goleveldb: commit batch of %d: %w", b.b.Len(), err)
	}
	return nil
}

// Scan iterates [lower, upper); the iterator reads from a snapshot.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	it := s.db.NewIterator(&util.Range{Start: lower, Limit: upper}, nil)
	for it.Next() {
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	it.Release()
	return targetkit.Wrap("goleveldb: scan", it.Error())
}

// Sync makes earlier unsynced writes durable.
//
// goleveldb has no sync call, and a synced write of an empty batch is a
// no-op in it. But every write is handed to the OS before Write returns
// (the journal is flushed), so fsyncing the journal files and the
// directory makes all of them durable; tables and the manifest are always
// fsynced by goleveldb itself.
func (s *Store) Sync() error {
	return targetkit.Wrap("goleveldb: sync", targetkit.SyncFiles(s.dir, ".log"))
}

// Compact compacts the whole key range.
func (s *Store) Compact() error {
	return targetkit.Wrap("goleveldb: compact", s.db.CompactRange(util.Range{}))
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the database.
func (s *Store) Close() error {
	return targetkit.Wrap("goleveldb: close", s.db.Close())
}
