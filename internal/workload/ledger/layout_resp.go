package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
)

// The ledger layout: tx:<addr> strings, chain:<genesis> sorted sets and
// bal:<addr> decimal strings, and the Store methods.

const (
	// chainPage is how many chain members one ZRANGE + MGET round reads.
	chainPage = 256
	// encodedHeader is the size of a canonical transaction less its
	// payload (Encode); it only sizes buffers.
	encodedHeader = 117
)

// respStore is the ledger layout on a RESP target (conn.RESP: Redis).
type respStore struct {
	c       *redis.Client
	noIndex bool // chains.index false: no chain sorted sets
}

func (s respStore) withoutChainIndex() Store { s.noIndex = true; return s }

// Keys are built in one byte slab per call and turned into strings with a
// single conversion: go-redis takes keys as strings.

func appendTxKey(b, addr []byte) []byte      { return append(append(b, "tx:"...), addr...) }
func appendChainKey(b, gen []byte) []byte    { return append(append(b, "chain:"...), gen...) }
func appendBalanceKey(b, addr []byte) []byte { return append(append(b, "bal:"...), addr...) }

// PutTxs implements Store: one MULTI/EXEC transaction.
func (s respStore) PutTxs(ctx context.Context, txs []Tx) error {
	if len(txs) == 0 {
		return nil
	}
	keyLen, valLen := 0, 0
	for i := range txs {
		keyLen += len("tx:") + len(txs[i].Address) + len("chain:") + len(txs[i].Genesis)
		valLen += encodedHeader + len(txs[i].Payload)
	}
	kb := make([]byte, 0, keyLen)
	for i := range txs {
		kb = appendTxKey(kb, txs[i].Address)
		kb = appendChainKey(kb, txs[i].Genesis)
	}
	keys := string(kb) // one conversion for every key of the call
	vals := make([]byte, 0, valLen)
	pipe := s.c.TxPipeline()
	off := 0
	for i := range txs {
		tx := &txs[i]
		v := Encode(vals[len(vals):], *tx)
		if len(v) <= cap(vals)-len(vals) {
			vals = vals[:len(vals)+len(v)] // v was written in place
		}
		txKey := keys[off : off+len("tx:")+len(tx.Address)]
		off += len(txKey)
		chainKey := keys[off : off+len("chain:")+len(tx.Genesis)]
		off += len(chainKey)
		pipe.Set(ctx, txKey, v, 0)
		if s.noIndex {
			continue
		}
		pipe.ZAdd(ctx, chainKey, redis.Z{Score: float64(tx.Index), Member: tx.Address})
	}
	_, err := pipe.Exec(ctx)
	return err
}

// GetTx implements Store.
func (s respStore) GetTx(ctx context.Context, address []byte) (Tx, error) {
	var kb [64]byte
	v, err := s.c.Get(ctx, string(appendTxKey(kb[:0], address))).Bytes()
	if errors.Is(err, redis.Nil) {
		return Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return Tx{}, err
	}
	return Decode(v)
}

// Chain implements Store: ZRANGE a page of addresses, MGET their
// transactions, repeat.
func (s respStore) Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error {
	if s.noIndex {
		return errNoChainIndex
	}
	var kb [64]byte
	chainKey := string(appendChainKey(kb[:0], genesis))
	keys := make([]string, 0, chainPage)
	for start := int64(0); ; start += chainPage {
		members, err := s.c.ZRange(ctx, chainKey, start, start+chainPage-1).Result()
		if err != nil {
			return err
		}
		if len(members) == 0 {
			return nil
		}
		keys = keys[:0]
		for _, m := range members {
			keys = append(keys, "tx:"+m)
		}
		vals, err := s.c.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				return fmt.Errorf("chain %x entry %d: transaction %x: %w", genesis, start+int64(i), members[i], kv.ErrNotFound)
			}
			tx, err := Decode([]byte(str))
			if err != nil {
				return fmt.Errorf("chain %x entry %d: %w", genesis, start+int64(i), err)
			}
			if !fn(tx) {
				return nil
			}
		}
		if len(members) < chainPage {
			return nil
		}
	}
}

// PutBalances implements Store: one MSET (atomic).
func (s respStore) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	if len(addrs) == 0 {
		return nil
	}
	size := 0
	for _, a := range addrs {
		size += len("bal:") + len(a) + 20
	}
	slab := make([]byte, 0, size)
	args := make([]any, 0, 2*len(addrs))
	for i, a := range addrs {
		k := len(slab)
		slab = appendBalanceKey(slab, a)
		v := len(slab)
		slab = strconv.AppendUint(slab, amounts[i], 10)
		args = append(args, slab[k:v:v], slab[v:len(slab):len(slab)])
	}
	return s.c.MSet(ctx, args...).Err()
}

// GetBalance implements Store.
func (s respStore) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var kb [64]byte
	v, err := s.c.Get(ctx, string(appendBalanceKey(kb[:0], address))).Result()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}

func init() { conn.AddOwnKeyPrefixes("tx:", "chain:", "bal:") }
