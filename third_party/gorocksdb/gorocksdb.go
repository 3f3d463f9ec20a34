// Package gorocksdb stands in for github.com/tecbot/gorocksdb (2019), which
// MoeingADS v0.4.3 imports but which no longer compiles against current
// RocksDB releases (Debian 12 ships 7.8.3). It presents the small part of
// that API MoeingADS uses (indextree/rocks_db.go) on top of
// github.com/linxGnu/grocksdb v1.7.15, the binding storebench's rocksdb
// target already links against the same system library.
//
// It is wired in with a replace directive in storebench's go.mod and is
// compiled only into binaries built with the "moeingads" tag.
package gorocksdb

import "github.com/linxGnu/grocksdb"

// The types MoeingADS names are grocksdb's own: grocksdb kept tecbot's
// method names and signatures for everything MoeingADS calls on them
// (Get/Put/Delete/Write/NewIterator/GetProperty/Close, Slice.Data/Free/
// Exists, WriteBatch.Put/Delete/Destroy, the iterator's Seek* family).
type (
	DB                     = grocksdb.DB
	ReadOptions            = grocksdb.ReadOptions
	WriteOptions           = grocksdb.WriteOptions
	WriteBatch             = grocksdb.WriteBatch
	Iterator               = grocksdb.Iterator
	Slice                  = grocksdb.Slice
	Cache                  = grocksdb.Cache
	BlockBasedTableOptions = grocksdb.BlockBasedTableOptions
	FilterPolicy           = grocksdb.NativeFilterPolicy
	CompressionType        = grocksdb.CompressionType
)

// NoCompression is tecbot's name for grocksdb's constant of the same name.
const NoCompression = grocksdb.NoCompression

// Options are grocksdb's, except for the compaction filter (below).
type Options struct {
	*grocksdb.Options
}

// CompactionFilter is tecbot's two-method interface; grocksdb's adds
// SetIgnoreSnapshots and Destroy, which a Go-side filter has no use for.
type CompactionFilter interface {
	Filter(level int, key, val []byte) (remove bool, newVal []byte)
	Name() string
}

// SetCompactionFilter installs f, adapted to grocksdb's interface.
func (o *Options) SetCompactionFilter(f CompactionFilter) {
	o.Options.SetCompactionFilter(goFilter{f})
}

type goFilter struct{ CompactionFilter }

// SetIgnoreSnapshots has had no effect since RocksDB 6.0.
func (goFilter) SetIgnoreSnapshots(bool) {}

// Destroy: a Go filter holds no C memory.
func (goFilter) Destroy() {}

// OpenDb opens (or, with CreateIfMissing, creates) the database at name.
func OpenDb(opts *Options, name string) (*DB, error) { return grocksdb.OpenDb(opts.Options, name) }

func NewDefaultOptions() *Options           { return &Options{grocksdb.NewDefaultOptions()} }
func NewDefaultReadOptions() *ReadOptions   { return grocksdb.NewDefaultReadOptions() }
func NewDefaultWriteOptions() *WriteOptions { return grocksdb.NewDefaultWriteOptions() }
func NewWriteBatch() *WriteBatch            { return grocksdb.NewWriteBatch() }

func NewDefaultBlockBasedTableOptions() *BlockBasedTableOptions {
	return grocksdb.NewDefaultBlockBasedTableOptions()
}

// NewLRUCache takes tecbot's int capacity; grocksdb's is a uint64.
func NewLRUCache(capacity int) *Cache { return grocksdb.NewLRUCache(uint64(capacity)) }

// NewBloomFilter takes tecbot's int bits per key; grocksdb's is a float64.
func NewBloomFilter(bitsPerKey int) *FilterPolicy {
	return grocksdb.NewBloomFilter(float64(bitsPerKey))
}
