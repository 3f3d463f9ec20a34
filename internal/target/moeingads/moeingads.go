//go:build moeingads && cgo

package moeingads

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/smartbch/moeingads"
	mstore "github.com/smartbch/moeingads/store"
	"github.com/smartbch/moeingads/store/rabbit"
	mtypes "github.com/smartbch/moeingads/store/types"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

var openFunc = func(o target.Options) (io.Closer, error) { return Open(o) }

const unavailable = ""

// moduleVersion is the MoeingADS release in go.mod (a test in package all
// checks that they agree).
const moduleVersion = "v0.4.3"

func version() string {
	return moduleVersion + " (C++ B-tree; RocksDB 7.8.3 via grocksdb v1.7.15)"
}

// The guard keys bracket every key MoeingADS holds; RabbitStore's 8-byte
// short keys start with a byte in [64, 191], so these never collide. They
// are the ones of MoeingADS's own token benchmark (escchainbench).
var (
	guardStart = []byte{0, 0, 0, 0, 0, 0, 0, 0}
	guardEnd   = []byte{255, 255, 255, 255, 255, 255, 255, 255}
)

// trunkCacheHint sizes each block's TrunkStore cache map (a capacity hint
// only), as MoeingADS's read-write benchmark does.
const trunkCacheHint = 1000

// Store is an open MoeingADS.
//
// Each block's writes go to one RabbitStore (RabbitStore maps arbitrary
// keys onto the 8-byte keys the core accepts) on a TrunkStore on the
// RootStore; Commit writes the RabbitStore back into the TrunkStore and the
// TrunkStore into the RootStore, which runs MoeingADS's block update.
// Between blocks every Get uses its own read-only RabbitStore on the
// RootStore (the pattern of MoeingADS's parallel read benchmark), so
// readers run concurrently; while a block has staged writes, Gets must see
// them and use the block's RabbitStore under mu.
type Store struct {
	mads *moeingads.MoeingADS
	root *mstore.RootStore

	mu      sync.Mutex
	trunk   *mstore.TrunkStore
	rbt     *rabbit.RabbitStore // nil until the block's first write
	version int64

	proofMu    sync.Mutex
	shardRoots *[shards][32]byte // of the last commit, computed on demand

	settings map[string]string
}

// Open opens the MoeingADS in o.Dir/moeingads, creating it if that
// directory does not exist yet (MoeingADS decides between creating and
// recovering by whether its directory exists).
//
// Options (Extra): root_cache (off, the default as in MoeingADS's
// benchmarks, or on: the RootStore keeps written values in its
// write-through cache of up to 1M entries per shard).
func Open(o target.Options) (*Store, error) { return targetkit.OpenIn("moeingads", o.Dir, o, open) }

func open(o target.Options) (*Store, error) {
	eo, err := targetkit.TargetOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, cacheDesc, extra := eo.Sync, eo.CacheDesc, eo.Extra
	rootCache, err := extra.Choice("root_cache", "off", "off", "on")
	if err != nil {
		return nil, err
	}
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Dir, "moeingads")
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	if statErr != nil && !created {
		return nil, statErr
	}
	mads, err := moeingads.NewMoeingADS(dir, false, [][]byte{guardStart, guardEnd})
	if err != nil {
		return nil, err
	}
	var cacheable func([]byte) bool
	if rootCache == "on" {
		cacheable = func([]byte) bool { return true }
	}
	s := &Store{mads: mads, root: mstore.NewRootStore(mads, cacheable)}
	if created {
		s.writeWitnesses()
	}
	if h := mads.GetCurrHeight(); h > 0 {
		s.version = h
	}

	durability := "fsync per block: MoeingADS syncs its data files and RocksDB batch at every block's end"
	if !sync {
		durability = "fsync per block even in the async class: MoeingADS syncs its data files and RocksDB batch at every block's end and has no switch to turn that off"
	}
	rootCacheDesc := "off (as in MoeingADS's benchmarks)"
	if rootCache == "on" {
		rootCacheDesc = "on: write-through cache of every written key, up to 1M entries per shard"
	}
	s.settings = map[string]string{
		"layers":          "RootStore -> TrunkStore -> RabbitStore (one RabbitStore per block)",
		"backend":         "MoeingADS's own files: 8 shards of entry and twig-Merkle files; RocksDB 7.8.3 for metadata; an in-memory C++ B-tree indexing every key",
		"commit":          "per block: RabbitStore and TrunkStore write-back, then MoeingADS EndWrite (new entries appended, twig Merkle trees and shard roots updated)",
		"durability":      durability,
		"cache":           "MoeingADS's fixed 64 MiB RocksDB block cache (the study's cache size, " + cacheDesc + ", does not apply)",
		"root_cache":      rootCacheDesc,
		"history":         "off (no per-height index)",
		"pruning":         "none requested; MoeingADS compacts its entry files itself",
		"keys":            "any length: RabbitStore stores each under the first free 8-byte SHA-256-derived slot",
		"concurrent_gets": "a read-only RabbitStore per Get between blocks; Gets during a block with staged writes share its RabbitStore under a mutex",
		"proofs":          "MoeingADS's twig proof of the key's entry in its shard plus the 8 shard roots; 6 fixed witness entries, written at creation, give the roots of the inner shards",
	}
	return s, nil
}

// Get returns a copy of the value of key (staged in this block or
// committed), or kv.ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	var v []byte
	if s.rbt != nil { // no writer runs while readers do
		s.mu.Lock()
		v = s.rbt.Get(key)
		s.mu.Unlock()
	} else {
		r := rabbit.NewReadOnlyRabbitStore(s.root)
		v = r.Get(key)
		r.Close()
	}
	if v == nil {
		return nil, kv.ErrNotFound
	}
	return bytes.Clone(v), nil
}

// block returns the current block's RabbitStore, opening the block's
// TrunkStore and RabbitStore at its first write. Callers hold mu.
func (s *Store) block() *rabbit.RabbitStore {
	if s.rbt == nil {
		s.trunk = s.root.GetTrunkStore(trunkCacheHint).(*mstore.TrunkStore)
		r := rabbit.NewRabbitStore(s.trunk)
		s.rbt = &r
	}
	return s.rbt
}

// Set stages key = value (RabbitStore copies both).
func (s *Store) Set(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.block().Set(key, value)
	return nil
}

// Delete stages the removal of key; an absent key is no error.
func (s *Store) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.block().Delete(key)
	return nil
}

// Commit ends the block at height version and returns MoeingADS's root
// hash. A block without writes still runs MoeingADS's block update.
func (s *Store) Commit() ([]byte, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	version := s.version + 1
	s.root.SetHeight(version)
	if s.rbt != nil {
		s.rbt.Close() // releases its read lock on the RootStore
		s.rbt.WriteBack()
		s.trunk.Close(true)
		s.rbt, s.trunk = nil, nil
	} else {
		s.root.Update(func(mtypes.SetDeleter) {})
	}
	s.version = version
	s.proofMu.Lock()
	s.shardRoots = nil
	s.proofMu.Unlock()
	return s.root.GetRootHash(), version, nil
}

// Version is the height of the last commit (0 for a new store).
func (s *Store) Version() int64 { return s.version }

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close drops the staged writes of an uncommitted block and closes
// MoeingADS.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return nil
	}
	if s.rbt != nil {
		s.rbt.Close()
		s.trunk.Close(false)
		s.rbt, s.trunk = nil, nil
	}
	s.root.Close()
	s.root, s.mads = nil, nil
	return nil
}
