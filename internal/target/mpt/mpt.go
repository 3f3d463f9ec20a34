// Package mpt is the storebench target for Ethereum's Merkle Patricia Trie
// (go-ethereum's trie and hash-based triedb) on geth's own LevelDB key-value
// store, the MPT setup of seed 001. It is an ads.Store: one trie commit per
// block, returning the state root.
package mpt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/leveldb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/hashdb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the go-ethereum release in go.mod (a test in package
// all checks that they agree).
const moduleVersion = "v1.17.10"

var optionNames = []string{"write_buffer_bytes", "clean_cache_bytes"}

func init() {
	target.RegisterEmbedded(target.Info{
		Name:        "mpt",
		Title:       "Ethereum MPT",
		Kind:        "pure-go",
		Version:     "go-ethereum " + moduleVersion,
		OptionNames: optionNames,
		Provides:    ads.Provides,
		Open:        func(o target.Options) (io.Closer, error) { return Open(o) },
	})
}

// headKey holds the root and version of the last commit. Trie nodes are
// stored under their 32-byte hashes, so a key of another length cannot
// collide with one.
var headKey = []byte("storebench-mpt-head")

// Store is an open trie.
//
// Geth tries are not safe for concurrent use: even a read replaces hash
// references by the nodes it loads. Writes go to one trie (tr) holding the
// committed state plus the block's staged writes. Between blocks every Get
// reads from its own shallow copy of a pristine trie at the last root
// (base), so concurrent readers share no mutable state and never wait for
// each other; node bytes come from the LevelDB block cache (and triedb's
// clean cache when enabled), as in geth. While a block has staged writes,
// Gets must see them, so they read tr under mu.
type Store struct {
	disk *leveldb.Database
	tdb  *triedb.Database
	dir  string
	sync bool

	mu      sync.Mutex
	tr      *trie.Trie
	base    *trie.Trie
	dirty   bool // tr has writes that base does not
	root    common.Hash
	version int64

	settings map[string]string
}

// Open opens or creates the trie database in o.Dir and loads the trie at
// the root of the last commit.
//
// Options (Extra): write_buffer_bytes (LevelDB memtable, default 4 MiB as
// for the goleveldb target), clean_cache_bytes (triedb's cache of clean
// trie nodes, default 0: disabled, geth's library default).
func Open(o target.Options) (*Store, error) { return targetkit.OpenIn("mpt", o.Dir, o, open) }

func open(o target.Options) (*Store, error) {
	eo, err := targetkit.TargetOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, cacheBytes, cacheDesc, extra := eo.Sync, eo.CacheBytes, eo.CacheDesc, eo.Extra
	writeBuffer, err := extra.Bytes("write_buffer_bytes", int64(opt.DefaultWriteBuffer))
	if err != nil {
		return nil, err
	}
	cleanCache, err := extra.Bytes("clean_cache_bytes", 0)
	if err != nil {
		return nil, err
	}
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}
	// geth's own LevelDB wrapper, as a geth node opens it, with the cache
	// and memtable sizes stated here rather than derived from one figure
	// (geth gives half its cache to blocks and a quarter to each memtable).
	// Its defaults stay: 10 bits/key Bloom filter, snappy, no seek
	// compaction.
	disk, err := leveldb.NewCustom(o.Dir, "", func(opts *opt.Options) {
		opts.BlockCacheCapacity = int(cacheBytes)
		opts.WriteBuffer = int(writeBuffer)
	})
	if err != nil {
		return nil, err
	}
	tdb := triedb.NewDatabase(rawdb.NewDatabase(disk), &triedb.Config{
		HashDB: &hashdb.Config{CleanCacheSize: int(cleanCache)},
	})
	s := &Store{disk: disk, tdb: tdb, dir: o.Dir, sync: sync, root: types.EmptyRootHash}
	if err := s.loadHead(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.reset(); err != nil {
		_ = s.Close()
		return nil, err
	}
	durability := "no fsync (async): a block reaches the OS page cache at its commit"
	if sync {
		durability = "fsync of LevelDB's journal after every block commit (geth's LevelDB wrapper never writes with sync, so storebench fsyncs the journal files)"
	}
	cleanDesc := "disabled (geth library default)"
	if cleanCache > 0 {
		cleanDesc = targetkit.FormatBytes(cleanCache)
	}
	s.settings = map[string]string{
		"backend":          "go-ethereum ethdb/leveldb (syndtr/goleveldb), as in the seed",
		"triedb":           "hashdb (hash-based node scheme)",
		"commit":           "per block: trie.Commit, triedb Update + Commit (every new node written to LevelDB), then the head (root, version)",
		"durability":       durability,
		"keys":             "the workload's keys as they are, in a plain trie (not geth's secure trie, which would hash keys that are already 32 random bytes)",
		"pruning":          "none: every block's nodes stay on disk (archive node)",
		"cache":            cacheDesc + " LevelDB block cache",
		"trie_clean_cache": cleanDesc,
		"memtable":         targetkit.FormatBytes(writeBuffer),
		"bloom_filter":     "10 bits/key (geth default)",
		"compression":      "snappy (geth default)",
		"concurrent_gets":  "a shallow trie copy per Get between blocks; Gets during a block with staged writes share its trie under a mutex",
		"proofs":           "trie.Prove / trie.VerifyProof (the trie nodes on the path to the key)",
	}
	return s, nil
}

// loadHead reads the root and version of the last commit (none in a new
// store).
func (s *Store) loadHead() error {
	head, err := s.disk.Get(headKey)
	if err != nil {
		if ok, herr := s.disk.Has(headKey); herr == nil && !ok {
			return nil // a new store
		}
		return fmt.Errorf("reading the head: %w", err)
	}
	if len(head) != common.HashLength+8 {
		return fmt.Errorf("head record has %d bytes, want %d", len(head), common.HashLength+8)
	}
	s.root = common.BytesToHash(head[:common.HashLength])
	s.version = int64(binary.BigEndian.Uint64(head[common.HashLength:]))
	return nil
}

// reset opens the tries at the current root: base for readers and tr, a
// copy of it, for the next block.
func (s *Store) reset() error {
	base, err := trie.New(trie.TrieID(s.root), s.tdb)
	if err != nil {
		return fmt.Errorf("loading the trie at root %x (version %d): %w", s.root, s.version, err)
	}
	s.base, s.tr, s.dirty = base, base.Copy(), false
	return nil
}

// Get returns a copy of the value of key (staged in this block or
// committed), or kv.ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	var v []byte
	var err error
	if s.dirty { // no writer runs while readers do
		s.mu.Lock()
		v, err = s.tr.Get(key)
		s.mu.Unlock()
	} else {
		v, err = s.base.Copy().Get(key)
	}
	if err != nil {
		return nil, fmt.Errorf("mpt: get: %w", err)
	}
	if len(v) == 0 {
		return nil, kv.ErrNotFound
	}
	return bytes.Clone(v), nil
}

