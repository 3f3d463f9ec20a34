package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
	"storebench/internal/workload/layout"
)

// The ledger layout on a CQL target (conn.CQL: Cassandra), in the
// target's keyspace: tables txs_by_addr, txs_by_chain (one partition per
// chain) and balances, created if missing, and the Store methods. Every
// write is an upsert, so every request is marked idempotent: the target's
// client retries one the server answered with a timeout, and counts it
// (results.Step.Retried).

const (
	// maxBatchBytes bounds one single-partition batch, well under the
	// default max_mutation_size (half a 32 MiB commit-log segment).
	maxBatchBytes = 4 << 20
	// cqlWriters bounds the concurrent single-row writes of one call.
	cqlWriters = 16
	// cqlChainPage is how many rows of a chain one page reads.
	cqlChainPage = 1000
)

// The target's Reset empties the ledger's tables.
func init() { conn.AddOwnTables("txs_by_addr", "txs_by_chain", "balances") }

// cqlStore is the ledger layout on one CQL session.
type cqlStore struct {
	s  *gocql.Session
	ks string

	// its statements
	putAddr, putChain, getTx, chain, putBalance, getBalance string

	mu    sync.Mutex
	ready bool // the tables exist
}

// cqlStores holds each session's layout, so that the steps of a run on
// one handle create the tables once (*gocql.Session -> *cqlStore).
var cqlStores layout.PerHandle[*gocql.Session, *cqlStore]

// cqlStoreOf is the ledger layout on h, the same for every step on it.
func cqlStoreOf(h conn.CQL) *cqlStore {
	sess := h.CQLSession()
	return cqlStores.Of(sess, func() *cqlStore { return newCQLStore(sess, h.CQLKeyspace()) })
}

// newCQLStore is the ledger layout's statements on keyspace ks.
func newCQLStore(sess *gocql.Session, ks string) *cqlStore {
	return &cqlStore{s: sess, ks: ks,
		putAddr:    `INSERT INTO ` + ks + `.txs_by_addr (addr, prev, genesis, idx, ts, type, payload) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		putChain:   `INSERT INTO ` + ks + `.txs_by_chain (genesis, idx, addr, prev, ts, type, payload) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		getTx:      `SELECT prev, genesis, idx, ts, type, payload FROM ` + ks + `.txs_by_addr WHERE addr = ?`,
		chain:      `SELECT idx, addr, prev, ts, type, payload FROM ` + ks + `.txs_by_chain WHERE genesis = ?`,
		putBalance: `INSERT INTO ` + ks + `.balances (addr, amount) VALUES (?, ?)`,
		getBalance: `SELECT amount FROM ` + ks + `.balances WHERE addr = ?`,
	}
}

// prepare creates the ledger tables if they are missing (once per
// session; again after a failure).
func (s *cqlStore) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	ks := s.ks
	ddl := []string{
		`CREATE TABLE IF NOT EXISTS ` + ks + `.txs_by_addr (addr blob PRIMARY KEY, prev blob, genesis blob, idx bigint, ts bigint, type int, payload blob)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.txs_by_chain (genesis blob, idx bigint, addr blob, prev blob, ts bigint, type int, payload blob,
			PRIMARY KEY ((genesis), idx)) WITH CLUSTERING ORDER BY (idx ASC)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.balances (addr blob PRIMARY KEY, amount bigint)`,
	}
	for _, q := range ddl {
		if err := s.s.Query(q).ExecContext(ctx); err != nil {
			return fmt.Errorf("creating the ledger schema: %w", err)
		}
	}
	s.ready = true
	return nil
}

