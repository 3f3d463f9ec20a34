package ledger

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/conn"
	"storebench/internal/workload/layout"
)

// The ledger layout on SQL targets (target.SQLDB: MariaDB/MySQL and
// PostgreSQL), written once through the target's dialect: tables txs
// (indexed by chain) and balances, created if missing, their statements,
// and the Store methods.
//
//	mysql     InnoDB txs(addr VARBINARY(32) PK, prev, genesis, idx BIGINT UNSIGNED, ts BIGINT,
//	          type TINYINT UNSIGNED, payload LONGBLOB) + KEY txs_chain (genesis, idx);
//	          balances(addr PK, amount BIGINT UNSIGNED); multi-row INSERT ... ON DUPLICATE KEY UPDATE
//	postgres  txs(addr bytea PK, prev, genesis, idx bigint, ts bigint, type smallint, payload bytea)
//	          + index txs_chain (genesis, idx); balances(addr bytea PK, amount bigint: the uint64's
//	          bits); INSERT ... SELECT FROM unnest(arrays) ON CONFLICT DO UPDATE

// The target's Reset empties the ledger's tables.
func init() { conn.AddOwnTables("txs", "balances") }

// sqlLedger says whether the ledger has a layout in dialect d.
func sqlLedger(d target.Dialect) bool { return d.Name == "mysql" || d.Name == "postgres" }

const (
	// maxRows bounds the rows of one multi-row INSERT (mysql);
	// maxStmtBytes its size (further bounded by the server's
	// max_allowed_packet).
	maxRows      = 128
	maxStmtBytes = 8 << 20
	// balanceRows is how many balances one INSERT writes (mysql).
	balanceRows = 1000
)

// mysqlSchema: InnoDB tables.
var mysqlSchema = []string{
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

// pgSchema runs as one simple query, so as one transaction, behind a
// transaction-scoped advisory lock: CREATE ... IF NOT EXISTS is not safe
// against itself in PostgreSQL (two sessions both see no table and the
// second fails on pg_type's unique index), and every worker process of a
// run opens the target at once (--workers N).
const pgSchema = `
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
	pgPutTxs = `INSERT INTO txs (addr, prev, genesis, idx, ts, type, payload)
SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::int8[], $5::int8[], $6::int2[], $7::bytea[])
ON CONFLICT (addr) DO UPDATE SET prev = EXCLUDED.prev, genesis = EXCLUDED.genesis, idx = EXCLUDED.idx,
	ts = EXCLUDED.ts, type = EXCLUDED.type, payload = EXCLUDED.payload`
	pgPutBalances = `INSERT INTO balances (addr, amount) SELECT * FROM unnest($1::bytea[], $2::int8[])
