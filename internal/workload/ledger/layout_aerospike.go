package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	as "github.com/aerospike/aerospike-client-go/v8"
	"github.com/aerospike/aerospike-client-go/v8/types"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
)

// The ledger layout on an Aerospike target (conn.Aerospike), in the
// target's namespace: sets txs, chain (one record per genesis and index,
// as Aerospike has no ordered scan) and balances, and the Store methods.

// aerospikeStore is the ledger layout on one client.
type aerospikeStore struct {
	c          *as.Client
	ns         string
	read       *as.BasePolicy
	batch      *as.BatchPolicy
	batchWrite *as.BatchWritePolicy
	noIndex    bool // chains.index false: no chain set records
}

func (s *aerospikeStore) withoutChainIndex() Store { c := *s; c.noIndex = true; return &c }

// aerospikeStoreOf is the ledger layout on h.
func aerospikeStoreOf(h conn.Aerospike) *aerospikeStore {
	p := h.AerospikePolicies()
	return &aerospikeStore{c: h.AerospikeClient(), ns: h.AerospikeNamespace(), read: p.Read, batch: p.Batch, batchWrite: p.BatchWrite}
}

// The target's Reset truncates the ledger's sets.
func init() { conn.AddOwnTables(setTxs, setChain, setBalances) }

const (
	// chainWindow is how many chain entries one batch get reads.
	chainWindow = 128
	// balanceBatch is how many balances one batch write holds.
	balanceBatch = 5000

	setTxs      = "txs"
	setChain    = "chain"
	setBalances = "balances"

	binPrev    = "prev"
	binGenesis = "genesis"
	binIdx     = "idx"
	binTs      = "ts"
	binType    = "type"
	binPayload = "payload"
	binAddr    = "addr"
	binAmount  = "amount"
)

// asTxKey is the key of a transaction's record.
func asTxKey(ns string, address []byte) (*as.Key, error) {
	k, err := as.NewKey(ns, setTxs, address)
	return k, conn.AerospikeErr(err)
}

// asChainKeyValue is the user key of chain entry (genesis, index): the
// genesis, '|' and the index in 8 big-endian bytes.
func asChainKeyValue(genesis []byte, index uint64) []byte {
	b := make([]byte, 0, len(genesis)+9)
	b = append(b, genesis...)
	b = append(b, '|')
	return binary.BigEndian.AppendUint64(b, index)
}

// asChainKey is the key of chain entry (genesis, index).
func asChainKey(ns string, genesis []byte, index uint64) (*as.Key, error) {
	k, err := as.NewKey(ns, setChain, asChainKeyValue(genesis, index))
	return k, conn.AerospikeErr(err)
}

// asBalanceKey is the key of an address's balance.
func asBalanceKey(ns string, address []byte) (*as.Key, error) {
	k, err := as.NewKey(ns, setBalances, address)
	return k, conn.AerospikeErr(err)
}

// asTxBins are the bins of a transaction's record (the address is the key).
func asTxBins(tx Tx) []*as.Bin {
	return []*as.Bin{
		as.NewBin(binPrev, nonNil(tx.Prev)),
		as.NewBin(binGenesis, nonNil(tx.Genesis)),
		as.NewBin(binIdx, int64(tx.Index)),
		as.NewBin(binTs, tx.Timestamp),
		as.NewBin(binType, int(tx.Type)),
		as.NewBin(binPayload, nonNil(tx.Payload)),
	}
}

// asTxFromBins rebuilds the transaction of address from its record's bins.
// The transaction owns copies of its bytes, in one allocation.
func asTxFromBins(address []byte, bins as.BinMap) (Tx, error) {
	prev, err1 := conn.AerospikeBytes(bins, binPrev, false)
	gen, err2 := conn.AerospikeBytes(bins, binGenesis, false)
	payload, err3 := conn.AerospikeBytes(bins, binPayload, true) // an empty blob may come back absent
	idx, err4 := conn.AerospikeInt(bins, binIdx)
	ts, err5 := conn.AerospikeInt(bins, binTs)
	typ, err6 := conn.AerospikeInt(bins, binType)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return Tx{}, fmt.Errorf("transaction %x: %w", address, err)
	}
	if typ < 0 || typ > 255 {
		return Tx{}, fmt.Errorf("transaction %x: type %d out of range", address, typ)
	}
	return copyTx(Tx{Address: address, Prev: prev, Genesis: gen, Payload: payload, Index: uint64(idx), Timestamp: ts, Type: uint8(typ)}), nil
}

