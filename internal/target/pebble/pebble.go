// Package pebble is the storebench target for CockroachDB's Pebble, a
// pure-Go LSM tree in the RocksDB family.
package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"strconv"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the Pebble release in go.mod (a test in package all
// checks that they agree).
const moduleVersion = "v1.1.5"

var optionNames = []string{"bloom_bits_per_key", "memtable_bytes", "compression"}

func init() {
	kv.Register(kv.Engine{
		Name:        "pebble",
		Title:       "Pebble",
		Kind:        "pure-go",
		Open:        Open,
		Version:     moduleVersion,
		OptionNames: optionNames,
		More:        []string{"compaction"}, // kv.Compacter
	})
}

// Store is an open Pebble database.
type Store struct {
	db       *pebble.DB
	cache    interface{ Unref() }
	wo       *pebble.WriteOptions
	settings map[string]string
}

// Open opens or creates a Pebble database in o.Dir.
//
// Options (Extra): bloom_bits_per_key (default 10; 0 disables the filter),
// memtable_bytes (default Pebble's 4 MiB), compression (snappy, the
// default, zstd or none).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("pebble", o, open) }

func open(o kv.Options) (*Store, error) {
	lo, err := targetkit.LSMOptions(o, optionNames, "memtable_bytes", 4<<20, "snappy", "zstd", "none")
	if err != nil {
		return nil, err
	}
	sync, bits, memtable, compName := lo.Sync, lo.BloomBits, lo.Memtable, lo.Compression
	comp := map[string]pebble.Compression{
		"snappy": pebble.SnappyCompression,
		"zstd":   pebble.ZstdCompression,
		"none":   pebble.NoCompression,
	}[compName]

	cache := pebble.NewCache(lo.CacheBytes)
	opts := &pebble.Options{
		Cache:        cache,
		MemTableSize: uint64(memtable),
		// A new store gets the newest on-disk format this version knows;
		// the default (most compatible) format exists only for upgrades.
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		Levels:             make([]pebble.LevelOptions, 7),
	}
	setLevels(opts.Levels, bits, comp)
	db, err := pebble.Open(o.Dir, opts)
	if err != nil {
		cache.Unref()
		return nil, err
	}
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
	}
	return &Store{
		db:    db,
		cache: cache,
		wo:    wo,
		settings: map[string]string{
			"durability":   targetkit.DurabilitySetting(sync),
			"cache":        lo.CacheDesc + " block cache",
			"bloom_filter": lo.BloomDesc(),
			"compression":  compName,
			"memtable":     targetkit.FormatBytes(memtable),
			"format":       "FormatNewest (" + strconv.Itoa(int(pebble.FormatNewest)) + ")",
		},
	}, nil
}

// setLevels gives every level a bloom filter of bits bits a key (none at
// 0), the compression comp and Pebble's default target file size, so
// that each level is set as the store is deployed.
func setLevels(levels []pebble.LevelOptions, bits int, comp pebble.Compression) {
	for i := range levels {
		l := &levels[i]
		// Pebble's defaults have no filter at all, unlike RocksDB and
		// LevelDB setups in practice: without one every point read of an
		// absent key touches every level, which would make Pebble look far
		// worse on misses than it is as deployed.
		if bits > 0 {
			l.FilterPolicy = bloom.FilterPolicy(bits)
		}
		l.Compression = comp
		// Pebble's default target file sizes: 2 MiB at L0, doubling per
		// level. Set explicitly because a non-nil Levels slice skips that.
		l.TargetFileSize = 2 << 20 << i
	}
}

// quietLogger drops Pebble's informational messages (they would interleave
// with the tool's progress output) but keeps fatal ones.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	log.Fatalf("pebble: "+format, args...)
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

// View calls fn with the value as held by Pebble (block cache or memtable)
// without copying it; the slice is valid only during fn.
func (s *Store) View(key []byte, fn func([]byte) error) error {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return kv.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pebble: get: %w", err)
	}
	defer closer.Close()
	return fn(v)
}

// Put stores value under key.
func (s *Store) Put(key, value []byte) error {
	return targetkit.Wrap("pebble: put", s.db.Set(key, value, s.wo))
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	return targetkit.Wrap("pebble: delete", s.db.Delete(key, s.wo))
}

// DeleteRange implements kv.RangeDeleter: one range tombstone.
func (s *Store) DeleteRange(start, end []byte) error {
	return targetkit.Wrap("pebble: delete range", s.db.DeleteRange(start, end, s.wo))
}

// NewBatch starts a Pebble write batch (it copies keys and values).
func (s *Store) NewBatch() kv.Batch {
	return &batch{s: s, b: s.db.NewBatch()}
}

type batch struct {
	s *Store
	b *pebble.Batch
	n int
}

func (b *batch) Put(key, value []byte) { _ = b.b.Set(key, value, nil); b.n++ }
func (b *batch) Delete(key []byte)     { _ = b.b.Delete(key, nil); b.n++ }
func (b *batch) Len() int              { return b.n }

func (b *batch) Commit() error {
	defer b.b.Close()
	if err := b.b.Commit(b.s.wo); err != nil {
		return fmt.Errorf("pebble: commit batch of %d: %w", b.n, err)
	}
	return nil
}

// Scan iterates [lower, upper) with Pebble's own bounds so that the
// iterator can skip tables outside the range.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebble: scan: %w", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("pebble: scan: %w", err)
		}
		if !fn(it.Key(), v) {
			break
		}
	}
	return targetkit.Wrap("pebble: scan", it.Close())
}

// Sync makes earlier NoSync writes durable: LogData with pebble.Sync
// fsyncs the WAL, which holds every write before it.
func (s *Store) Sync() error {
	return targetkit.Wrap("pebble: sync", s.db.LogData(nil, pebble.Sync))
}

// Compact compacts the whole key range, from the first key to just past
// the last one (Pebble needs start < end).
func (s *Store) Compact() error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("pebble: compact: %w", err)
	}
	var first, last []byte
	if it.First() {
		first = bytes.Clone(it.Key())
		it.Last()
		last = append(bytes.Clone(it.Key()), 0)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebble: compact: %w", err)
	}
	if first == nil {
		return nil
	}
	return targetkit.Wrap("pebble: compact", s.db.Compact(first, last, true))
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the database and releases the cache.
func (s *Store) Close() error {
	err := s.db.Close()
	s.cache.Unref()
	if err != nil {
		return fmt.Errorf("pebble: close: %w", err)
	}
	return nil
}
