// Package postgres is the storebench target for PostgreSQL, through pgx
// (its native protocol, not database/sql).
//
// Layouts:
//
//	ledger  txs(addr bytea PRIMARY KEY, prev bytea, genesis bytea, idx bigint,
//	            ts bigint, type smallint, payload bytea), index txs_chain (genesis, idx)
//	        balances(addr bytea PRIMARY KEY, amount bigint)
//	ycsb    usertable(ycsb_key varchar COLLATE "C" PRIMARY KEY, field0 bytea, …)
//
// Every statement is prepared once per connection and cached by pgx
// (QueryExecModeCacheStatement), parameters and results travel in binary.
// PutTxs and PutBalances are one multi-row INSERT … SELECT FROM unnest(…)
// ON CONFLICT DO UPDATE each: one statement, so atomic without a BEGIN,
// and one round trip. Reads scan into driver-owned bytes and copy each
// row into one allocation.
//
// The pointselect workload (pgbench -S shaped) gets a connection of its
// own per load goroutine through NewSelectConn.
//
// Durability: the session's synchronous_commit follows the study (on for
// sync, off for async), so the class holds on any server, managed or not.
package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/pointselect"
)

// moduleVersion is the pgx release in go.mod (the test checks it).
const moduleVersion = "v5.12.0"

const (
	name        = "postgres"
	defaultPool = 16
	openTimeout = 4 * time.Second
)

var optionNames = []string{"pool"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "PostgreSQL",
		Version:     "pgx " + moduleVersion,
		OptionNames: optionNames,
		Server:      "postgres",
		Schemes:     []string{"postgres", "postgresql"},
		Provides:    target.Caps{target.KeyValue, target.OrderedScan, target.Secondary, target.SQL},
		Open: func(o target.Options) (io.Closer, error) {
			s, err := Open(o)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}

const schema = `
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

// Store is an open connection pool. It implements ledger.Store, ycsb.DB
// and ycsb.Scanner and is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	connCfg  *pgx.ConnConfig
	settings map[string]string

	mu   sync.RWMutex
	ycsb *ycsbSQL // statements of the table Init made
}

// Open connects to o.URI (postgres://user[:password]@host:port/db) and
// creates the ledger tables if they are missing.
func Open(o target.Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, defaultPool, "postgres://user@host:port/db")
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	cfg, err := pgxpool.ParseConfig(o.URI)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(pool)
	cfg.MinConns = 0
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > openTimeout {
		cfg.ConnConfig.ConnectTimeout = openTimeout
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	commit := "off"
	if isSync {
		commit = "on"
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = commit
	cfg.ConnConfig.RuntimeParams["application_name"] = "storebench"

	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var version, fsync string
	err = p.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync')`).Scan(&version, &fsync)
	if err != nil {
		p.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v: %w", openTimeout, err)
		}
		return nil, err
	}
	if isSync && fsync != "on" {
		p.Close()
		return nil, fmt.Errorf("the study asks for sync durability but the server runs with fsync=%s", fsync)
	}
	if _, err := p.Exec(ctx, schema, pgx.QueryExecModeSimpleProtocol); err != nil {
		p.Close()
		return nil, fmt.Errorf("creating the ledger tables: %w", err)
	}
	return &Store{pool: p, connCfg: cfg.ConnConfig, settings: map[string]string{
		"server":         target.RedactURI(o.URI),
		"server_version": version,
		"client":         "pgx " + moduleVersion + " (native protocol, binary format, statements prepared and cached per connection)",
		"durability":     "synchronous_commit=" + commit + " per session (server fsync=" + fsync + ")",
		"pool":           fmt.Sprintf("%d connections (pgxpool)", pool),
		"layout.ledger":  "txs(addr bytea PK, prev, genesis, idx bigint, ts bigint, type smallint, payload bytea) + index (genesis, idx); balances(addr bytea PK, amount bigint, uint64 bits)",
		"layout.ycsb":    `usertable(ycsb_key varchar COLLATE "C" PK, field0..fieldN-1 bytea)`,
		"batch":          "PutTxs, PutBalances: one INSERT ... SELECT FROM unnest(arrays) ON CONFLICT DO UPDATE (one atomic statement, one round trip)",
		"chain_read":     "SELECT ... WHERE genesis = $1 ORDER BY idx (index txs_chain)",
		"pointselect":    "one connection per load goroutine, the SELECT prepared once, executed through pgconn with binary parameters and results (no allocation per select)",
	}}, nil
}

// NewSelectConn implements pointselect.Selecter: a connection of its own
// with "SELECT value FROM table WHERE key = $1" prepared, as pgbench -S
// runs it.
func (s *Store) NewSelectConn(ctx context.Context, table, key, value string) (pointselect.SelectConn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: select connection: %s", target.Scrub(s.connCfg.ConnString(), err.Error()))
	}
	q := "SELECT " + pgx.Identifier{value}.Sanitize() + " FROM " + pgx.Identifier{table}.Sanitize() +
		" WHERE " + pgx.Identifier{key}.Sanitize() + " = $1"
	sd, err := conn.PgConn().Prepare(ctx, "pointselect", q, nil)
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: preparing %s: %w", q, err)
	}
	c := &selectConn{conn: conn, param: make([]byte, 8)}
	switch sd.ParamOIDs[0] {
	case pgtype.Int8OID:
	case pgtype.Int4OID:
		c.param = c.param[:4]
	case pgtype.Int2OID:
		c.param = c.param[:2]
	default:
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s.%s is of type OID %d, want an integer", table, key, sd.ParamOIDs[0])
	}
	switch sd.Fields[0].DataTypeOID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
	default:
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s.%s is of type OID %d, want an integer", table, value, sd.Fields[0].DataTypeOID)
	}
	c.params = [][]byte{c.param}
	return c, nil
}

