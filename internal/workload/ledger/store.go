package ledger

import (
	"context"
	"encoding/binary"
	"fmt"

	"storebench/internal/kv"
)

// Tx is one transaction, decoded.
type Tx struct {
	Address   []byte // 32 bytes: a hash of (seed, chain, index)
	Prev      []byte // 32 bytes, zero for a genesis transaction
	Genesis   []byte // 32 bytes: address of the chain's first transaction
	Index     uint64 // position in the chain
	Timestamp int64  // Unix milliseconds
	Type      uint8
	Payload   []byte
}

// Store is what the ledger workload needs from a target. Each server
// target implements it with its idiomatic layout (see docs/targets.md);
// embedded key-value engines get KVStore, one layout for all of them.
//
// Returned transactions are owned by the caller. Writes are durable on
// return when the study's durability class is sync.
type Store interface {
	// PutTxs writes transactions so that each can be found by address and
	// each chain listed in index order; atomically where the store can.
	PutTxs(ctx context.Context, txs []Tx) error
	// GetTx returns the transaction with this address, or an error
	// wrapping kv.ErrNotFound.
	GetTx(ctx context.Context, address []byte) (Tx, error)
	// Chain calls fn for each transaction of the chain that starts at
	// genesis, in index order, until fn returns false.
	Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error
	// PutBalances writes balances of the view (addrs[i] has amounts[i]).
	PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error
	// GetBalance returns one balance, or an error wrapping kv.ErrNotFound.
	GetBalance(ctx context.Context, address []byte) (uint64, error)
}

// Encode appends the canonical encoding of tx to dst (see tx.go): what
// the workload compares, byte for byte, with what it wrote.
func Encode(dst []byte, tx Tx) []byte {
	n := headerLen + len(tx.Payload)
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	b := dst[:n]
	copy(b[0:32], tx.Address)
	copy(b[32:64], tx.Prev)
	copy(b[64:96], tx.Genesis)
	binary.BigEndian.PutUint64(b[96:], tx.Index)
	binary.BigEndian.PutUint64(b[104:], uint64(tx.Timestamp))
	b[112] = tx.Type
	binary.BigEndian.PutUint32(b[113:], uint32(len(tx.Payload)))
	copy(b[headerLen:], tx.Payload)
	return b
}

// Decode parses a canonical encoding. The Tx aliases b.
func Decode(b []byte) (Tx, error) {
	if len(b) < headerLen {
		return Tx{}, fmt.Errorf("transaction of %d bytes is shorter than its %d-byte header", len(b), headerLen)
	}
	n := int(binary.BigEndian.Uint32(b[113:]))
	if len(b) != headerLen+n {
		return Tx{}, fmt.Errorf("transaction of %d bytes declares a %d-byte payload", len(b), n)
	}
	return Tx{
		Address: b[0:32], Prev: b[32:64], Genesis: b[64:96],
		Index:     binary.BigEndian.Uint64(b[96:]),
		Timestamp: int64(binary.BigEndian.Uint64(b[104:])),
		Type:      b[112],
		Payload:   b[headerLen:],
	}, nil
}

// KVStore is the ledger layout on any ordered key-value store:
//
//	't' + address                 -> canonical transaction encoding
//	'c' + genesis + index (8, BE) -> address   (a chain, in order, by scan)
//	'b' + address                 -> balance (8 bytes, BE)
//
// With NoChainIndex it writes no 'c' keys (chains.index false) and Chain
// fails.
type KVStore struct {
	KV           kv.Store
	NoChainIndex bool
}

func (s KVStore) withoutChainIndex() Store { s.NoChainIndex = true; return s }

func (s KVStore) PutTxs(_ context.Context, txs []Tx) error {
	b := s.KV.NewBatch()
	var buf, key []byte
	for _, tx := range txs {
		buf = Encode(buf, tx)
		key = txKey(key, tx.Address)
		b.Put(key, buf)
		if s.NoChainIndex {
			continue
		}
		key = chainKey(key, tx.Genesis, tx.Index)
		b.Put(key, tx.Address)
	}
	return b.Commit()
}

func (s KVStore) GetTx(_ context.Context, address []byte) (Tx, error) {
	v, err := s.KV.Get(txKey(nil, address))
	if err != nil {
		return Tx{}, err
	}
	return Decode(v)
}

func (s KVStore) Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error {
	if s.NoChainIndex {
		return errNoChainIndex
	}
	lower := append([]byte{prefixChain}, genesis...)
	var failure error
	err := s.KV.Scan(lower, kv.PrefixEnd(lower), func(k, v []byte) bool {
		tx, err := s.GetTx(ctx, v)
		if err != nil {
			failure = fmt.Errorf("chain entry %x: %w", k[33:], err)
			return false
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	return failure
}

func (s KVStore) PutBalances(_ context.Context, addrs [][]byte, amounts []uint64) error {
	b := s.KV.NewBatch()
	var key []byte
	var val [8]byte
	for i, a := range addrs {
		key = balanceKey(key, a)
		binary.BigEndian.PutUint64(val[:], amounts[i])
		b.Put(key, val[:])
	}
	return b.Commit()
}

func (s KVStore) GetBalance(_ context.Context, address []byte) (uint64, error) {
	var out uint64
	err := kv.View(s.KV, balanceKey(nil, address), func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("balance of %d bytes", len(v))
		}
		out = binary.BigEndian.Uint64(v)
		return nil
	})
	return out, err
}
