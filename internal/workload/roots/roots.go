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

// The step's Facts keys the roots go to: Root is the hex root hash after
// the step's last block, Digest the hex SHA-256 over every block's root
// in commit order; both absent for stores without roots (package ads).
// Equal digests on two runs mean equal roots after every block.
const (
	Root   = "root"
	Digest = "roots_digest"
)

// Fill sets the step's root and roots digest (left absent without roots).
func (c *Chain) Fill(st *results.Step) {
	if st == nil || c.h == nil {
		return
	}
	if st.Facts == nil {
		st.Facts = map[string]string{}
	}
	st.Facts[Root] = hex.EncodeToString(c.last)
	st.Facts[Digest] = hex.EncodeToString(c.h.Sum(nil))
}

// Cell is a report cell of the root after a step's last block (first 16
// hex digits; equal roots mean equal state).
func Cell(s *results.Step) string {
	switch {
	case s == nil:
		return "—"
	case s.Facts[Root] == "":
		return "none (plain engine)"
	case len(s.Facts[Root]) > 16:
		return "`" + s.Facts[Root][:16] + "`"
	}
	return "`" + s.Facts[Root] + "`"
}