var binaryFormat = []int16{1}

// selectConn runs the prepared point select; not safe for concurrent use.
type selectConn struct {
	conn   *pgx.Conn
	param  []byte
	params [][]byte
}

// Select implements pointselect.SelectConn.
func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	switch len(c.param) {
	case 8:
		binary.BigEndian.PutUint64(c.param, uint64(key))
	case 4:
		binary.BigEndian.PutUint32(c.param, uint32(key))
	default:
		binary.BigEndian.PutUint16(c.param, uint16(key))
	}
	rr := c.conn.PgConn().ExecPrepared(ctx, "pointselect", c.params, binaryFormat, binaryFormat)
	var v int64
	found := false
	for rr.NextRow() {
		found = true
		b := rr.Values()[0]
		switch len(b) {
		case 8:
			v = int64(binary.BigEndian.Uint64(b))
		case 4:
			v = int64(int32(binary.BigEndian.Uint32(b)))
		case 2:
			v = int64(int16(binary.BigEndian.Uint16(b)))
		}
	}
	_, err := rr.Close()
	return v, found, err
}

// Close implements pointselect.SelectConn.
func (c *selectConn) Close() error { return c.conn.Close(context.Background()) }

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
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

// nonNil turns a nil slice into an empty one: pgx sends nil as SQL NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
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

// ycsbSQL holds the statements for a usertable of n fields.
type ycsbSQL struct {
	n       int
	insert  string
	read    string
	scan    string
	updates sync.Map // field mask (uint64) -> UPDATE statement
}

func newYCSBSQL(n int) *ycsbSQL {
	var cols, params strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			cols.WriteString(", ")
		}
		fmt.Fprintf(&cols, "field%d", i)
		fmt.Fprintf(&params, ", $%d", i+2)
	}
	return &ycsbSQL{
		n:      n,
		insert: "INSERT INTO usertable (ycsb_key, " + cols.String() + ") VALUES ($1" + params.String() + ")",
		read:   "SELECT " + cols.String() + " FROM usertable WHERE ycsb_key = $1",
		scan:   "SELECT ycsb_key, " + cols.String() + " FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2",
	}
}

// update returns the UPDATE of the non-nil fields and its arguments.
func (q *ycsbSQL) update(key []byte, fields [][]byte) (string, []any) {
	args := make([]any, 1, 1+len(fields))
	args[0] = key
	var mask uint64
	for i, f := range fields {
		if f != nil {
			args = append(args, f)
			if i < 64 {
				mask |= 1 << i
			}
		}
	}
	if len(fields) <= 64 {
		if sql, ok := q.updates.Load(mask); ok {
			return sql.(string), args
		}
	}
	var b strings.Builder
	b.WriteString("UPDATE usertable SET ")
	p := 2
	for i, f := range fields {
		if f == nil {
			continue
		}
		if p > 2 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "field%d = $%d", i, p)
		p++
	}
	b.WriteString(" WHERE ycsb_key = $1")
	sql := b.String()
	if len(fields) <= 64 {
		q.updates.Store(mask, sql)
	}
	return sql, args
}

func (s *Store) statements() (*ycsbSQL, error) {
	s.mu.RLock()
	q := s.ycsb
	s.mu.RUnlock()
	if q == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return q, nil
}

// Init implements ycsb.DB: it drops and recreates usertable.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	var b strings.Builder
	b.WriteString(`DROP TABLE IF EXISTS usertable; CREATE TABLE usertable (ycsb_key varchar COLLATE "C" PRIMARY KEY`)
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&b, ", field%d bytea", i)
	}
	b.WriteString(")")
	if _, err := s.pool.Exec(ctx, b.String(), pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	s.mu.Lock()
	s.ycsb = newYCSBSQL(fieldCount)
	s.mu.Unlock()
	return nil
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) != q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	args := make([]any, 1+len(fields))
	args[0] = key
	for i, f := range fields {
		args[1+i] = f
	}
	_, err = s.pool.Exec(ctx, q.insert, args...)
	return err
}

// Update implements ycsb.DB: an UPDATE of the non-nil fields only.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	sql, args := q.update(key, fields)
	if len(args) == 1 {
		return nil
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return err
}

// scratchPool holds the per-call scan destinations of records.
var scratchPool targetkit.ScratchPool[pgtype.DriverBytes]

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	q, err := s.statements()
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q.read, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	sc := scratchPool.Get(q.n)
	defer scratchPool.Put(sc)
	if err := rows.Scan(sc.Dest...); err != nil {
		return nil, err
	}
	out := targetkit.CopyFields(sc.Vals)
	rows.Close()
	return out, rows.Err()
}

// Scan implements ycsb.Scanner: count records from start in key order.
func (s *Store) Scan(ctx context.Context, start []byte, count int, fn func(key []byte, fields [][]byte) bool) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, q.scan, start, count)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := scratchPool.Get(1 + q.n)
	defer scratchPool.Put(sc)
	for rows.Next() {
		if err := rows.Scan(sc.Dest...); err != nil {
			return err
		}
		rec := targetkit.CopyFields(sc.Vals)
		if !fn(rec[0], rec[1:]) {
			return nil
		}
	}
	return rows.Err()
}
