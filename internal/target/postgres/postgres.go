// Package postgres is the storebench target for PostgreSQL, through pgx
// (its native protocol, not database/sql).
//
// Layouts:
//
//	ledger  txs(addr bytea PRIMARY KEY, prev bytea, genesis bytea, idx bigint,
//	            ts bigint, type smallint, payload bytea), index txs_chain (genesis, idx)
//	        balances(addr bytea PRIMARY KEY, amount bigint)
//	ycsb    usertable(ycsb_key varchar COLLATE "C" PRIMARY KEY, field0 bytea, …)
//	        (the workload's own, package ycsb's layout_sql.go, on target.SQLDB)
//
// Every statement is prepared once per connection and cached by pgx
// (QueryExecModeCacheStatement), parameters and results travel in binary.
// PutTxs and PutBalances are one multi-row INSERT … SELECT FROM unnest(…)
// ON CONFLICT DO UPDATE each: one statement, so atomic without a BEGIN,
// and one round trip. Reads scan into driver-owned bytes and copy each
// row into one allocation.
//
// The pointselect workload (pgbench -S shaped) gets a connection of its
// own per load goroutine through PrepareIntSelect.
//
// Durability: the session's synchronous_commit follows the study (on for
// sync, off for async), so the class holds on any server, managed or not.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// moduleVersion is the pgx release in go.mod (the test checks it).
const moduleVersion = "v5.12.0"

const (
	name        = "postgres"
	defaultPool = 16
	// managedClients is how many client connections the managed
	// PostgreSQL accepts (target.Info.ManagedClients).
	managedClients = 100 - 3
	openTimeout    = 4 * time.Second
)

var optionNames = []string{"pool"}

func init() {
	target.Register(target.Info{
		Name:        name,
		Title:       "PostgreSQL",
		Version:     "pgx " + moduleVersion,
		OptionNames: optionNames,
		Server:      "postgres",
		// ManagedClients: the managed server's max_connections (its
		// default, 100) less superuser_reserved_connections (3); checked
		// against the running server by TestManagedClients.
		ManagedClients: managedClients,
		Schemes:        []string{"postgres", "postgresql"},
		Provides:       target.Caps{target.KeyValue, target.OrderedScan, target.Secondary, target.SQL, target.DocumentStore, target.SQLArrays, target.Shared},
		Open:           targetkit.Closer(Open),
	})
}

// Store is an open connection pool. It implements target.SQLDB (on which
// the ledger and ycsb workloads keep their tables) and is safe
// for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	connCfg  *pgx.ConnConfig
	settings map[string]string
}

// Open connects to o.URI (postgres://user[:password]@host:port/db) and
// creates the ledger tables if they are missing.
func Open(o target.Options) (*Store, error) { return targetkit.OpenServer(name, o, open) }

func open(o target.Options) (*Store, error) {
	sv, err := targetkit.ServerOptions(o.Durability, o.Extra, o.URI, optionNames, max(defaultPool, o.Concurrency), "postgres://user@host:port/db")
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
	// Sessions say they are ours, unless the URI names them otherwise.
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "storebench"
	}

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
	return &Store{pool: p, connCfg: cfg.ConnConfig, settings: map[string]string{
		"server":         redact.Text(o.URI),
		"server_version": version,
		"client":         "pgx " + moduleVersion + " (native protocol, binary format, statements prepared and cached per connection)",
		"durability":     "synchronous_commit=" + commit + " per session (server fsync=" + fsync + ")",
		"pool":           fmt.Sprintf("%d connections (pgxpool)", pool),
		"layout.ledger":  "txs(addr bytea PK, prev, genesis, idx bigint, ts bigint, type smallint, payload bytea) + index (genesis, idx); balances(addr bytea PK, amount bigint, uint64 bits)",
		"layout.ycsb":    `usertable(ycsb_key varchar COLLATE "C" PK, field0..fieldN-1 bytea)`,
		"layout.geo":     geoLayoutBTree,
		"batch":          "PutTxs, PutBalances: one INSERT ... SELECT FROM unnest(arrays) ON CONFLICT DO UPDATE (one atomic statement, one round trip)",
		"chain_read":     "SELECT ... WHERE genesis = $1 ORDER BY idx (index txs_chain)",
		"pointselect":    "one connection per load goroutine, the SELECT prepared once, executed through pgconn with binary parameters and results (no allocation per select)",
	}}, nil
}

// Settings implements kv.Describer.
func (s *Store) Settings() map[string]string { return s.settings }

// PostgresPool implements conn.Postgres (on which the geo workload keeps
// its B-tree layout).
func (s *Store) PostgresPool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}
