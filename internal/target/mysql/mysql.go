// Package mysql is the storebench target for MySQL and MariaDB, through
// go-sql-driver/mysql and database/sql. The managed server is MariaDB.
//
// Layouts (InnoDB):
//
//	ledger  txs(addr VARBINARY(32) PRIMARY KEY, prev VARBINARY(32), genesis VARBINARY(32),
//	            idx BIGINT UNSIGNED, ts BIGINT, type TINYINT UNSIGNED, payload LONGBLOB),
//	            KEY txs_chain (genesis, idx)
//	        balances(addr VARBINARY(32) PRIMARY KEY, amount BIGINT UNSIGNED)
//	ycsb    usertable(ycsb_key VARCHAR(255) utf8mb4_bin PRIMARY KEY, field0 LONGBLOB, …)
//
// Every statement is a server-side prepared statement (database/sql keeps
// one per connection); nothing is interpolated client-side. PutTxs is one
// multi-row INSERT … ON DUPLICATE KEY UPDATE when the batch fits one
// statement (atomic on its own, one round trip), else several inside one
// transaction. Reads scan into sql.RawBytes and copy each row into one
// allocation.
//
// Durability is the server's (innodb_flush_log_at_trx_commit, and
// sync_binlog when the binary log is on): it cannot be set per session.
// Open reads it and refuses a sync study on a server that does not flush
// at every commit.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/pointselect"
)

// moduleVersion is the driver release in go.mod (the test checks it).
const moduleVersion = "v1.10.1"

const (
	name        = "mysql"
	defaultPool = 16
	openTimeout = 4 * time.Second
	defaultDB   = "storebench"
	// maxRows bounds the rows of one multi-row INSERT; maxStmtBytes its
	// size (further bounded by the server's max_allowed_packet).
	maxRows      = 128
	maxStmtBytes = 8 << 20
	balanceRows  = 1000
)

var optionNames = []string{"pool"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "MySQL/MariaDB",
		Version:     "go-sql-driver/mysql " + moduleVersion,
		OptionNames: optionNames,
		Server:      "mariadb",
		Schemes:     []string{"mysql"},
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

// Store is an open connection pool. It implements ledger.Store, ycsb.DB
// and ycsb.Scanner and is safe for concurrent use.
type Store struct {
	db        *sql.DB
	cfg       *mysql.Config
	settings  map[string]string
	maxPacket int

	getTx, chain, getBalance *sql.Stmt
	putTxs                   stmtCache // by row count
	putBalances              stmtCache // by row count

	mu   sync.RWMutex
	ycsb *ycsbStmts
}

// stmtCache holds prepared statements built by a function of an int;
// lookups take no lock.
type stmtCache struct {
	mu    sync.Mutex // held while preparing
	stmts sync.Map   // int -> *sql.Stmt
}

func (c *stmtCache) get(db *sql.DB, n int, build func() string) (*sql.Stmt, error) {
	if st, ok := c.stmts.Load(n); ok {
		return st.(*sql.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts.Load(n); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.Prepare(build())
	if err != nil {
		return nil, err
	}
	c.stmts.Store(n, st)
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		c.stmts.Delete(k)
		return true
	})
}

type quietLogger struct{}

func (quietLogger) Print(...any) {}

// Open connects to o.URI (mysql://user[:password]@host:port/db; the
// database, storebench by default, is created if missing) and creates the
// ledger tables if they are missing.
func Open(o target.Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

// config turns a mysql:// URI into the driver's configuration (never into
// a DSN string, which would carry the password around).
func config(uri string) (*mysql.Config, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "mysql" {
		return nil, fmt.Errorf("scheme %q: want mysql://", u.Scheme)
	}
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if cfg.User == "" {
		cfg.User = "root"
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	cfg.DBName = strings.Trim(u.Path, "/")
	if cfg.DBName == "" {
		cfg.DBName = defaultDB
	}
	for k, v := range u.Query() {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params[k] = v[len(v)-1]
	}
	cfg.Timeout = openTimeout - time.Second
	cfg.ClientFoundRows = true // an UPDATE reports the rows it matched
	cfg.InterpolateParams = false
	cfg.Logger = quietLogger{}
	return cfg, nil
}

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, defaultPool, "mysql://user@host:port/db")
	if err != nil {
		return nil, err
	}
	isSync, pool := sv.Sync, sv.Pool
	cfg, err := config(o.URI)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	db, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, cfg: cfg}
	if err := s.init(ctx, isSync, pool, o.URI); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// connect opens the pool, creating the database if the server says it
// does not exist.
func connect(ctx context.Context, cfg *mysql.Config) (*sql.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	err = db.PingContext(ctx)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1049 { // ER_BAD_DB_ERROR
		db.Close()
		noDB := cfg.Clone()
		noDB.DBName = ""
		c, cerr := mysql.NewConnector(noDB)
		if cerr != nil {
			return nil, cerr
		}
		admin := sql.OpenDB(c)
		_, err = admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+strings.ReplaceAll(cfg.DBName, "`", "``")+"`")
		admin.Close()
		if err != nil {
			return nil, fmt.Errorf("creating database %s: %w", cfg.DBName, err)
		}
		if conn, err = mysql.NewConnector(cfg); err != nil {
			return nil, err
		}
		db = sql.OpenDB(conn)
		err = db.PingContext(ctx)
	}
	if err != nil {
		db.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v: %w", openTimeout, err)
		}
		return nil, err
	}
	return db, nil
}