ON CONFLICT (addr) DO UPDATE SET amount = EXCLUDED.amount`
	mysqlTxRow    = `(?,?,?,?,?,?,?)`
	mysqlTxUpsert = ` ON DUPLICATE KEY UPDATE prev = VALUES(prev), genesis = VALUES(genesis), idx = VALUES(idx), ts = VALUES(ts), type = VALUES(type), payload = VALUES(payload)`
)

// sqlStore is the ledger layout on one SQL handle.
type sqlStore struct {
	db target.SQLDB
	d  target.Dialect

	getTx, chain, getBalance string

	// mysql: the multi-row statements by row count (int -> string)
	putTxs, putBalances sync.Map

	mu        sync.Mutex
	ready     bool // the tables exist
	maxPacket int  // mysql: the bytes one statement may hold
}

// sqlStores holds each SQL handle's layout (target.SQLDB -> *sqlStore).
var sqlStores layout.PerHandle[target.SQLDB, *sqlStore]

// sqlStoreOf is the ledger layout on db, the same for every step on it.
func sqlStoreOf(db target.SQLDB) *sqlStore {
	return sqlStores.Of(db, func() *sqlStore { return newSQLStore(db) })
}

// newSQLStore is the ledger layout's statements in db's dialect.
func newSQLStore(db target.SQLDB) *sqlStore {
	d := db.SQLDialect()
	// Integers are read as text, which reads the same in every dialect's
	// bytes (a driver may answer in binary).
	// (ORDER BY a qualified column, not the text the SELECT names idx.)
	idx, ts, typ, amount, order := "idx", "ts", "type", "amount", "idx"
	if d.Name == "postgres" {
		idx, ts, typ, amount, order = "idx::text", "ts::text", "type::text", "amount::text", "txs.idx"
	}
	return &sqlStore{db: db, d: d,
		getTx:      `SELECT prev, genesis, ` + idx + `, ` + ts + `, ` + typ + `, payload FROM txs WHERE addr = ` + d.Param(1),
		chain:      `SELECT addr, prev, ` + idx + `, ` + ts + `, ` + typ + `, payload FROM txs WHERE genesis = ` + d.Param(1) + ` ORDER BY ` + order,
		getBalance: `SELECT ` + amount + ` FROM balances WHERE addr = ` + d.Param(1),
	}
}

// prepare creates the ledger tables if they are missing and, on MySQL,
// reads the server's max_allowed_packet (once per handle; again after a
// failure).
func (s *sqlStore) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	var err error
	switch s.d.Name {
	case "mysql":
		err = s.db.ExecDDL(ctx, mysqlSchema...)
	case "postgres":
		err = s.db.ExecDDL(ctx, pgSchema)
	default:
		return fmt.Errorf("no ledger tables for SQL dialect %q", s.d.Name)
	}
	if err != nil {
		return fmt.Errorf("creating the ledger tables: %w", err)
	}
	if s.d.Name == "mysql" {
		var packet int64
		var perr error
		err := s.db.Query(ctx, `SELECT @@max_allowed_packet`, nil, func(cols [][]byte) bool {
			packet, perr = strconv.ParseInt(string(cols[0]), 10, 64)
			return false
		})
		if err == nil {
			err = perr
		}
		if err != nil {
			return fmt.Errorf("reading max_allowed_packet: %w", err)
		}
		s.maxPacket = min(int(packet)/2, maxStmtBytes)
	}
	s.ready = true
	return nil
}

// sqlInt is an integer column, as decimal text (a uint64 above
// MaxInt64 keeps its bits).
func (s *sqlStore) sqlInt(b []byte, col string) (int64, error) {
	var v int64
	var err error
	if len(b) > 0 && b[0] != '-' {
		var u uint64
		u, err = strconv.ParseUint(string(b), 10, 64)
		v = int64(u)
	} else {
		v, err = strconv.ParseInt(string(b), 10, 64)
	}
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", col, err)
	}
	return v, nil
}

// copyTx is borrowed with its bytes (address, prev, genesis, payload:
// the driver's, valid only during the call) copied into one allocation,
// so that the transaction outlives the row it was read from. The
// Aerospike and MongoDB layouts build their transactions with it too.
func copyTx(borrowed Tx) Tx {
	addr, prev, genesis, payload := borrowed.Address, borrowed.Prev, borrowed.Genesis, borrowed.Payload
	n := len(addr) + len(prev) + len(genesis) + len(payload)
	b := make([]byte, 0, n)
	b = append(b, addr...)
	b = append(b, prev...)
	b = append(b, genesis...)
	b = append(b, payload...)
	a, p, g := len(addr), len(prev), len(genesis)
	return Tx{
		Address:   b[:a:a],
		Prev:      b[a : a+p : a+p],
		Genesis:   b[a+p : a+p+g : a+p+g],
		Index:     borrowed.Index,
		Timestamp: borrowed.Timestamp,
		Type:      borrowed.Type,
		Payload:   b[a+p+g : n : n],
	}
}

// ints decodes the integer columns idx, ts and type.
func (s *sqlStore) ints(idx, ts, typ []byte) (int64, int64, int64, error) {
	i, err1 := s.sqlInt(idx, "idx")
	t, err2 := s.sqlInt(ts, "ts")
	y, err3 := s.sqlInt(typ, "type")
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return 0, 0, 0, err
		}
	}
	return i, t, y, nil
}

// GetTx implements Store.
func (s *sqlStore) GetTx(ctx context.Context, address []byte) (Tx, error) {
	var tx Tx
	found := false
	var derr error
	err := s.db.Query(ctx, s.getTx, []any{address}, func(c [][]byte) bool {
		found = true
		var idx, ts, typ int64
		if idx, ts, typ, derr = s.ints(c[2], c[3], c[4]); derr == nil {
			tx = copyTx(Tx{Address: address, Prev: c[0], Genesis: c[1], Payload: c[5], Index: uint64(idx), Timestamp: ts, Type: uint8(typ)})
		}
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return Tx{}, err
	}
	if !found {
		return Tx{}, fmt.Errorf("transaction %x: %w", address, kv.ErrNotFound)
	}
	return tx, nil
}

// Chain implements Store: one indexed, ordered SELECT.
func (s *sqlStore) Chain(ctx context.Context, genesis []byte, fn func(Tx) bool) error {
	var derr error
	err := s.db.Query(ctx, s.chain, []any{genesis}, func(c [][]byte) bool {
		var idx, ts, typ int64
		if idx, ts, typ, derr = s.ints(c[2], c[3], c[4]); derr != nil {
			return false
		}
		return fn(copyTx(Tx{Address: c[0], Prev: c[1], Genesis: genesis, Payload: c[5], Index: uint64(idx), Timestamp: ts, Type: uint8(typ)}))
	})
	if err == nil {
		err = derr
	}
	return err
}

// GetBalance implements Store.
func (s *sqlStore) GetBalance(ctx context.Context, address []byte) (uint64, error) {
	var v int64
	found := false
	var derr error
	err := s.db.Query(ctx, s.getBalance, []any{address}, func(c [][]byte) bool {
		found = true
		v, derr = s.sqlInt(c[0], "amount")
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("balance of %x: %w", address, kv.ErrNotFound)
	}
	return uint64(v), nil
}

// PutTxs implements Store: on PostgreSQL one INSERT of every transaction
// from arrays; on MySQL multi-row upserts, autocommitted when one
// statement holds them, else in one transaction.
func (s *sqlStore) PutTxs(ctx context.Context, txs []Tx) error {
	if len(txs) == 0 {
		return nil
	}
	if s.d.Name == "postgres" {
		return s.pgPutTxs(ctx, txs)
	}
	chunks := s.chunks(txs)
	if len(chunks) == 1 {
		return s.putTxChunk(ctx, s.db.Exec, txs)
	}
	return s.inTx(ctx, func(exec execFunc) error {
		for _, c := range chunks {
			if err := s.putTxChunk(ctx, exec, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// execFunc runs a statement: on the pool or in a transaction.
type execFunc func(ctx context.Context, q string, args ...any) (int64, error)

// inTx runs fn in one transaction of the target.
func (s *sqlStore) inTx(ctx context.Context, fn func(execFunc) error) error {
	t, ok := s.db.(target.SQLTransactor)
	if !ok {
		return fmt.Errorf("the %s target runs no transactions (target.SQLTransactor)", s.d.Name)
	}
	tx, err := t.BeginSQL(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx.Exec); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// chunks splits txs into runs that fit one statement.
func (s *sqlStore) chunks(txs []Tx) [][]Tx {
	var out [][]Tx
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

// multiRow is the statement of n rows, built once per n.
func multiRow(cache *sync.Map, n int, build func(n int) string) string {
	if q, ok := cache.Load(n); ok {
		return q.(string)
	}
	q, _ := cache.LoadOrStore(n, build(n))
	return q.(string)
}

func buildPutTxs(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO txs (addr, prev, genesis, idx, ts, type, payload) VALUES ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(mysqlTxRow)
	}
	b.WriteString(mysqlTxUpsert)
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

var argsPool = sync.Pool{New: func() any { return new([]any) }}

func (s *sqlStore) putTxChunk(ctx context.Context, exec execFunc, txs []Tx) error {
	q := multiRow(&s.putTxs, len(txs), buildPutTxs)
	ap := argsPool.Get().(*[]any)
	args := (*ap)[:0]
	for i := range txs {
		t := &txs[i]
		args = append(args, t.Address, nonNil(t.Prev), t.Genesis, t.Index, t.Timestamp, t.Type, nonNil(t.Payload))
	}
	_, err := exec(ctx, q, args...)
	clear(args)
	*ap = args[:0]
	argsPool.Put(ap)
	return err
}

// txColumns are the parameter arrays of one PostgreSQL PutTxs, pooled.
type txColumns struct {
	addr, prev, gen, payload [][]byte
	idx, ts                  []int64
	typ                      []int16
}

var txColumnsPool = sync.Pool{New: func() any { return new(txColumns) }}

func (s *sqlStore) pgPutTxs(ctx context.Context, txs []Tx) error {
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
	_, err := s.db.Exec(ctx, pgPutTxs, c.addr, c.prev, c.gen, c.idx, c.ts, c.typ, c.payload)
	return err
}

type balanceColumns struct {
	addr   [][]byte
	amount []int64
}

var balanceColumnsPool = sync.Pool{New: func() any { return new(balanceColumns) }}

// PutBalances implements Store: on PostgreSQL one INSERT of every
// balance from arrays (an amount is the bigint with the same 64 bits); on
// MySQL multi-row upserts of balanceRows rows, in one transaction when
// there are more.
func (s *sqlStore) PutBalances(ctx context.Context, addrs [][]byte, amounts []uint64) error {
	if len(addrs) != len(amounts) {
		return fmt.Errorf("%d addresses but %d amounts", len(addrs), len(amounts))
	}
	if len(addrs) == 0 {
		return nil
	}
	if s.d.Name == "postgres" {
		c := balanceColumnsPool.Get().(*balanceColumns)
		defer func() {
			clear(c.addr[:cap(c.addr)])
			balanceColumnsPool.Put(c)
		}()
		c.addr, c.amount = append(c.addr[:0], addrs...), c.amount[:0]
		for _, a := range amounts {
			c.amount = append(c.amount, int64(a))
		}
		_, err := s.db.Exec(ctx, pgPutBalances, c.addr, c.amount)
		return err
	}
	ap := argsPool.Get().(*[]any)
	defer argsPool.Put(ap)
	put := func(exec execFunc, addrs [][]byte, amounts []uint64) error {
		q := multiRow(&s.putBalances, len(addrs), buildPutBalances)
		args := (*ap)[:0]
		for i, a := range addrs {
			args = append(args, a, amounts[i])
		}
		_, err := exec(ctx, q, args...)
		clear(args)
		*ap = args[:0]
		return err
	}
	if len(addrs) <= balanceRows {
		return put(s.db.Exec, addrs, amounts)
	}
	return s.inTx(ctx, func(exec execFunc) error {
		for i := 0; i < len(addrs); i += balanceRows {
			j := min(i+balanceRows, len(addrs))
			if err := put(exec, addrs[i:j], amounts[i:j]); err != nil {
				return err
			}
		}
		return nil
	})
}
