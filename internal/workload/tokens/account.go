package tokens

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"

	"storebench/internal/workload/gen"
)

// Native is the id of the native token (gas); fungible tokens are 1..Tokens.
const Native = 0

// AddrLen is the length of an address, the key of an account.
const AddrLen = 20

// Account is the state of one account. Entries are sorted by token id and
// never removed: a balance that reaches zero stays as an entry, so the
// tokens an account can send are always those it got at genesis.
type Account struct {
	Native  uint64
	Seq     uint64
	IDs     []uint8
	Amounts []uint64
}

// Find returns the index of token id in the entries, or -1.
func (a *Account) Find(id uint8) int {
	for i, x := range a.IDs {
		if x == id {
			return i
		}
		if x > id {
			break
		}
	}
	return -1
}

// Insert adds an entry for token id with amount (id must be absent) and
// returns its index.
func (a *Account) Insert(id uint8, amount uint64) int {
	i := sort.Search(len(a.IDs), func(i int) bool { return a.IDs[i] >= id })
	a.IDs = append(a.IDs, 0)
	a.Amounts = append(a.Amounts, 0)
	copy(a.IDs[i+1:], a.IDs[i:])
	copy(a.Amounts[i+1:], a.Amounts[i:])
	a.IDs[i], a.Amounts[i] = id, amount
	return i
}

// Encoding: native balance and sequence as 8 big-endian bytes each, the
// number of entries in one byte, then per entry the token id in one byte
// and the amount in 8 big-endian bytes. 17 + 9 bytes per token held: the
// compact binary form a chain would store.
const headerLen = 17

// Encode appends the account's encoding to dst[:0].
func (a *Account) Encode(dst []byte) []byte {
	dst = dst[:0]
	dst = binary.BigEndian.AppendUint64(dst, a.Native)
	dst = binary.BigEndian.AppendUint64(dst, a.Seq)
	dst = append(dst, uint8(len(a.IDs)))
	for i, id := range a.IDs {
		dst = append(dst, id)
		dst = binary.BigEndian.AppendUint64(dst, a.Amounts[i])
	}
	return dst
}

// Decode parses an account into a (reusing its slices), checking that the
// encoding is well formed: a store that returns garbage must not pass as
// an account with odd balances.
func (a *Account) Decode(b []byte, tokens int) error {
	if len(b) < headerLen {
		return fmt.Errorf("account value of %d bytes, shorter than its %d-byte header", len(b), headerLen)
	}
	a.Native = binary.BigEndian.Uint64(b)
	a.Seq = binary.BigEndian.Uint64(b[8:])
	n := int(b[16])
	if len(b) != headerLen+9*n {
		return fmt.Errorf("account value of %d bytes for %d token entries (want %d)", len(b), n, headerLen+9*n)
	}
	a.IDs, a.Amounts = a.IDs[:0], a.Amounts[:0]
	for i := 0; i < n; i++ {
		e := b[headerLen+9*i:]
		id := e[0]
		if id == Native || int(id) > tokens {
			return fmt.Errorf("token entry %d names token %d, outside 1..%d", i, id, tokens)
		}
		if i > 0 && id <= a.IDs[i-1] {
			return fmt.Errorf("token entries out of order (%d after %d)", id, a.IDs[i-1])
		}
		a.IDs = append(a.IDs, id)
		a.Amounts = append(a.Amounts, binary.BigEndian.Uint64(e[1:]))
	}
	return nil
}

// Tags separate the generator's streams.
const (
	tagAddr uint64 = iota + 100
	tagHoldings
	tagAmount
	tagNative
	tagSender
	tagReceiver
	tagToken
	tagTransfer
	tagOrder
)

// model holds what every phase derives accounts and transfers from: the
// seed, the number of accounts and the study's parameters. It is pure
// arithmetic: nothing about the dataset is kept in memory.
type model struct {
	seed     uint64
	n        uint64
	tokens   int
	maxTypes int
	// strides coprime with tokens: walking from any start by one of them
	// visits distinct tokens, so a holding set needs no rejection loop.
	strides []uint64
	// nativeBase is every account's genesis native balance floor: enough
	// gas for every transfer it could ever send, so a sender never runs
	// out of gas (and its sequence always counts its transfers).
	nativeBase uint64
	gas        uint64
	blockSize  uint64 // transfers per runtx block
}

// Genesis amounts are drawn below these bounds; sums over 1e9 accounts
// stay far from 2^64, so supplies are exact in uint64.
const (
	maxGenesisAmount = 1 << 32
	maxNativeExtra   = 1 << 30
)