func (s *Store) init(ctx context.Context, isSync bool, pool int, uri string) error {
	var version, flush, logBin, syncBinlog string
	var maxPacket int
	err := s.db.QueryRowContext(ctx, `SELECT @@version, @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog, @@max_allowed_packet`).
		Scan(&version, &flush, &logBin, &syncBinlog, &maxPacket)
	if err != nil {
		return err
	}
	binlogOn := logBin == "1" || strings.EqualFold(logBin, "on")
	durability := "server's: innodb_flush_log_at_trx_commit=" + flush
	if binlogOn {
		durability += ", binary log on with sync_binlog=" + syncBinlog
	} else {
		durability += ", binary log off"
	}
	if isSync && (flush != "1" || binlogOn && syncBinlog != "1") {
		return fmt.Errorf("the study asks for sync durability but the server has %s: set innodb_flush_log_at_trx_commit=1 (and sync_binlog=1 with a binary log)", durability)
	}
	if !isSync {
		durability += " (cannot be relaxed per session)"
	}
	for _, ddl := range schema {
		if _, err := s.db.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("creating the ledger tables: %w", err)
		}
	}
	s.maxPacket = min(maxPacket/2, maxStmtBytes)
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{{&s.getTx, sqlGetTx}, {&s.chain, sqlChain}, {&s.getBalance, sqlGetBalance}} {
		if *p.st, err = s.db.PrepareContext(ctx, p.sql); err != nil {
			return err
		}
	}
	s.settings = map[string]string{
		"server":         target.RedactURI(uri),
		"server_version": version,
		"client":         "go-sql-driver/mysql " + moduleVersion + " (database/sql, server-side prepared statements)",
		"durability":     durability,
		"pool":           fmt.Sprintf("%d connections (database/sql)", pool),
		"layout.ledger":  "InnoDB txs(addr VARBINARY(32) PK, prev, genesis, idx BIGINT UNSIGNED, ts BIGINT, type TINYINT UNSIGNED, payload LONGBLOB) + KEY (genesis, idx); balances(addr PK, amount BIGINT UNSIGNED)",
		"layout.ycsb":    "InnoDB usertable(ycsb_key VARCHAR(255) utf8mb4_bin PK, field0..fieldN-1 LONGBLOB)",
		"batch":          fmt.Sprintf("PutTxs: multi-row INSERT ... ON DUPLICATE KEY UPDATE of up to %d rows / %d KiB (autocommit when one statement, else one transaction); PutBalances: %d rows per statement in one transaction", maxRows, s.maxPacket>>10, balanceRows),
		"chain_read":     "SELECT ... WHERE genesis = ? ORDER BY idx (index txs_chain)",
		"pointselect":    "one connection per load goroutine with the SELECT prepared on it",
	}
	return nil
}

// NewSelectConn implements pointselect.Selecter: a connection of its own
// (outside the pool) with "SELECT value FROM table WHERE key = ?"
// prepared.
func (s *Store) NewSelectConn(ctx context.Context, table, key, value string) (pointselect.SelectConn, error) {
	conn, err := mysql.NewConnector(s.cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	quote := func(id string) string { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }
	q := "SELECT " + quote(value) + " FROM " + quote(table) + " WHERE " + quote(key) + " = ?"
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql: preparing %s: %s", q, err)
	}
	return &selectConn{db: db, st: st}, nil
}

// selectConn runs the prepared point select on its own connection.
type selectConn struct {
	db *sql.DB
	st *sql.Stmt
}

// Select implements pointselect.SelectConn.
func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	var v sql.NullInt64
	err := c.st.QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v.Int64, err == nil, err
}

