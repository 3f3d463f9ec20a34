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
//	        (the workload's own, package ycsb's layout_sql.go, on target.SQLDB)
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
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the driver release in go.mod (the test checks it).
const moduleVersion = "v1.10.1"

const (
	name        = "mysql"
	defaultPool = 16
	openTimeout = 4 * time.Second
	defaultDB   = "storebench"
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
		Provides:    target.Caps{target.KeyValue, target.OrderedScan, target.Secondary, target.SQL, target.Shared},
		Open:        targetkit.Closer(Open),
	})
}

// Store is an open connection pool. It implements target.SQLDB and
// target.SQLTransactor (on which the ledger and ycsb workloads keep their
// tables) and is safe
// for concurrent use.
type Store struct {
	db        *sql.DB
	cfg       *mysql.Config
	settings  map[string]string
	maxPacket int

	// noLean is set when the SQL sessions go to go-sql-driver
	// (session.go): the server asked for an authentication method the
	// lean client does not speak.
	noLean atomic.Bool

	// the statements of the workloads' tables (target.SQLDB, sqldb.go)
	prepared prepared
}

type quietLogger struct{}

func (quietLogger) Print(...any) {}

// Open connects to o.URI (mysql://user[:password]@host:port/db; the
// database, storebench by default, is created if missing) and creates the
// ledger tables if they are missing.
func Open(o target.Options) (*Store, error) { return targetkit.OpenServer(name, o, open) }

// config turns a mysql:// URI into the driver's configuration (never into
// a DSN string, which would carry the password around).
func config(uri string) (*mysql.Config, error) {
	u, err := targetkit.ParseURI(uri, "mysql://")
	if err != nil {
		return nil, err
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
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), "mysql://user@host:port/db")
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
	s.maxPacket = min(maxPacket/2, maxStmtBytes)
	s.settings = map[string]string{
		"server":         redact.Text(uri),
		"server_version": version,
		"client":         "go-sql-driver/mysql " + moduleVersion + " (database/sql, server-side prepared statements)",
		"durability":     durability,
		"pool":           fmt.Sprintf("%d connections (database/sql)", pool),
		"layout.ledger":  "InnoDB txs(addr VARBINARY(32) PK, prev, genesis, idx BIGINT UNSIGNED, ts BIGINT, type TINYINT UNSIGNED, payload LONGBLOB) + KEY (genesis, idx); balances(addr PK, amount BIGINT UNSIGNED)",
		"layout.ycsb":    "InnoDB usertable(ycsb_key VARCHAR(255) utf8mb4_bin PK, field0..fieldN-1 LONGBLOB)",
		"batch":          fmt.Sprintf("PutTxs: multi-row INSERT ... ON DUPLICATE KEY UPDATE of up to %d rows / %d KiB (autocommit when one statement, else one transaction); PutBalances: %d rows per statement in one transaction", maxRows, s.maxPacket>>10, balanceRows),
		"chain_read":     "SELECT ... WHERE genesis = ? ORDER BY idx (index txs_chain)",
		"pointselect":    "one connection per load goroutine with the SELECT prepared on it",
		"oltp":           "one connection per load goroutine, sysbench's statements prepared on it; on plain TCP storebench's own protocol client (binary prepared statements, one write and one read per statement), else go-sql-driver",
	}
	return nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes the statements and the pool.
func (s *Store) Close() error {
	s.prepared.close()
	return s.db.Close()
}

// The ledger layout's statement sizes (workload/ledger's layout_sql.go),
// for its settings.
const (
	maxRows      = 128
	maxStmtBytes = 8 << 20
	balanceRows  = 1000
)