func newModel(seed int64, n int64, p Params) *model {
	m := &model{seed: uint64(seed), n: uint64(n), tokens: p.Tokens, maxTypes: p.MaxTypes,
		gas: uint64(p.Gas), blockSize: uint64(p.Runtx.BlockSize)}
	for s := 1; s < max(p.Tokens, 2); s++ {
		if gcd(s, p.Tokens) == 1 {
			m.strides = append(m.strides, uint64(s))
		}
	}
	m.nativeBase = m.gas*uint64(p.Runtx.Blocks)*uint64(p.Runtx.BlockSize) + m.gas
	return m
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// address of account i: 20 bytes of a hash of (seed, i), like a real
// address; also the account's key.
func (m *model) address(dst []byte, i uint64) []byte {
	if cap(dst) < AddrLen {
		dst = make([]byte, AddrLen)
	}
	dst = dst[:AddrLen]
	x := gen.Mix(m.seed, tagAddr, i)
	binary.BigEndian.PutUint64(dst[0:], gen.SplitMix(x))
	binary.BigEndian.PutUint64(dst[8:], gen.SplitMix(x+1))
	binary.BigEndian.PutUint32(dst[16:], uint32(gen.SplitMix(x+2)))
	return dst
}

// holding is the k-th of the tokens account i holds at genesis (k below
// holdingCount(i)); the ids are distinct but not sorted.
func (m *model) holding(i uint64, k int) uint8 {
	h := gen.Mix(m.seed, tagHoldings, i)
	start := (h >> 8) % uint64(m.tokens)
	stride := m.strides[(h>>40)%uint64(len(m.strides))]
	return uint8(1 + (start+uint64(k)*stride)%uint64(m.tokens))
}

// holdingCount is how many fungible tokens account i holds at genesis:
// 1..maxTypes.
func (m *model) holdingCount(i uint64) int {
	return 1 + int(gen.Mix(m.seed, tagHoldings, i)%uint64(m.maxTypes))
}

// genesis fills a with account i's genesis state.
func (m *model) genesis(a *Account, i uint64) {
	a.Native = m.nativeBase + gen.Mix(m.seed, tagNative, i)%maxNativeExtra
	a.Seq = 0
	a.IDs, a.Amounts = a.IDs[:0], a.Amounts[:0]
	c := m.holdingCount(i)
	for k := 0; k < c; k++ {
		id := m.holding(i, k)
		a.Insert(id, 1+gen.Mix(m.seed, tagAmount, i, uint64(id))%(maxGenesisAmount-1))
	}
}

// transfer t (counted from the first transfer of runtx) draws its sender,
// receiver (another account), token (one of the sender's genesis tokens)
// and a random number the amount is cut from once the balances are known.
type transfer struct {
	sender, receiver uint64
	token            uint8
	draw             uint64
}

func (m *model) sender(t uint64) uint64 { return gen.Mix(m.seed, tagSender, t) % m.n }

func (m *model) transfer(t uint64) transfer {
	s := m.sender(t)
	r := gen.Mix(m.seed, tagReceiver, t) % (m.n - 1)
	if r >= s {
		r++ // uniform over the other accounts
	}
	k := int(gen.Mix(m.seed, tagToken, t) % uint64(m.holdingCount(s)))
	return transfer{sender: s, receiver: r, token: m.holding(s, k), draw: gen.Mix(m.seed, tagTransfer, t)}
}

// order is a permutation of 0..n-1 for reading accounts back in random
// order without holding a shuffled list: i -> (a*i + c) mod n with a
// coprime with n. (Keys are hashes, so even index order is random key
// order; the permutation also decouples reads from write order.)
type order struct{ a, c, n uint64 }

func (m *model) order() order {
	o := order{n: m.n, c: gen.Mix(m.seed, tagOrder, 1) % m.n}
	o.a = gen.Mix(m.seed, tagOrder, 2)%m.n | 1
	for gcd64(o.a, m.n) != 1 {
		o.a = (o.a + 2) % m.n
		if o.a == 0 {
			o.a = 1
		}
	}
	return o
}

func (o order) at(i uint64) uint64 {
	// a, i < n <= 1e15: a*i may exceed 64 bits, so reduce with 128-bit
	// arithmetic.
	hi, lo := bits.Mul64(o.a, i)
	return (bits.Rem64(hi, lo, o.n) + o.c) % o.n
}

func gcd64(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
