//go:build moeingads && cgo

package moeingads

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/smartbch/moeingads/datatree"
	"github.com/smartbch/moeingads/store/rabbit"
	mtypes "github.com/smartbch/moeingads/store/types"
	adstypes "github.com/smartbch/moeingads/types"

	"storebench/internal/kv"
)

// shards is MoeingADS's shard count; its root hash is a 3-level Merkle
// tree over the shards' roots.
const shards = adstypes.ShardCount

// A proof needs every shard's root, but MoeingADS exposes a shard root only
// inside the proof of an entry of that shard. The guards are entries of
// shards 0 and 7; witness entries, one per inner shard, written once when
// the store is created, give the others. Their keys start with 0x01, below
// the range RabbitStore uses, and end with the byte that selects the shard.
func witnessKey(shard int) []byte {
	switch shard {
	case 0:
		return guardStart
	case shards - 1:
		return guardEnd
	}
	return []byte{0x01, 's', 'b', 'w', 0, 0, 0, byte(shard * (256 / shards))}
}

// writeWitnesses writes the witness entries as block 0 of a new store.
func (s *Store) writeWitnesses() {
	s.root.SetHeight(0)
	for i := 1; i < shards-1; i++ {
		s.root.PrepareForUpdate(witnessKey(i))
	}
	s.root.Update(func(db mtypes.SetDeleter) {
		for i := 1; i < shards-1; i++ {
			db.Set(witnessKey(i), []byte("storebench shard witness"))
		}
	})
}

// GetWithProof returns the committed value of key and a proof: the
// MoeingADS entry holding it (RabbitStore's record of key and value), the
// entry's twig proof up to its shard's root, and the 8 shard roots.
func (s *Store) GetWithProof(key []byte) (value, proof []byte, err error) {
	r := rabbit.NewReadOnlyRabbitStore(s.root) // holds off writers
	defer r.Close()
	path, ok := r.GetShortKeyPath(key)
	if !ok {
		return nil, nil, kv.ErrNotFound
	}
	value = bytes.Clone(r.Get(key))
	short := path[len(path)-1]
	entry, path2, err := s.mads.GetProof(short[:])
	if err != nil {
		return nil, nil, fmt.Errorf("moeingads: proof of %x: %w", key, err)
	}
	roots, err := s.rootsOfShards()
	if err != nil {
		return nil, nil, err
	}
	proof = binary.AppendUvarint(proof, uint64(len(entry)))
	proof = append(proof, entry...)
	proof = binary.AppendUvarint(proof, uint64(len(path2)))
	proof = append(proof, path2...)
	for _, r := range roots {
		proof = append(proof, r[:]...)
	}
	return value, proof, nil
}

// rootsOfShards returns the shard roots of the last commit, read once per
// commit from the proofs of the guard and witness entries.
func (s *Store) rootsOfShards() ([shards][32]byte, error) {
	s.proofMu.Lock()
	defer s.proofMu.Unlock()
	if s.shardRoots != nil {
		return *s.shardRoots, nil
	}
	var roots [shards][32]byte
	for i := range roots {
		_, bz, err := s.mads.GetProof(witnessKey(i))
		if err != nil {
			return roots, fmt.Errorf("moeingads: proof of the witness of shard %d: %w", i, err)
		}
		pp, err := datatree.BytesToProofPath(bz)
		if err != nil {
			return roots, fmt.Errorf("moeingads: proof of the witness of shard %d: %w", i, err)
		}
		roots[i] = pp.Root
	}
	s.shardRoots = &roots
	return roots, nil
}

// combineRoots computes MoeingADS's root hash from the shard roots: SHA-256
// over pairs, three levels up.
func combineRoots(level [][32]byte) [32]byte {
	for len(level) > 1 {
		next := make([][32]byte, len(level)/2)
		for i := range next {
			next[i] = sha256.Sum256(append(bytes.Clone(level[2*i][:]), level[2*i+1][:]...))
		}
		level = next
	}
	return level[0]
}

// VerifyProof checks that proof shows key = value in the state whose root
// is root: the shard roots combine to root, the entry's twig proof leads
// to its shard's root, the entry is active (its bit is set in the twig's
// active-bits tree covered by the same proof), and the entry records key
// and value.
func (s *Store) VerifyProof(root, key, value, proof []byte) (err error) {
	// MoeingADS's decoders index into the bytes they are given; a
	// malformed proof must fail here, not take the process down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("moeingads: malformed proof: %v", r)
		}
	}()
	entryBz, rest, err := cut(proof)
	if err != nil {
		return err
	}
	pathBz, rest, err := cut(rest)
	if err != nil {
		return err
	}
	if len(rest) != shards*32 {
		return fmt.Errorf("moeingads: proof ends with %d bytes of shard roots, want %d", len(rest), shards*32)
	}
	roots := make([][32]byte, shards)
	for i := range roots {
		copy(roots[i][:], rest[32*i:])
	}
	if got := combineRoots(roots); !bytes.Equal(got[:], root) {
		return errors.New("moeingads: the shard roots do not combine to the root")
	}
	pp, err := datatree.BytesToProofPath(pathBz)
	if err != nil {
		return fmt.Errorf("moeingads: %w", err)
	}
	if pp.LeftOfTwig[0].SelfHash != sha256.Sum256(entryBz) {
		return errors.New("moeingads: the proof is not about this entry")
	}
	if err := pp.Check(true); err != nil { // true: derive the inner hashes
		return fmt.Errorf("moeingads: twig proof: %w", err)
	}
	entry := datatree.EntryFromRawBytes(entryBz)
	if entry.SerialNum != pp.SerialNum {
		return errors.New("moeingads: the entry is not at the proven position")
	}
	if pp.Root != roots[adstypes.GetShardID(entry.Key)] {
		return errors.New("moeingads: the twig proof does not end at its shard's root")
	}
	bit := int(pp.SerialNum & datatree.TwigMask % 256)
	if pp.RightOfTwig[0].SelfHash[bit/8]&(1<<(bit%8)) == 0 {
		return errors.New("moeingads: the entry is no longer active")
	}
	cv := rabbit.BytesToCachedValue(entry.Value)
	if cv == nil || cv.IsEmpty() {
		return errors.New("moeingads: the entry holds no value")
	}
	if !bytes.Equal(cv.GetKey(), key) {
		return errors.New("moeingads: the entry is another key's")
	}
	if !bytes.Equal(cv.GetValue(), value) {
		return fmt.Errorf("moeingads: proof shows value %x, not %x", cv.GetValue(), value)
	}
	return nil
}

// cut splits a uvarint-length-prefixed field off b.
func cut(b []byte) (field, rest []byte, err error) {
	n, used := binary.Uvarint(b)
	if used <= 0 || n > uint64(len(b)-used) {
		return nil, nil, errors.New("moeingads: malformed proof")
	}
	return b[used : used+int(n)], b[used+int(n):], nil
}