// Close implements pointselect.SelectConn.
func (c *selectConn) Close() error {
	c.st.Close()
	return c.db.Close()
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the statements and the pool.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.getTx, s.chain, s.getBalance} {
		if st != nil {
			st.Close()
		}
	}
	s.putTxs.close()
	s.putBalances.close()
	s.mu.Lock()
	if s.ycsb != nil {
		s.ycsb.close()
	}
	s.mu.Unlock()
	return s.db.Close()
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

var argsPool = sync.Pool{New: func() any { return new([]any) }}

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

// nonNil turns a nil slice into an empty one: the driver sends nil as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
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

// ycsbStmts are the prepared statements of a usertable of n fields.
type ycsbStmts struct {
	n                  int
	insert, read, scan *sql.Stmt
	updates            stmtCache // by field mask (tables of up to 30 fields)
	cols               string
}

func (y *ycsbStmts) close() {
	for _, st := range []*sql.Stmt{y.insert, y.read, y.scan} {
		if st != nil {
			st.Close()
		}
	}
	y.updates.close()
}

func (s *Store) statements() (*ycsbStmts, error) {
	s.mu.RLock()
	y := s.ycsb
	s.mu.RUnlock()
	if y == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return y, nil
}

// Init implements ycsb.DB: it drops and recreates usertable.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ycsb != nil {
		s.ycsb.close()
		s.ycsb = nil
	}
	var ddl, cols, marks strings.Builder
	ddl.WriteString("CREATE TABLE usertable (ycsb_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY")
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&ddl, ", field%d LONGBLOB", i)
		if i > 0 {
			cols.WriteString(", ")
		}
		fmt.Fprintf(&cols, "field%d", i)
		marks.WriteString(",?")
	}
	ddl.WriteString(") ENGINE=InnoDB")
	for _, q := range []string{"DROP TABLE IF EXISTS usertable", ddl.String()} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	y := &ycsbStmts{n: fieldCount, cols: cols.String()}
	var err error
	if y.insert, err = s.db.PrepareContext(ctx, "INSERT INTO usertable (ycsb_key, "+y.cols+") VALUES (?"+marks.String()+")"); err != nil {
		return err
	}
	if y.read, err = s.db.PrepareContext(ctx, "SELECT "+y.cols+" FROM usertable WHERE ycsb_key = ?"); err != nil {
		y.close()
		return err
	}
	if y.scan, err = s.db.PrepareContext(ctx, "SELECT ycsb_key, "+y.cols+" FROM usertable WHERE ycsb_key >= ? ORDER BY ycsb_key LIMIT ?"); err != nil {
		y.close()
		return err
	}
	s.ycsb = y
	return nil
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	y, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) != y.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), y.n)
	}
	ap := argsPool.Get().(*[]any)
	args := append((*ap)[:0], key)
	for _, f := range fields {
		args = append(args, nonNil(f))
	}
	_, err = y.insert.ExecContext(ctx, args...)
	clear(args)
	*ap = args[:0]
	argsPool.Put(ap)
	return err
}

// Update implements ycsb.DB: an UPDATE of the non-nil fields only.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	y, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > y.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), y.n)
	}
	ap := argsPool.Get().(*[]any)
	defer argsPool.Put(ap)
	args := (*ap)[:0]
	mask := 0
	for i, f := range fields {
		if f != nil {
			args = append(args, f)
			if i < 30 {
				mask |= 1 << i
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	args = append(args, key)
	defer func() { clear(args); *ap = args[:0] }()
	build := func() string {
		var set strings.Builder
		for i, f := range fields {
			if f == nil {
				continue
			}
			if set.Len() > 0 {
				set.WriteString(", ")
			}
			fmt.Fprintf(&set, "field%d = ?", i)
		}
		return "UPDATE usertable SET " + set.String() + " WHERE ycsb_key = ?"
	}
	var res sql.Result
	if len(fields) <= 30 {
		st, err := y.updates.get(s.db, mask, build)
		if err != nil {
			return err
		}
		if res, err = st.ExecContext(ctx, args...); err != nil {
			return err
		}
	} else if res, err = s.db.ExecContext(ctx, build(), args...); err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return nil
}

// scratchPool holds the per-call scan destinations of records.
var scratchPool targetkit.ScratchPool[sql.RawBytes]

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	y, err := s.statements()
	if err != nil {
		return nil, err
	}
	rows, err := y.read.QueryContext(ctx, key)
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
	sc := scratchPool.Get(y.n)
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
	y, err := s.statements()
	if err != nil {
		return err
	}
	rows, err := y.scan.QueryContext(ctx, start, count)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := scratchPool.Get(1 + y.n)
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
