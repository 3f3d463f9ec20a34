// Package iavl is the storebench target for IAVL, the versioned AVL+ tree
// of Tendermint/Cosmos, on cosmos-db's GoLevelDB backend: the IAVL setup of
// seed 001. It is an ads.Store: one SaveVersion per block, returning the
// tree's root hash.
package iavl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"

	"cosmossdk.io/log"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/cosmos/iavl"
	idb "github.com/cosmos/iavl/db"
	ics23 "github.com/cosmos/ics23/go"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// Module versions in go.mod (a test in package all checks that they
// agree).
const (
	moduleVersion   = "v1.2.0"
	cosmosDBVersion = "v1.0.0"
)

var optionNames = []string{"node_cache_nodes", "fast_storage", "write_buffer_bytes"}

// defaultNodeCache is the Cosmos SDK's default iavl-cache-size: IAVL has
// no default of its own (the size is an argument), and without a node
// cache every read walks the tree through LevelDB.
const defaultNodeCache = 781250

func init() {
	target.RegisterEmbedded(target.Info{
		Name:        "iavl",
		Title:       "IAVL",
		Kind:        "pure-go",
		Version:     "cosmos/iavl " + moduleVersion + " (cosmos-db " + cosmosDBVersion + ")",
		OptionNames: optionNames,
		Provides:    ads.Provides,
		Open:        func(o target.Options) (io.Closer, error) { return Open(o) },
	})
	// iavl-nofast is IAVL as seed 001 ran it (tendermint/iavl of 2020,
	// before fast storage came in v0.19): the same tree with fast_storage
	// false by default, so every read walks the tree. A target of its own,
	// so one study runs it beside iavl (one data directory each).
	target.RegisterEmbedded(target.Info{
		Name:        "iavl-nofast",
		Title:       "IAVL, no fast storage (the seed's)",
		Kind:        "pure-go",
		Version:     "cosmos/iavl " + moduleVersion + " (cosmos-db " + cosmosDBVersion + "), fast_storage=false",
		OptionNames: optionNames,
		Provides:    ads.Provides,
		Open:        func(o target.Options) (io.Closer, error) { return Open(NoFast(o)) },
	})
}

// NoFast is o with fast_storage=false unless o sets it: the options of
// the iavl-nofast target.
func NoFast(o target.Options) target.Options {
	extra := map[string]string{"fast_storage": "false"}
	for k, v := range o.Extra {
		extra[k] = v
	}
	o.Extra = extra
	return o
}

// Store is an open IAVL tree.
//
// The mutable tree holds the committed state and the block's staged
// writes. Between blocks readers use an immutable tree of the last saved
// version, which IAVL documents as safe for concurrent access; while a
// block has staged writes, Gets must see them and read the mutable tree
// under mu.
type Store struct {
	db   dbm.DB
	tree *iavl.MutableTree
	dir  string // LevelDB directory, for Sync

	mu    sync.Mutex
	saved *iavl.ImmutableTree
	dirty bool

	settings map[string]string
}

// Open opens or creates the tree in o.Dir and loads its latest version.
//
// Options (Extra): node_cache_nodes (IAVL's node cache, in nodes; default
// 781250, the Cosmos SDK default), fast_storage (IAVL's key -> value
// index for reads of the latest version: true, the Cosmos SDK default, or
// false), write_buffer_bytes (LevelDB memtable, default 4 MiB).
func Open(o target.Options) (*Store, error) { return targetkit.OpenIn("iavl", o.Dir, o, open) }

func open(o target.Options) (*Store, error) {
	eo, err := targetkit.TargetOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, cacheBytes, cacheDesc, extra := eo.Sync, eo.CacheBytes, eo.CacheDesc, eo.Extra
	nodeCache, err := extra.Int("node_cache_nodes", defaultNodeCache)
	if err != nil {
		return nil, err
	}
	if nodeCache < 0 {
		return nil, fmt.Errorf("option node_cache_nodes: %d is negative", nodeCache)
	}
	fast, err := extra.Choice("fast_storage", "true", "true", "false")
	if err != nil {
		return nil, err
	}
	writeBuffer, err := extra.Bytes("write_buffer_bytes", int64(opt.DefaultWriteBuffer))
	if err != nil {
		return nil, err
	}
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}
	// cosmos-db's GoLevelDB with its own default (a 10 bits/key Bloom
	// filter) plus the study's cache and memtable sizes.
	db, err := dbm.NewGoLevelDBWithOpts("iavl", o.Dir, &opt.Options{
		Filter:             filter.NewBloomFilter(10),
		BlockCacheCapacity: int(cacheBytes),
		WriteBuffer:        int(writeBuffer),
	})
	if err != nil {
		return nil, err
	}
	tree := iavl.NewMutableTree(idb.NewWrapper(db), nodeCache, fast == "false", log.NewNopLogger(), iavl.SyncOption(sync))
	s := &Store{db: db, tree: tree, dir: filepath.Join(o.Dir, "iavl.db")}
	if _, err := tree.Load(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("loading the latest version: %w", err)
	}
	if err := s.snapshot(); err != nil {
		_ = s.Close()
		return nil, err
	}
	durability := "no fsync (async): IAVL writes each block's batch without sync"
	if sync {
		durability = "fsync per block: IAVL's Sync option writes each block's last batch with sync"
	}
	fastDesc := "on: a key -> value index for reads of the latest version (Cosmos SDK default)"
	if fast == "false" {
		fastDesc = "off: every read walks the tree"
	}
	s.settings = map[string]string{
		"backend":         "cosmos-db GoLevelDB (syndtr/goleveldb), as in the seed",
		"commit":          "per block: MutableTree.SaveVersion (new nodes, fast-index entries and the version's root written in batches)",
		"durability":      durability,
		"pruning":         "none: every version stays on disk",
		"cache":           cacheDesc + " LevelDB block cache",
		"node_cache":      strconv.Itoa(nodeCache) + " nodes" + map[bool]string{true: " (Cosmos SDK default)", false: ""}[nodeCache == defaultNodeCache],
		"fast_storage":    fastDesc,
		"memtable":        targetkit.FormatBytes(writeBuffer),
		"bloom_filter":    "10 bits/key (cosmos-db default)",
		"compression":     "snappy (goleveldb default)",
		"concurrent_gets": "an ImmutableTree of the last version between blocks; Gets during a block with staged writes share the MutableTree under a mutex",
		"proofs":          "ICS-23 membership proofs (IavlSpec)",
	}
	return s, nil
}

