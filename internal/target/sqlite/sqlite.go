//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/mattn/go-sqlite3"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

var (
	openFunc    = Open
	unavailable = ""
)

// goSQLite3Version is the driver's version in go.mod (a test in package
// all checks that they agree).
const goSQLite3Version = "v1.14.53"

func version() string {
	lib, _, _ := sqlite3.Version()
	return lib + " (" + linkage + "; go-sqlite3 " + goSQLite3Version + ")"
}

const (
	fileName = "kv.db"
	schema   = `CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID`
	// busyTimeoutMS only matters for the rare lock our write mutex does not
	// cover: readers briefly locking against a checkpoint or a VACUUM.
	busyTimeoutMS = 10000
	// defaultReaderConns bounds the idle reader connections kept open; each
	// connection has its own page cache and prepared statements.
	defaultReaderConns = 32
)

// Store is an open SQLite database.
//
// SQLite runs one writer at a time per database. Writes go through a
// single connection behind a Go mutex: concurrent writers then queue in Go
// instead of colliding on SQLite's lock, where losers sleep in the busy
// handler (or fail with SQLITE_BUSY), which would measure back-off sleeps
// rather than SQLite. Reads use a separate pool of connections, which WAL
// mode lets run alongside the writer. The split also means a Scan callback
// holding a reader never blocks a write.
type Store struct {
	path string

	mu     sync.Mutex // serialises writes, and Sync against writes
	writer *sql.DB    // one connection
	put    *sql.Stmt
	del    *sql.Stmt

	reader    *sql.DB
	get       *sql.Stmt
	scan      *sql.Stmt // [lower, +inf)
	scanRange *sql.Stmt // [lower, upper)

	settings map[string]string

	// sqlConn opens the SQL workloads' connections (sqldriver.go).
	sqlConn *connector
}

// Open opens or creates kv.db in o.Dir.
//
// Options (Extra): mmap_bytes (PRAGMA mmap_size; default 0, SQLite's
// default of reading pages with read(2)), reader_conns (idle reader
// connections kept, default 32).
func Open(o kv.Options) (kv.Store, error) { return targetkit.Open("sqlite", o, open) }

func open(o kv.Options) (*Store, error) {
	eo, err := targetkit.EmbeddedOptions(o, optionNames)
	if err != nil {
		return nil, err
	}
	sync, cacheBytes, cacheDesc, extra := eo.Sync, eo.CacheBytes, eo.CacheDesc, eo.Extra
	mmap, err := extra.Bytes("mmap_bytes", 0)
	if err != nil {
		return nil, err
	}
	readerConns, err := extra.Int("reader_conns", defaultReaderConns)
	if err != nil {
		return nil, err
	}
	if err := targetkit.PrepareDir(o.Dir); err != nil {
		return nil, err
	}

	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{path: filepath.Join(dir, fileName)}
	// synchronous=FULL fsyncs the WAL at every commit; OFF never fsyncs,
	// leaving writes to the OS (and Sync below).
	synchronous := "OFF"
	if sync {
		synchronous = "FULL"
	}
	if err := s.connect(cacheBytes, mmap, synchronous, readerConns); err != nil {
		s.closeAll()
		return nil, err
	}

	for _, p := range []struct {
		db    *sql.DB
		stmt  **sql.Stmt
		query string
	}{
		{s.writer, &s.put, `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`},
		{s.writer, &s.del, `DELETE FROM kv WHERE k = ?`},
		{s.reader, &s.get, `SELECT v FROM kv WHERE k = ?`},
		{s.reader, &s.scan, `SELECT k, v FROM kv WHERE k >= ? ORDER BY k`},
		{s.reader, &s.scanRange, `SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k`},
	} {
		if *p.stmt, err = p.db.Prepare(p.query); err != nil {
			s.closeAll()
			return nil, fmt.Errorf("prepare %q: %w", p.query, err)
		}
	}

	mmapDesc := "off"
	if mmap > 0 {
		mmapDesc = targetkit.FormatBytes(mmap)
	}
	s.settings = map[string]string{
		"durability":   targetkit.DurabilitySetting(sync),
		"cache":        cacheDesc + " page cache per connection",
		"bloom_filter": "none (B-tree)",
		"compression":  "none",
		"journal_mode": "WAL",
		"synchronous":  synchronous,
		"mmap_size":    mmapDesc,
		"schema":       "kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
		"writers":      "one at a time (one connection behind a Go mutex)",
	}
	return s, nil
}

