// Package roots records the root hashes an authenticated store returns
// block after block, for the results (the last root and a digest of all
// of them in order) and for the determinism tests (every root).
package roots

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"

	"storebench/internal/results"
)

// Chain accumulates block roots in commit order. The zero value is ready
// and keeps only the digest and the last root, so memory stays flat
// however many blocks a step commits.
type Chain struct {
	// Keep, when set, also keeps every root (tests compare them block by
	// block).
	Keep bool
	All  [][]byte

	h      hash.Hash
	last   []byte
	blocks int64
}

// Add records the root of the next block; nil roots (stores without
// authentication) are ignored.
func (c *Chain) Add(root []byte) {
	if root == nil {
		return
	}
	if c.h == nil {
		c.h = sha256.New()
	}
	c.h.Write(root)
	c.last = append(c.last[:0], root...)
	c.blocks++
	if c.Keep {
		c.All = append(c.All, append([]byte(nil), root...))
	}
}

// Blocks is the number of roots recorded.
func (c *Chain) Blocks() int64 { return c.blocks }

// Fill sets the step's Root and RootsDigest (left empty without roots).
func (c *Chain) Fill(st *results.Step) {
	if st == nil || c.h == nil {
		return
	}
	st.Root = hex.EncodeToString(c.last)
	st.RootsDigest = hex.EncodeToString(c.h.Sum(nil))
}