// snapshot opens the readers' tree at the last saved version (none in a
// new or emptied store, which IAVL cannot open as an ImmutableTree: saved
// stays nil and reads find nothing).
func (s *Store) snapshot() error {
	if s.tree.Version() == 0 || s.tree.IsEmpty() {
		s.saved, s.dirty = nil, false
		return nil
	}
	saved, err := s.tree.GetImmutable(s.tree.Version())
	if err != nil {
		return fmt.Errorf("opening version %d for readers: %w", s.tree.Version(), err)
	}
	s.saved, s.dirty = saved, false
	return nil
}

// Get returns a copy of the value of key (staged in this block or
// committed), or kv.ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	var v []byte
	var err error
	if s.dirty { // no writer runs while readers do
		s.mu.Lock()
		v, err = s.tree.Get(key)
		s.mu.Unlock()
	} else if s.saved != nil {
		v, err = s.saved.Get(key)
	}
	if err != nil {
		return nil, fmt.Errorf("iavl: get: %w", err)
	}
	if v == nil {
		return nil, kv.ErrNotFound
	}
	return bytes.Clone(v), nil
}

// Set stages key = value; IAVL keeps both slices, so it gets copies.
func (s *Store) Set(key, value []byte) error {
	if value == nil {
		value = []byte{} // IAVL refuses nil values
	}
	return targetkit.Stage(&s.mu, &s.dirty, "iavl: set", func() error {
		_, err := s.tree.Set(bytes.Clone(key), bytes.Clone(value))
		return err
	})
}

// Delete stages the removal of key; an absent key is no error.
func (s *Store) Delete(key []byte) error {
	return targetkit.Stage(&s.mu, &s.dirty, "iavl: delete", func() error {
		_, _, err := s.tree.Remove(key)
		return err
	})
}

// Commit saves the block as a new version and returns its root hash.
func (s *Store) Commit() ([]byte, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	root, version, err := s.tree.SaveVersion()
	if err != nil {
		return nil, s.tree.Version(), fmt.Errorf("iavl: save version %d: %w", version, err)
	}
	if err := s.snapshot(); err != nil {
		return nil, version, fmt.Errorf("iavl: after version %d: %w", version, err)
	}
	return bytes.Clone(root), version, nil
}

// FastStorage says whether reads of the latest version go through IAVL's
// fast key -> value index (false: they walk the tree, as in the seed).
func (s *Store) FastStorage() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved == nil {
		return false, nil
	}
	return s.saved.IsFastCacheEnabled()
}

// Version is the last saved version (0 for a new store).
func (s *Store) Version() int64 { return s.tree.Version() }

// Sync makes every saved version durable (the worker calls it before
// measuring disk use): it fsyncs LevelDB's journals.
func (s *Store) Sync() error {
	return targetkit.Wrap("iavl: sync", targetkit.SyncFiles(s.dir, ".log"))
}

// GetWithProof returns the value of key in the last saved version with an
// ICS-23 membership proof, protobuf-encoded.
func (s *Store) GetWithProof(key []byte) (value, proof []byte, err error) {
	if s.saved == nil {
		return nil, nil, kv.ErrNotFound
	}
	v, err := s.saved.Get(key)
	if err != nil {
		return nil, nil, fmt.Errorf("iavl: get with proof: %w", err)
	}
	if v == nil {
		return nil, nil, kv.ErrNotFound
	}
	p, err := s.saved.GetMembershipProof(key)
	if err != nil {
		return nil, nil, fmt.Errorf("iavl: membership proof: %w", err)
	}
	bz, err := p.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("iavl: encoding the proof: %w", err)
	}
	return bytes.Clone(v), bz, nil
}

// VerifyProof checks an ICS-23 membership proof of key = value against
// root with IAVL's proof spec.
func (s *Store) VerifyProof(root, key, value, proof []byte) error {
	var p ics23.CommitmentProof
	if err := p.Unmarshal(proof); err != nil {
		return fmt.Errorf("iavl: decoding the proof: %w", err)
	}
	if !ics23.VerifyMembership(ics23.IavlSpec, root, &p, key, value) {
		return errors.New("iavl: proof does not verify")
	}
	return nil
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the tree and LevelDB; staged writes of an uncommitted block
// are dropped.
func (s *Store) Close() error {
	return targetkit.Wrap("iavl: close", targetkit.FirstError(targetkit.Release(&s.tree), targetkit.Release(&s.db)))
}