// parallel runs fn(0..n-1) on up to cqlWriters goroutines and returns the
// first error.
func parallel(n int, fn func(i int) error) error {
	w := min(n, cqlWriters)
	if w <= 1 {
		for i := 0; i < n; i++ {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// nonNil is b, or an empty slice for nil (a blob, not a null).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// PutTxs implements Store: the txs_by_chain rows of a chain in one
// UNLOGGED single-partition batch, the txs_by_addr rows as concurrent
// single-row INSERTs.
func (s *cqlStore) PutTxs(ctx context.Context, txs []Tx) error {
	if len(txs) == 0 {
		return nil
	}
	// Chain batches: consecutive runs of one genesis, cut at maxBatchBytes.
	type run struct{ from, to int }
	var runs []run
	size := 0
	for i := range txs {
		n := 117 + len(txs[i].Payload) + 64
		if i == 0 || string(txs[i].Genesis) != string(txs[runs[len(runs)-1].from].Genesis) || size+n > maxBatchBytes {
			runs = append(runs, run{i, i})
			size = 0
		}
		runs[len(runs)-1].to = i + 1
		size += n
	}
	return parallel(len(runs)+len(txs), func(i int) error {
		if i < len(runs) {
			b := s.s.Batch(gocql.UnloggedBatch).WithContext(ctx)
			for j := runs[i].from; j < runs[i].to; j++ {
				t := &txs[j]
				b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: s.putChain, Idempotent: true,
					Args: []any{t.Genesis, int64(t.Index), t.Address, nonNil(t.Prev), t.Timestamp, int(t.Type), nonNil(t.Payload)}})
			}
			return b.ExecContext(ctx)
		}
		t := &txs[i-len(runs)]
		return s.s.Query(s.putAddr, t.Address, nonNil(t.Prev), t.Genesis, int64(t.Index), t.Timestamp, int(t.Type), nonNil(t.Payload)).Idempotent(true).ExecContext(ctx)
	})
}

// cqlUnindexed is the layout writing txs_by_addr only (chains.index
// false): the seed's one row per transaction, no txs_by_chain rows.
type cqlUnindexed struct{ *cqlStore }

func (s *cqlStore) withoutChainIndex() Store { return cqlUnindexed{s} }

// PutTxs implements Store: the txs_by_addr rows as concurrent
// single-row INSERTs.
func (s cqlUnindexed) PutTxs(ctx context.Context, txs []Tx) error {
	return parallel(len(txs), func(i int) error {
		t := &txs[i]
		return s.s.Query(s.putAddr, t.Address, nonNil(t.Prev), t.Genesis, int64(t.Index), t.Timestamp, int(t.Type), nonNil(t.Payload)).Idempotent(true).ExecContext(ctx)
	})
}

// Chain implements Store: there is no chain table to read.
func (cqlUnindexed) Chain(context.Context, []byte, func(Tx) bool) error { return errNoChainIndex }

// GetTx implements Store.
func (s *cqlStore) GetTx(ctx context.Context, address []byte) (Tx, error) {
	var tx Tx
	var idx int64
	var typ int
	err := s.s.Query(s.getTx, address).Idempotent(true).ScanContext(ctx, &tx.Prev, &tx.Genesis, &idx, &tx.Timestamp, &typ, &tx.Payload)
	if errors.Is(err, gocql.ErrNotFound) {
		return Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	if err != nil {
		return Tx{}, err
	}
	tx.Address = append([]byte(nil), address...)
	tx.Index, tx.Type = uint64(idx), uint8(typ)
	if tx.Payload == nil {
		tx.Payload = []byte{}
	}
	return tx, nil
}

// Chain implements Store: one partition, in clustering order.
func (s *cqlStore) Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error {
	iter := s.s.Query(s.chain, genesis).PageSize(cqlChainPage).Idempotent(true).IterContext(ctx)
	scanner := iter.Scanner()
	for scanner.Next() {
		var tx Tx
		var idx int64
		var typ int
		if err := scanner.Scan(&idx, &tx.Address, &tx.Prev, &tx.Timestamp, &typ, &tx.Payload); err != nil {
			iter.Close()
			return err
		}
		tx.Genesis = append([]byte(nil), genesis...)
		tx.Index, tx.Type = uint64(idx), uint8(typ)
		if !fn(tx) {
			return iter.Close()
		}
	}
	return scanner.Err()
}

// PutBalances implements Store: concurrent single-row upserts (one
// partition each).
func (s *cqlStore) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	return parallel(len(addrs), func(i int) error {
		return s.s.Query(s.putBalance, addrs[i], int64(amounts[i])).Idempotent(true).ExecContext(ctx)
	})
}

// GetBalance implements Store.
func (s *cqlStore) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var v int64
	err := s.s.Query(s.getBalance, address).Idempotent(true).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	return uint64(v), err
}
