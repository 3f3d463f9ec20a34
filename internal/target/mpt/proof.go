package mpt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
)

// proofNodes collects the nodes trie.Prove writes, each as a uvarint
// length and the node's RLP bytes. Their hashes are not kept: the
// verifier computes them.
type proofNodes struct {
	buf []byte
}

func (p *proofNodes) Put(_, node []byte) error {
	p.buf = binary.AppendUvarint(p.buf, uint64(len(node)))
	p.buf = append(p.buf, node...)
	return nil
}

func (p *proofNodes) Delete([]byte) error {
	return errors.New("mpt: a proof is append-only")
}

// decodeProof indexes the nodes of a proof by their Keccak-256 hashes,
// which is how trie.VerifyProof looks them up.
func decodeProof(proof []byte) (*memorydb.Database, error) {
	db := memorydb.New()
	for len(proof) > 0 {
		n, used := binary.Uvarint(proof)
		if used <= 0 || n > uint64(len(proof)-used) {
			return nil, errors.New("mpt: malformed proof")
		}
		node := proof[used : used+int(n)]
		if err := db.Put(crypto.Keccak256(node), node); err != nil {
			return nil, fmt.Errorf("mpt: proof: %w", err)
		}
		proof = proof[used+int(n):]
	}
	return db, nil
}