// Set stages key = value in the current block. The trie keeps the value
// slice, so it gets a copy. An empty value deletes the key (an MPT cannot
// hold empty values); the ADS workloads write 32-byte values.
func (s *Store) Set(key, value []byte) error {
	return targetkit.Stage(&s.mu, &s.dirty, "mpt: set", func() error { return s.tr.Update(key, bytes.Clone(value)) })
}

// Delete stages the removal of key; an absent key is no error.
func (s *Store) Delete(key []byte) error {
	return targetkit.Stage(&s.mu, &s.dirty, "mpt: delete", func() error { return s.tr.Delete(key) })
}

// Commit hashes the block's changes into a new root, writes the new nodes
// and the head to LevelDB (fsyncing its journal in sync mode) and returns
// the root and the block's version.
func (s *Store) Commit() ([]byte, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	version := s.version + 1
	root, nodes := s.tr.Commit(false)
	if nodes != nil {
		if err := s.tdb.Update(root, s.root, uint64(version), trienode.NewWithNodeSet(nodes), nil); err != nil {
			return nil, s.version, fmt.Errorf("mpt: commit block %d: triedb update: %w", version, err)
		}
	}
	if err := s.tdb.Commit(root, false); err != nil {
		return nil, s.version, fmt.Errorf("mpt: commit block %d: triedb commit: %w", version, err)
	}
	// The head goes after the nodes: LevelDB's journal is replayed in
	// order, so a head that survives a crash points at nodes that did.
	head := make([]byte, common.HashLength+8)
	copy(head, root[:])
	binary.BigEndian.PutUint64(head[common.HashLength:], uint64(version))
	if err := s.disk.Put(headKey, head); err != nil {
		return nil, s.version, fmt.Errorf("mpt: commit block %d: writing the head: %w", version, err)
	}
	if s.sync {
		if err := targetkit.SyncFiles(s.dir, ".log"); err != nil {
			return nil, s.version, fmt.Errorf("mpt: commit block %d: fsync: %w", version, err)
		}
	}
	s.root, s.version = root, version
	if err := s.reset(); err != nil {
		return nil, version, fmt.Errorf("mpt: after block %d: %w", version, err)
	}
	return root.Bytes(), version, nil
}

// Version is the version of the last commit (0 for a new store).
func (s *Store) Version() int64 { return s.version }

// Sync makes every committed block durable (the worker calls it before
// measuring disk use).
func (s *Store) Sync() error {
	return targetkit.Wrap("mpt: sync", targetkit.SyncFiles(s.dir, ".log"))
}

// GetWithProof returns the committed value of key with the trie nodes on
// its path from the last root, as a sequence of length-prefixed nodes.
func (s *Store) GetWithProof(key []byte) (value, proof []byte, err error) {
	t := s.base.Copy()
	v, err := t.Get(key)
	if err != nil {
		return nil, nil, fmt.Errorf("mpt: get with proof: %w", err)
	}
	if len(v) == 0 {
		return nil, nil, kv.ErrNotFound
	}
	var nodes proofNodes
	if err := t.Prove(key, &nodes); err != nil {
		return nil, nil, fmt.Errorf("mpt: prove: %w", err)
	}
	return bytes.Clone(v), nodes.buf, nil
}

// VerifyProof checks that proof shows key = value under root. The nodes
// are indexed by their hashes as computed here, not as the prover said.
func (s *Store) VerifyProof(root, key, value, proof []byte) error {
	if len(root) != common.HashLength {
		return fmt.Errorf("mpt: root has %d bytes, want %d", len(root), common.HashLength)
	}
	db, err := decodeProof(proof)
	if err != nil {
		return err
	}
	got, err := trie.VerifyProof(common.BytesToHash(root), key, db)
	if err != nil {
		return fmt.Errorf("mpt: proof does not verify: %w", err)
	}
	if got == nil {
		return errors.New("mpt: proof shows the key absent")
	}
	if !bytes.Equal(got, value) {
		return fmt.Errorf("mpt: proof shows value %x, not %x", got, value)
	}
	return nil
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close releases the trie database and LevelDB; staged writes of an
// uncommitted block are dropped.
func (s *Store) Close() error {
	return targetkit.Wrap("mpt: close", targetkit.FirstError(targetkit.Release(&s.tdb), targetkit.Release(&s.disk)))
}

var _ ethdb.KeyValueWriter = (*proofNodes)(nil)