// PutTxs implements Store: one batch write of every transaction's
// record and chain entry.
func (s *aerospikeStore) PutTxs(ctx context.Context, txs []Tx) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(txs) == 0 {
		return nil
	}
	recs := make([]as.BatchRecordIfc, 0, 2*len(txs))
	for i := range txs {
		tk, err := asTxKey(s.ns, txs[i].Address)
		if err != nil {
			return err
		}
		bins := asTxBins(txs[i])
		ops := make([]*as.Operation, len(bins))
		for j, b := range bins {
			ops[j] = as.PutOp(b)
		}
		recs = append(recs, as.NewBatchWrite(s.batchWrite, tk, ops...))
		if s.noIndex {
			continue
		}
		ck, err := asChainKey(s.ns, txs[i].Genesis, txs[i].Index)
		if err != nil {
			return err
		}
		recs = append(recs, as.NewBatchWrite(s.batchWrite, ck, as.PutOp(as.NewBin(binAddr, txs[i].Address))))
	}
	return s.batchOperate(recs)
}

func (s *aerospikeStore) batchOperate(recs []as.BatchRecordIfc) error {
	if err := s.c.BatchOperate(s.batch, recs); err != nil {
		return err
	}
	for _, r := range recs {
		if br := r.BatchRec(); br.ResultCode != types.OK {
			if br.Err != nil {
				return br.Err
			}
			return fmt.Errorf("batch write of %v: result %v", br.Key, br.ResultCode)
		}
	}
	return nil
}

// GetTx implements Store.
func (s *aerospikeStore) GetTx(ctx context.Context, address []byte) (Tx, error) {
	if err := ctx.Err(); err != nil {
		return Tx{}, err
	}
	k, err := asTxKey(s.ns, address)
	if err != nil {
		return Tx{}, err
	}
	rec, aerr := s.c.Get(s.read, k)
	if conn.AerospikeNotFound(aerr) {
		return Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if aerr != nil {
		return Tx{}, aerr
	}
	return asTxFromBins(address, rec.Bins)
}

// Chain implements Store: batch gets of chain entries, window by
// window, until the first missing index.
func (s *aerospikeStore) Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error {
	if s.noIndex {
		return errNoChainIndex
	}
	keys := make([]*as.Key, chainWindow)
	addrs := make([][]byte, 0, chainWindow)
	for start := uint64(0); ; start += chainWindow {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range keys {
			k, err := asChainKey(s.ns, genesis, start+uint64(i))
			if err != nil {
				return err
			}
			keys[i] = k
		}
		recs, berr := s.c.BatchGet(s.batch, keys, binAddr)
		if berr != nil && !berr.Matches(types.KEY_NOT_FOUND_ERROR, types.BATCH_FAILED) {
			return berr
		}
		addrs = addrs[:0]
		for _, r := range recs {
			if r == nil {
				break
			}
			a, ok := r.Bins[binAddr].([]byte)
			if !ok {
				return fmt.Errorf("chain %x entry %d: bin addr is a %T", genesis, start+uint64(len(addrs)), r.Bins[binAddr])
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			return nil
		}
		txKeys := make([]*as.Key, len(addrs))
		for i, a := range addrs {
			k, err := asTxKey(s.ns, a)
			if err != nil {
				return err
			}
			txKeys[i] = k
		}
		txs, berr := s.c.BatchGet(s.batch, txKeys)
		if berr != nil && !berr.Matches(types.KEY_NOT_FOUND_ERROR, types.BATCH_FAILED) {
			return berr
		}
		for i, r := range txs {
			if r == nil {
				return fmt.Errorf("chain %x entry %d: transaction %x: %w", genesis, start+uint64(i), addrs[i], kv.ErrNotFound)
			}
			tx, err := asTxFromBins(addrs[i], r.Bins)
			if err != nil {
				return err
			}
			if !fn(tx) {
				return nil
			}
		}
		if len(addrs) < chainWindow {
			return nil
		}
	}
}

// PutBalances implements Store: batch writes.
func (s *aerospikeStore) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	for i := 0; i < len(addrs); i += balanceBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := min(i+balanceBatch, len(addrs))
		recs := make([]as.BatchRecordIfc, 0, j-i)
		for k := i; k < j; k++ {
			key, err := asBalanceKey(s.ns, addrs[k])
			if err != nil {
				return err
			}
			recs = append(recs, as.NewBatchWrite(s.batchWrite, key, as.PutOp(as.NewBin(binAmount, int64(amounts[k])))))
		}
		if err := s.batchOperate(recs); err != nil {
			return err
		}
	}
	return nil
}

// GetBalance implements Store.
func (s *aerospikeStore) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	k, err := asBalanceKey(s.ns, address)
	if err != nil {
		return 0, err
	}
	rec, aerr := s.c.Get(s.read, k, binAmount)
	if conn.AerospikeNotFound(aerr) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	if aerr != nil {
		return 0, aerr
	}
	v, err := conn.AerospikeInt(rec.Bins, binAmount)
	return uint64(v), err
}
