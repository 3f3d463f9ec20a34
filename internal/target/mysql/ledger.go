package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"storebench/internal/kv"
	"storebench/internal/workload/ledger"
)

// The ledger layout: tables txs (indexed by chain) and balances, their
// statements, and the ledger.Store methods.

const (
	// maxRows bounds the rows of one multi-row INSERT; maxStmtBytes its
	// size (further bounded by the server's max_allowed_packet).
	maxRows      = 128
	maxStmtBytes = 8 << 20
	balanceRows  = 1000
)

var schema = []string{
	`CREATE TABLE IF NOT EXISTS txs (
	addr    VARBINARY(32) NOT NULL PRIMARY KEY,
	prev    VARBINARY(32) NOT NULL,
	genesis VARBINARY(32) NOT NULL,
	idx     BIGINT UNSIGNED NOT NULL,
	ts      BIGINT NOT NULL,
	type    TINYINT UNSIGNED NOT NULL,
	payload LONGBLOB NOT NULL,
	KEY txs_chain (genesis, idx)
) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS balances (
	addr   VARBINARY(32) NOT NULL PRIMARY KEY,
	amount BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB`,
}

const (
	sqlGetTx      = `SELECT prev, genesis, idx, ts, type, payload FROM txs WHERE addr = ?`
	sqlChain      = `SELECT addr, prev, idx, ts, type, payload FROM txs WHERE genesis = ? ORDER BY idx`
	sqlGetBalance = `SELECT amount FROM balances WHERE addr = ?`
	txRow         = `(?,?,?,?,?,?,?)`
	txUpsert      = ` ON DUPLICATE KEY UPDATE prev = VALUES(prev), genesis = VALUES(genesis), idx = VALUES(idx), ts = VALUES(ts), type = VALUES(type), payload = VALUES(payload)`
)

// openLedger creates the ledger tables if they are missing and prepares
// the ledger's fixed statements.
func (s *Store) openLedger(ctx context.Context) error {
	for _, ddl := range schema {
		if _, err := s.db.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("creating the ledger tables: %w", err)
		}
	}
	var err error
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{{&s.getTx, sqlGetTx}, {&s.chain, sqlChain}, {&s.getBalance, sqlGetBalance}} {
		if *p.st, err = s.db.PrepareContext(ctx, p.sql); err != nil {
			return err
		}
	}
	return nil
}

// closeLedger closes the ledger's statements.
func (s *Store) closeLedger() {
	for _, st := range []*sql.Stmt{s.getTx, s.chain, s.getBalance} {
		if st != nil {
			st.Close()
		}
	}
	s.putTxs.close()
	s.putBalances.close()
}

func buildPutTxs(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO txs (addr, prev, genesis, idx, ts, type, payload) VALUES ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(txRow)
	}
	b.WriteString(txUpsert)
	return b.String()
}

func buildPutBalances(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO balances (addr, amount) VALUES ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?)")
	}
	b.WriteString(" ON DUPLICATE KEY UPDATE amount = VALUES(amount)")
	return b.String()
}

// chunks splits txs into runs that fit one statement.
func (s *Store) chunks(txs []ledger.Tx) [][]ledger.Tx {
	var out [][]ledger.Tx
	start, size := 0, 0
	for i := range txs {
		n := 117 + len(txs[i].Payload) + 64
		if i > start && (i-start == maxRows || size+n > s.maxPacket) {
			out = append(out, txs[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(out, txs[start:])
}

// PutTxs implements ledger.Store.
func (s *Store) PutTxs(ctx context.Context, txs []ledger.Tx) error {
	if len(txs) == 0 {
		return nil
	}
	chunks := s.chunks(txs)
	if len(chunks) == 1 {
		return s.putTxChunk(ctx, nil, txs)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if err := s.putTxChunk(ctx, tx, c); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (s *Store) putTxChunk(ctx context.Context, tx *sql.Tx, txs []ledger.Tx) error {
	st, err := s.putTxs.get(s.db, len(txs), func() string { return buildPutTxs(len(txs)) })
	if err != nil {
		return err
	}
	ap := argsPool.Get().(*[]any)
	args := (*ap)[:0]
	for i := range txs {
		t := &txs[i]
		args = append(args, t.Address, nonNil(t.Prev), t.Genesis, t.Index, t.Timestamp, t.Type, nonNil(t.Payload))
	}
	if tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	_, err = st.ExecContext(ctx, args...)
	clear(args)
	*ap = args[:0]
	argsPool.Put(ap)
	return err
}

// GetTx implements ledger.Store.
func (s *Store) GetTx(ctx context.Context, address []byte) (ledger.Tx, error) {
	rows, err := s.getTx.QueryContext(ctx, address)
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
	var r row
	if err := rows.Scan(&r.prev, &r.genesis, &r.idx, &r.ts, &r.typ, &r.payload); err != nil {
		return ledger.Tx{}, err
	}
	r.addr = address
	tx := r.tx()
	rows.Close()
	return tx, rows.Err()
}

// row holds a row's columns as driver-owned bytes, valid until the next
// row; tx copies them into one allocation.
type row struct {
	addr, prev, genesis, payload sql.RawBytes
	idx                          uint64
	ts, typ                      int64
}

func (r *row) tx() ledger.Tx {
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
		Index:     r.idx,
		Timestamp: r.ts,
		Type:      uint8(r.typ),
		Payload:   b[a+p+g : n : n],
	}
}

// Chain implements ledger.Store: one indexed, ordered SELECT.
func (s *Store) Chain(ctx context.Context, genesis []byte, fn func(ledger.Tx) bool) error {
	rows, err := s.chain.QueryContext(ctx, genesis)
	if err != nil {
		return err
	}
	defer rows.Close()
	var r row
	for rows.Next() {
		if err := rows.Scan(&r.addr, &r.prev, &r.idx, &r.ts, &r.typ, &r.payload); err != nil {
			return err
		}
		r.genesis = genesis
		if !fn(r.tx()) {
			return nil
		}
	}
	return rows.Err()
}

// PutBalances implements ledger.Store: multi-row upserts in one
// transaction.
func (s *Store) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	if len(addrs) == 0 {
		return nil
	}
	ap := argsPool.Get().(*[]any)
	defer argsPool.Put(ap)
	put := func(tx *sql.Tx, addrs [][]byte, amounts []uint64) error {
		st, err := s.putBalances.get(s.db, len(addrs), func() string { return buildPutBalances(len(addrs)) })
		if err != nil {
			return err
		}
		if tx != nil {
			st = tx.StmtContext(ctx, st)
		}
		args := (*ap)[:0]
		for i, a := range addrs {
			args = append(args, a, amounts[i])
		}
		_, err = st.ExecContext(ctx, args...)
		clear(args)
		*ap = args[:0]
		return err
	}
	if len(addrs) <= balanceRows {
		return put(nil, addrs, amounts)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for i := 0; i < len(addrs); i += balanceRows {
		j := min(i+balanceRows, len(addrs))
		if err := put(tx, addrs[i:j], amounts[i:j]); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// GetBalance implements ledger.Store.
func (s *Store) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var v uint64
	err := s.getBalance.QueryRowContext(ctx, address).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	return v, err
}
