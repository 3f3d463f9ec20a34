package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"storebench/internal/workload/gen"
)

// A transaction is generated from (seed, chain, index) alone, so any reader
// can regenerate exactly what was written and compare byte for byte, and
// the harness never holds the dataset in memory.
//
// Encoding (big-endian), 117 bytes of header then the payload:
//
//	[0:32)    address: SHA-256(seed, chain, index), like a transaction hash
//	[32:64)   previous address in the chain (zero for the genesis)
//	[64:96)   genesis address of the chain
//	[96:104)  index in the chain
//	[104:112) timestamp, Unix milliseconds
//	[112]     type
//	[113:117) payload length
//	[117:)    payload: pseudo-random bytes from (seed, chain, index)
const headerLen = 117

// Key prefixes of the layout shared by every KV target (docs/ledger.md):
//
//	't' + address                 -> transaction
//	'c' + genesis + index (8, BE) -> address   (a chain, in order, by scan)
//	'b' + address                 -> balance (8 bytes, BE)
const (
	prefixTx      = 't'
	prefixChain   = 'c'
	prefixBalance = 'b'
)

// Chain ids: the main chain of each ladder step, sample chains for whole-
// chain selects, one chain per stress writer, and the balance view.
const (
	mainChain    = 0
	stressChain0 = 100000
	balanceChain = 200000
)

type txGen struct {
	seed    uint64
	payload int
}

// address of transaction index of chain.
func (g txGen) address(dst []byte, chain, index uint64) []byte {
	var in [24]byte
	binary.BigEndian.PutUint64(in[0:], g.seed)
	binary.BigEndian.PutUint64(in[8:], chain)
	binary.BigEndian.PutUint64(in[16:], index)
	sum := sha256.Sum256(in[:])
	return append(dst[:0], sum[:]...)
}

// encode writes transaction (chain, index) into dst and returns it. genesis
// may be passed in (it is constant per chain) to save a hash.
func (g txGen) encode(dst []byte, chain, index uint64, genesis []byte) []byte {
	n := headerLen + g.payload
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	b := dst[:n]
	g.address(b[0:0:32], chain, index)
	if index == 0 {
		clear(b[32:64])
	} else {
		g.address(b[32:32:64], chain, index-1)
	}
	if genesis == nil {
		g.address(b[64:64:96], chain, 0)
	} else {
		copy(b[64:96], genesis)
	}
	binary.BigEndian.PutUint64(b[96:], index)
	binary.BigEndian.PutUint64(b[104:], 1_600_000_000_000+index*1000)
	b[112] = byte(index % 4)
	binary.BigEndian.PutUint32(b[113:], uint32(g.payload))
	fill(b[headerLen:], gen.Mix(g.seed, chain, index))
	return b
}

// fill writes a pseudo-random stream (a xorshift64* sequence) into b.
func fill(b []byte, s uint64) {
	if s == 0 {
		s = 1
	}
	for len(b) >= 8 {
		s ^= s >> 12
		s ^= s << 25
		s ^= s >> 27
		binary.LittleEndian.PutUint64(b, s*0x2545f4914f6cdd1d)
		b = b[8:]
	}
	if len(b) > 0 {
		var t [8]byte
		s ^= s >> 12
		s ^= s << 25
		s ^= s >> 27
		binary.LittleEndian.PutUint64(t[:], s*0x2545f4914f6cdd1d)
		copy(b, t[:])
	}
}

// txKeyLen is the length of a transaction's key (txKey).
const txKeyLen = 1 + sha256.Size

func txKey(dst, addr []byte) []byte {
	dst = append(dst[:0], prefixTx)
	return append(dst, addr...)
}

func chainKey(dst, genesis []byte, index uint64) []byte {
	dst = append(dst[:0], prefixChain)
	dst = append(dst, genesis...)
	return binary.BigEndian.AppendUint64(dst, index)
}

func balanceKey(dst, addr []byte) []byte {
	dst = append(dst[:0], prefixBalance)
	return append(dst, addr...)
}

// balanceOf is the deterministic balance of view address i.
func balanceOf(seed, i uint64) uint64 { return gen.Mix(seed, balanceChain, i) % 1_000_000_000_000 }
