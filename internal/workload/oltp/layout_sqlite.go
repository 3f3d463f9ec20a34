package oltp

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"

	"storebench/internal/target"
	"storebench/internal/workload/layout"
)

// The oltp layout on SQLite (target.SQLDriver with its write lock, in the
// same database file as the kv table): sysbench's schema in SQLite's
// dialect, sbtest<N>(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, k
// INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad
// CHAR(60) DEFAULT '' NOT NULL), index k_<N> on k after the load. Each
// load goroutine has a connection of its own with every statement
// prepared. A read-only transaction is a plain BEGIN (WAL readers run
// beside the writer); a writing one takes the target's write lock (the
// one its kv writes use) and then BEGIN IMMEDIATE, so writers queue in Go
// instead of sleeping in SQLite's busy handler, and SQLite's one writer at
// a time is what is measured.

// Layouts are the oltp layouts, in order of preference: the target's
// own (a Store), or this package's on what the target offers
// (MariaDB/MySQL's and PostgreSQL's pools and sessions: layout_sql.go;
// SQLite's driver connections and write lock). Each provides SQL, what
// every oltp step requires.
var Layouts = layout.NewTable("oltp", layout.Needs{All: target.Caps{target.SQL}},
	layout.Layout[Store]{Name: "own", On: "the target's own oltp store (oltp.Store)", Provides: providesSQL,
		Open: func(h any) (Store, bool) { s, ok := h.(Store); return s, ok }},
	layout.Layout[Store]{Name: "sql", On: "MariaDB/MySQL or PostgreSQL with sessions (target.SQLDB, target.SQLSessioner)", Provides: providesSQL,
		Open: func(h any) (Store, bool) {
			s, ok := sqlLayout(h)
			if !ok {
				return nil, false
			}
			return s, true
		}},
	layout.Layout[Store]{Name: "sqlite", On: "SQLite's connections and write lock (target.SQLDriver, target.SQLWriteLocker)", Provides: providesSQL,
		Open: openSQLite},
)

// providesSQL is what every oltp layout gives: SQL statements on tables.
func providesSQL(Store) target.Caps { return target.Caps{target.SQL} }

// openSQLite is the layout on SQLite's driver, with the write lock its
// kv writes take.
func openSQLite(h any) (Store, bool) {
	drv, ok := h.(target.SQLDriver)
	if !ok {
		return nil, false
	}
	if wl, ok := h.(target.SQLWriteLocker); ok && drv.SQLDialect().Name == "sqlite" {
		return &sqliteStore{drv: drv, mu: wl.SQLWriteLock()}, true
	}
	return nil, false
}

// StoreOf finds the oltp layout on a target's handle (Layouts); false
// when there is none.
func StoreOf(h any) (Store, bool) {
	s, _, ok := Layouts.Of(h)
	return s, ok
}

type sqliteStore struct {
	drv target.SQLDriver
	mu  sync.Locker // the target's write lock
}

// connectorOnly hides the connector's Close (if any) from sql.DB.Close:
// the connector is the target's.
type connectorOnly struct{ driver.Connector }

// withDB runs fn on a database/sql handle of one connection of its own,
// holding the write lock.
func (s *sqliteStore) withDB(fn func(db *sql.DB) error) error {
	db := sql.OpenDB(connectorOnly{s.drv.SQLConnector()})
	db.SetMaxOpenConns(1)
	defer db.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(db)
}

// CreateTables implements Store.
func (s *sqliteStore) CreateTables(ctx context.Context, tables int) error {
	return s.withDB(func(db *sql.DB) error {
		for t := 1; t <= tables; t++ {
			for _, q := range []string{
				fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t),
				fmt.Sprintf("CREATE TABLE sbtest%d(\n  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL\n)", t),
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("sqlite: %s: %w", strings.SplitN(q, "(", 2)[0], err)
				}
			}
		}
		return nil
	})
}

// InsertRows implements Store: the batch in one transaction.
func (s *sqliteStore) InsertRows(ctx context.Context, table int, rows []Row) error {
	return s.withDB(func(db *sql.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, Statement(Insert, table))
		if err != nil {
			tx.Rollback()
			return err
		}
		for _, r := range rows {
			if _, err := st.ExecContext(ctx, r.ID, r.K, r.C, r.Pad); err != nil {
				st.Close()
				tx.Rollback()
				return fmt.Errorf("sqlite: inserting into sbtest%d: %w", table, err)
			}
		}
		st.Close()
		return tx.Commit()
	})
}

// CreateIndex implements Store.
func (s *sqliteStore) CreateIndex(ctx context.Context, table int) error {
	return s.withDB(func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", table, table))
		return err
	})
}

// OpenConn implements Store.
func (s *sqliteStore) OpenConn(ctx context.Context, tables int, write bool) (Conn, error) {
	c := &sqliteConn{SQLConn: SQLConn{Name: "sqlite", Classify: s.drv.SQLError}, s: s, tables: tables, write: write}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type sqliteConn struct {
	SQLConn
	s      *sqliteStore
	tables int
	write  bool
	locked bool // holds s.mu, from Begin to Commit or Rollback
}

func (c *sqliteConn) connect(ctx context.Context) error {
	return c.Open(ctx, c.s.drv.SQLConnector(), c.tables)
}

func (c *sqliteConn) unlock() {
	if c.locked {
		c.locked = false
		c.s.mu.Unlock()
	}
}

func (c *sqliteConn) Begin(ctx context.Context) error {
	q := "BEGIN"
	if c.write {
		c.s.mu.Lock()
		c.locked = true
		q = "BEGIN IMMEDIATE"
	}
	err := c.ExecText(ctx, q)
	if err != nil {
		c.unlock()
	}
	return err
}

func (c *sqliteConn) Commit(ctx context.Context) error {
	err := c.ExecText(ctx, "COMMIT")
	if err == nil {
		c.unlock()
	}
	return err
}

func (c *sqliteConn) Rollback(ctx context.Context) error {
	defer c.unlock()
	err := c.ExecText(ctx, "ROLLBACK")
	if err != nil && strings.Contains(err.Error(), "no transaction is active") {
		return nil
	}
	return err
}

// Reconnect implements Conn (an embedded database loses no connection;
// it reopens it all the same).
func (c *sqliteConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *sqliteConn) Close() error {
	c.unlock()
	return c.SQLConn.Close()
}
