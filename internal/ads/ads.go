// Package ads holds the contract of authenticated data structures (ADS):
// stores whose whole state is summarised by a root hash after every block,
// like Ethereum's Merkle Patricia Trie, Tendermint's IAVL and MoeingADS
// (the successor of OnvaKV). Workloads of seed 001 (studies ads-rw and
// tokens) drive an ads.Store; a plain kv.Store runs the same workloads
// through FromKV, with one atomic batch per block and no root, which is
// the seed's GoLevelDB baseline.
package ads

import (
	"io"
	"sync"

	"storebench/internal/kv"
	"storebench/internal/target"
)

// Provides is what every authenticated store offers a workload: it is
// written only in committed blocks (an atomic batch each) and returns a
// root after each. Workloads say what they require (target.Caps) and the
// coordinator matches the two; no list names the workloads an ADS cannot
// run.
var Provides = target.Caps{target.Batch, target.AuthRoots}

// Store is an authenticated key-value store written in blocks.
//
// Writes (Set, Delete) are staged in the current block; Commit ends the
// block, persists it (durably in sync mode) and returns the root hash of
// the whole state and the block's version (1 for the first commit after
// creating the store). Get sees the staged writes of the current block as
// well as everything committed: the token workload reads an account it
// changed earlier in the same block.
//
// Set, Delete and Commit are called from one goroutine. Get may be called
// from many goroutines at once, but only while no Set/Delete/Commit is in
// progress (the read phases run between blocks).
type Store interface {
	io.Closer
	// Get returns a copy of the value of key, or kv.ErrNotFound.
	Get(key []byte) ([]byte, error)
	Set(key, value []byte) error
	Delete(key []byte) error
	// Commit ends the current block. Root is nil for stores without
	// authentication (FromKV).
	Commit() (root []byte, version int64, err error)
}

// Prover is an optional capability: read a value with a proof of
// membership against the root of the last commit, and check such a proof.
type Prover interface {
	GetWithProof(key []byte) (value, proof []byte, err error)
	VerifyProof(root, key, value, proof []byte) error
}

// Versioned is an optional capability: the version of the last commit,
// e.g. after reopening a store (0 for a new store).
type Versioned interface {
	Version() int64
}

// Authenticated reports whether s returns roots (FromKV stores do not).
func Authenticated(s Store) bool {
	_, plain := s.(*kvBlocks)
	return !plain
}

// As returns h as an ads.Store: h itself when it is one, a block adapter
// when it is a kv.Store, and false otherwise.
func As(h io.Closer) (Store, bool) {
	if s, ok := h.(Store); ok {
		return s, true
	}
	if s, ok := h.(kv.Store); ok {
		return FromKV(s), true
	}
	return nil, false
}

// FromKV presents a plain key-value store as an unauthenticated ads.Store:
// a block is one atomic batch, committed (durably in sync mode) by Commit.
// Reads of keys staged in the current block are answered from the block's
// own writes, so the memory used is bounded by one block.
func FromKV(s kv.Store) Store {
	return &kvBlocks{s: s, staged: map[string]stagedValue{}}
}

type stagedValue struct {
	v       []byte
	deleted bool
}

type kvBlocks struct {
	s       kv.Store
	mu      sync.Mutex // guards b and staged against a concurrent Get
	b       kv.Batch
	staged  map[string]stagedValue
	version int64
}

func (k *kvBlocks) Get(key []byte) ([]byte, error) {
	if len(k.staged) > 0 { // no writer runs concurrently with readers
		k.mu.Lock()
		sv, ok := k.staged[string(key)]
		k.mu.Unlock()
		if ok {
			if sv.deleted {
				return nil, kv.ErrNotFound
			}
			return append([]byte(nil), sv.v...), nil
		}
	}
	return k.s.Get(key)
}

func (k *kvBlocks) Set(key, value []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b == nil {
		k.b = k.s.NewBatch()
	}
	v := append([]byte(nil), value...)
	k.b.Put(key, v)
	k.staged[string(key)] = stagedValue{v: v}
	return nil
}

func (k *kvBlocks) Delete(key []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b == nil {
		k.b = k.s.NewBatch()
	}
	k.b.Delete(key)
	k.staged[string(key)] = stagedValue{deleted: true}
	return nil
}

func (k *kvBlocks) Commit() ([]byte, int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b != nil {
		if err := k.b.Commit(); err != nil {
			return nil, k.version, err
		}
		k.b = nil
		clear(k.staged)
	}
	k.version++
	return nil, k.version, nil
}

func (k *kvBlocks) Version() int64 { return k.version }

func (k *kvBlocks) Close() error { return k.s.Close() }

// Settings passes the engine's settings through for the report.
func (k *kvBlocks) Settings() map[string]string {
	if d, ok := k.s.(kv.Describer); ok {
		return d.Settings()
	}
	return nil
}

// Unwrap returns the underlying kv.Store.
func (k *kvBlocks) Unwrap() kv.Store { return k.s }
