package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"storebench/internal/kv"
	"storebench/internal/workload/ledger"
)

// The ledger layout: tables txs (indexed by chain) and balances, written
// with unnest arrays, and the ledger.Store methods.

// schema runs as one simple query, so as one transaction, behind a
// transaction-scoped advisory lock: CREATE ... IF NOT EXISTS is not safe
// against itself in PostgreSQL (two sessions both see no table and the
// second fails on pg_type's unique index), and every worker process of a
// run opens the target at once (--workers N).
const schema = `
SELECT pg_advisory_xact_lock(7462016225360114034); -- storebench ledger schema
CREATE TABLE IF NOT EXISTS txs (
	addr    bytea PRIMARY KEY,
	prev    bytea NOT NULL,
	genesis bytea NOT NULL,
	idx     bigint NOT NULL,
	ts      bigint NOT NULL,
	type    smallint NOT NULL,
	payload bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS txs_chain ON txs (genesis, idx);
CREATE TABLE IF NOT EXISTS balances (
	addr   bytea PRIMARY KEY,
	amount bigint NOT NULL
);`

const (
	sqlPutTxs = `INSERT INTO txs (addr, prev, genesis, idx, ts, type, payload)
SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::int8[], $5::int8[], $6::int2[], $7::bytea[])
ON CONFLICT (addr) DO UPDATE SET prev = EXCLUDED.prev, genesis = EXCLUDED.genesis, idx = EXCLUDED.idx,
	ts = EXCLUDED.ts, type = EXCLUDED.type, payload = EXCLUDED.payload`
	sqlGetTx       = `SELECT prev, genesis, idx, ts, type, payload FROM txs WHERE addr = $1`
	sqlChain       = `SELECT addr, prev, idx, ts, type, payload FROM txs WHERE genesis = $1 ORDER BY idx`
	sqlPutBalances = `INSERT INTO balances (addr, amount) SELECT * FROM unnest($1::bytea[], $2::int8[])
ON CONFLICT (addr) DO UPDATE SET amount = EXCLUDED.amount`
	sqlGetBalance = `SELECT amount FROM balances WHERE addr = $1`
)

// createLedgerTables creates the ledger tables and their index if they
// are missing.
func createLedgerTables(ctx context.Context, p *pgxpool.Pool) error {
	if _, err := p.Exec(ctx, schema, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("creating the ledger tables: %w", err)
	}
	return nil
}

// txColumns are the parameter arrays of one PutTxs, pooled.
type txColumns struct {
	addr, prev, gen, payload [][]byte
	idx, ts                  []int64
	typ                      []int16
}

var txColumnsPool = sync.Pool{New: func() any { return new(txColumns) }}

// PutTxs implements ledger.Store: one INSERT of every transaction.
func (s *Store) PutTxs(ctx context.Context, txs []ledger.Tx) error {
	if len(txs) == 0 {
		return nil
	}
	c := txColumnsPool.Get().(*txColumns)
	defer func() {
		clear(c.addr[:cap(c.addr)])
		clear(c.prev[:cap(c.prev)])
		clear(c.gen[:cap(c.gen)])
		clear(c.payload[:cap(c.payload)])
		txColumnsPool.Put(c)
	}()
	c.addr, c.prev, c.gen, c.payload = c.addr[:0], c.prev[:0], c.gen[:0], c.payload[:0]
	c.idx, c.ts, c.typ = c.idx[:0], c.ts[:0], c.typ[:0]
	for i := range txs {
		tx := &txs[i]
		c.addr = append(c.addr, tx.Address)
		c.prev = append(c.prev, nonNil(tx.Prev))
		c.gen = append(c.gen, tx.Genesis)
		c.idx = append(c.idx, int64(tx.Index))
		c.ts = append(c.ts, tx.Timestamp)
		c.typ = append(c.typ, int16(tx.Type))
		c.payload = append(c.payload, nonNil(tx.Payload))
	}
	_, err := s.pool.Exec(ctx, sqlPutTxs, c.addr, c.prev, c.gen, c.idx, c.ts, c.typ, c.payload)
	return err
}

// GetTx implements ledger.Store.
func (s *Store) GetTx(ctx context.Context, address []byte) (ledger.Tx, error) {
	rows, err := s.pool.Query(ctx, sqlGetTx, address)
	if err != nil {
		return ledger.Tx{}, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return ledger.Tx{}, err
		}
		return ledger.Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	var r txRow
	if err := rows.Scan(&r.prev, &r.genesis, &r.idx, &r.ts, &r.typ, &r.payload); err != nil {
		return ledger.Tx{}, err
	}
	r.addr = address
	tx := r.tx()
	rows.Close()
	return tx, rows.Err()
}

// txRow holds a row's columns as driver-owned bytes, valid until the next
// row; tx copies them into one allocation.
type txRow struct {
	addr                   []byte
	prev, genesis, payload pgtype.DriverBytes
	idx, ts                int64
	typ                    int16
}

func (r *txRow) tx() ledger.Tx {
	n := len(r.addr) + len(r.prev) + len(r.genesis) + len(r.payload)
	b := make([]byte, 0, n)
	b = append(b, r.addr...)
	b = append(b, r.prev...)
	b = append(b, r.genesis...)
	b = append(b, r.payload...)
	a, p, g := len(r.addr), len(r.prev), len(r.genesis)
	return ledger.Tx{
		Address:   b[:a:a],
		Prev:      b[a : a+p : a+p],
		Genesis:   b[a+p : a+p+g : a+p+g],
		Index:     uint64(r.idx),
		Timestamp: r.ts,
		Type:      uint8(r.typ),
		Payload:   b[a+p+g : n : n],
	}
}

// Chain implements ledger.Store: one indexed, ordered SELECT.
func (s *Store) Chain(ctx context.Context, genesis []byte, fn func(ledger.Tx) bool) error {
	rows, err := s.pool.Query(ctx, sqlChain, genesis)
	if err != nil {
		return err
	}
	defer rows.Close()
	var r txRow
	var addr pgtype.DriverBytes
	r.genesis = genesis
	for rows.Next() {
		if err := rows.Scan(&addr, &r.prev, &r.idx, &r.ts, &r.typ, &r.payload); err != nil {
			return err
		}
		r.addr = addr
		if !fn(r.tx()) {
			return nil
		}
	}
	return rows.Err()
}

type balanceColumns struct {
	addr   [][]byte
	amount []int64
}

var balanceColumnsPool = sync.Pool{New: func() any { return new(balanceColumns) }}

// PutBalances implements ledger.Store: one INSERT of every balance. An
// amount is stored as the bigint with the same 64 bits.
func (s *Store) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	if len(addrs) == 0 {
		return nil
	}
	c := balanceColumnsPool.Get().(*balanceColumns)
	defer func() {
		clear(c.addr[:cap(c.addr)])
		balanceColumnsPool.Put(c)
	}()
	c.addr, c.amount = append(c.addr[:0], addrs...), c.amount[:0]
	for _, a := range amounts {
		c.amount = append(c.amount, int64(a))
	}
	_, err := s.pool.Exec(ctx, sqlPutBalances, c.addr, c.amount)
	return err
}

// GetBalance implements ledger.Store.
func (s *Store) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, sqlGetBalance, address).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	return uint64(v), err
}