// connect opens the store's connections: the one writer (WAL, taking the
// write lock at BEGIN), which makes the schema, the connector the SQL
// sessions use, and the read-only pool of readers, each with the page
// cache and mmap asked for. On an error the caller closes what it opened.
func (s *Store) connect(cacheBytes, mmap int64, synchronous string, readerConns int) error {
	common := url.Values{}
	common.Set("_busy_timeout", fmt.Sprint(busyTimeoutMS))
	// Negative cache_size is in KiB; the cache is per connection.
	common.Set("_cache_size", fmt.Sprint(-cacheBytes/1024))
	common.Set("_stmt_cache_size", "0") // we prepare our statements once

	w := cloneValues(common)
	w.Set("_journal_mode", "WAL")
	w.Set("_synchronous", synchronous)
	// A batch takes the write lock at BEGIN, not at its first write.
	w.Set("_txlock", "immediate")
	s.writer = sql.OpenDB(newConnector(dsn(s.path, w), mmap))
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	if _, err := s.writer.Exec(schema); err != nil {
		return err
	}

	q := cloneValues(common)
	q.Set("_synchronous", synchronous)
	s.sqlConn = newConnector(dsn(s.path, q), mmap)

	r := cloneValues(common)
	r.Set("_query_only", "true")
	s.reader = sql.OpenDB(newConnector(dsn(s.path, r), mmap))
	s.reader.SetMaxIdleConns(readerConns)
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// dsn builds a file: URI, escaping the path so that a directory name
// holding '?', '#' or '%' cannot be read as URI syntax.
func dsn(path string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: path, RawQuery: params.Encode()}
	return u.String()
}

// connector opens go-sqlite3 connections for database/sql, running the
// per-connection pragma go-sqlite3 has no DSN parameter for (mmap_size).
type connector struct {
	drv *sqlite3.SQLiteDriver
	dsn string
}

func newConnector(dsn string, mmap int64) *connector {
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if mmap <= 0 {
			return nil
		}
		_, err := c.Exec(fmt.Sprintf("PRAGMA mmap_size = %d", mmap), nil)
		return err
	}}
	return &connector{drv: drv, dsn: dsn}
}

func (c *connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c *connector) Driver() driver.Driver                        { return c.drv }

func (s *Store) closeAll() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.put, s.del, s.get, s.scan, s.scanRange} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	return errors.Join(errs...)
}

// Get returns a copy of the value under key (database/sql copies it).
func (s *Store) Get(key []byte) ([]byte, error) {
	var v []byte
	err := s.get.QueryRow(key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get: %w", err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// notNull maps a nil value to an empty one: go-sqlite3 binds a nil []byte
// as NULL, which the NOT NULL column rejects, while the contract treats a
// nil value as empty.
func notNull(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// Put stores value under key (an autocommit upsert).
func (s *Store) Put(key, value []byte) error {
	s.mu.Lock()
	_, err := s.put.Exec(key, notNull(value))
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sqlite: put: %w", err)
	}
	return nil
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	s.mu.Lock()
	_, err := s.del.Exec(key)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sqlite: delete: %w", err)
	}
	return nil
}

// NewBatch buffers writes and applies them in one transaction.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

type batch struct {
	s *Store
	targetkit.Ops
}

func (b *batch) Commit() error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.Committed("sqlite", b.commit())
}

func (b *batch) commit() error {
	tx, err := b.s.writer.Begin()
	if err != nil {
		return err
	}
	put, del := tx.Stmt(b.s.put), tx.Stmt(b.s.del)
	err = b.Apply(func(k, v []byte) error {
		_, err := put.Exec(k, v)
		return err
	}, func(k []byte) error {
		_, err := del.Exec(k)
		return err
	})
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Scan iterates [lower, upper) with one SELECT, which reads a consistent
// snapshot. Keys and values are handed over as sql.RawBytes, avoiding a
// second copy of each row.
func (s *Store) Scan(lower, upper []byte, fn func(key, value []byte) bool) error {
	if lower == nil {
		lower = []byte{} // nil would bind NULL, and k >= NULL matches nothing
	}
	var rows *sql.Rows
	var err error
	if upper == nil {
		rows, err = s.scan.Query(lower)
	} else {
		rows, err = s.scanRange.Query(lower, upper)
	}
	if err != nil {
		return fmt.Errorf("sqlite: scan: %w", err)
	}
	defer rows.Close()
	var k, v sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("sqlite: scan: %w", err)
		}
		if !fn(k, v) {
			break
		}
	}
	return targetkit.Wrap("sqlite: scan", rows.Err())
}

// Sync makes earlier writes durable when synchronous=OFF. SQLite has no
// call for it, but every commit has reached the OS by then: holding the
// write mutex (so no commit or checkpoint is under way) we fsync the WAL,
// the database file and the directory.
func (s *Store) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := targetkit.SyncFiles(filepath.Dir(s.path), fileName+"-wal"); err != nil {
		return fmt.Errorf("sqlite: sync: %w", err)
	}
	return targetkit.Wrap("sqlite: sync", targetkit.SyncFiles(filepath.Dir(s.path), fileName))
}

// Compact rebuilds the database file with VACUUM.
func (s *Store) Compact() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.writer.Exec("VACUUM"); err != nil {
		return fmt.Errorf("sqlite: vacuum: %w", err)
	}
	return nil
}

// Settings reports the configuration that matters for reading results.
func (s *Store) Settings() map[string]string { return s.settings }

// Close closes both connection pools; the last one to close checkpoints
// the WAL into the database file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return targetkit.Wrap("sqlite: close", s.closeAll())
}
