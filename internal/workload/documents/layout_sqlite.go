package documents

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"storebench/internal/target"
)

// The documents layout on SQLite (target.SQLDriver with its write lock):
// the documents as JSON text, read and written with SQLite's JSON
// functions, in the target's database:
//
//	perfN(doc TEXT NOT NULL), UNIQUE INDEX perfN_id ON perfN (json_extract(doc, '$._id'))
//
// Every statement filters on that same expression, so SQLite uses the
// index. Writes go through one connection of the layout's own behind the
// target's write lock (the one its kv writes hold), reads through a pool
// of connections, as for the key-value layout. A step's connections are
// its own: Execute closes the layout when the step ends.

const sqliteIDExpr = `json_extract(doc, '$._id')`

// sqliteStore is the documents layout on SQLite for one step.
type sqliteStore struct {
	mu     sync.Locker // the target's write lock
	writer *sql.DB     // one connection
	reader *sql.DB

	// The prepared statements of each collection, made on its first
	// use in the step: cached reads Load them without a lock; smu is
	// taken only to make a collection's (once per collection and step).
	cached sync.Map // string -> *sqliteColl
	smu    sync.Mutex
	stmts  map[string]*sqliteColl
}

type sqliteColl struct {
	insert, update, delete *sql.Stmt // writer
	find                   *sql.Stmt // reader
}

// connectorOnly hides the connector's Close (if any) from sql.DB.Close:
// the connector is the target's.
type connectorOnly struct{ driver.Connector }

func newSQLiteStore(drv target.SQLDriver, wl target.SQLWriteLocker) *sqliteStore {
	s := &sqliteStore{mu: wl.SQLWriteLock(), stmts: map[string]*sqliteColl{}}
	s.writer = sql.OpenDB(connectorOnly{drv.SQLConnector()})
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.reader = sql.OpenDB(connectorOnly{drv.SQLConnector()})
	s.reader.SetMaxIdleConns(64)
	return s
}

// Close closes the layout's statements and connections.
func (s *sqliteStore) Close() error {
	s.smu.Lock()
	for _, c := range s.stmts {
		c.close()
	}
	s.stmts = nil
	s.cached.Range(func(k, _ any) bool { s.cached.Delete(k); return true })
	s.smu.Unlock()
	s.reader.Close()
	return s.writer.Close()
}

func (s *sqliteStore) coll(coll string) (*sqliteColl, error) {
	if !collName.MatchString(coll) {
		return nil, fmt.Errorf("documents: %q is not a plain collection name", coll)
	}
	if c, ok := s.cached.Load(coll); ok {
		return c.(*sqliteColl), nil
	}
	return s.prepareColl(coll)
}

// prepareColl makes a collection's statements, once.
func (s *sqliteStore) prepareColl(coll string) (*sqliteColl, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if c, ok := s.stmts[coll]; ok {
		return c, nil
	}
	t := target.SQLite.Quote(coll)
	c := &sqliteColl{}
	for _, p := range []struct {
		db *sql.DB
		st **sql.Stmt
		q  string
	}{
		{s.writer, &c.insert, "INSERT INTO " + t + " (doc) VALUES (?)"},
		{s.writer, &c.update, "UPDATE " + t + " SET doc = json_set(doc, '$.rnd', ?, '$.v', json_extract(doc, '$.v') + 1) WHERE " + sqliteIDExpr + " = ?"},
		{s.writer, &c.delete, "DELETE FROM " + t + " WHERE " + sqliteIDExpr + " = ?"},
		{s.reader, &c.find, "SELECT doc FROM " + t + " WHERE " + sqliteIDExpr + " = ?"},
	} {
		st, err := p.db.Prepare(p.q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("sqlite: preparing %s: %w", p.q, err)
		}
		*p.st = st
	}
	s.stmts[coll] = c
	s.cached.Store(coll, c)
	return c, nil
}

func (c *sqliteColl) close() {
	for _, st := range []*sql.Stmt{c.insert, c.update, c.delete, c.find} {
		if st != nil {
			st.Close()
		}
	}
}

// PrepareDocuments implements Store.
func (s *sqliteStore) PrepareDocuments(ctx context.Context, colls []string) (string, error) {
	var one int
	if err := s.reader.QueryRowContext(ctx, `SELECT json_extract('{"a":1}', '$.a')`).Scan(&one); err != nil {
		return "", fmt.Errorf("sqlite: this SQLite has no JSON functions: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, coll := range colls {
		if !collName.MatchString(coll) {
			return "", fmt.Errorf("documents: %q is not a plain collection name", coll)
		}
		s.smu.Lock()
		if c, ok := s.stmts[coll]; ok {
			c.close()
			delete(s.stmts, coll)
			s.cached.Delete(coll)
		}
		s.smu.Unlock()
		t := target.SQLite.Quote(coll)
		for _, q := range []string{
			"DROP TABLE IF EXISTS " + t,
			"CREATE TABLE " + t + " (doc TEXT NOT NULL)",
			"CREATE UNIQUE INDEX " + target.SQLite.Quote(coll+"_id") + " ON " + t + " (" + sqliteIDExpr + ")",
		} {
			if _, err := s.writer.ExecContext(ctx, q); err != nil {
				return "", fmt.Errorf("sqlite: %s: %w", q, err)
			}
		}
	}
	return "perfN(doc TEXT, JSON) + CREATE UNIQUE INDEX perfN_id ON perfN (json_extract(doc, '$._id')), before the load", nil
}

// InsertDocuments implements Store: one transaction.
func (s *sqliteStore) InsertDocuments(ctx context.Context, coll string, docs []Doc) error {
	c, err := s.coll(coll)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	ins := tx.StmtContext(ctx, c.insert)
	var b []byte
	for i := range docs {
		b = AppendJSON(b[:0], &docs[i])
		if _, err := ins.ExecContext(ctx, string(b)); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// InsertDocument implements Store.
func (s *sqliteStore) InsertDocument(ctx context.Context, coll string, d *Doc) error {
	c, err := s.coll(coll)
	if err != nil {
		return err
	}
	doc := string(AppendJSON(make([]byte, 0, 128+len(d.Text)), d))
	s.mu.Lock()
	_, err = c.insert.ExecContext(ctx, doc)
	s.mu.Unlock()
	return err
}

// FindDocuments implements Store.
func (s *sqliteStore) FindDocuments(ctx context.Context, coll string, id int64, fn func(*Doc) error) (int64, error) {
	c, err := s.coll(coll)
	if err != nil {
		return 0, err
	}
	rows, err := c.find.QueryContext(ctx, id)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	var raw sql.RawBytes
	var d Doc
	for rows.Next() {
		n++
		if err := rows.Scan(&raw); err != nil {
			return n, err
		}
		if err := ParseJSON(raw, &d); err != nil {
			return n, err
		}
		if err := fn(&d); err != nil {
			return n, err
		}
	}
	return n, rows.Err()
}

func (s *sqliteStore) write(ctx context.Context, st *sql.Stmt, args ...any) (int64, error) {
	s.mu.Lock()
	res, err := st.ExecContext(ctx, args...)
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// UpdateDocument implements Store.
func (s *sqliteStore) UpdateDocument(ctx context.Context, coll string, id, rnd int64) (int64, error) {
	c, err := s.coll(coll)
	if err != nil {
		return 0, err
	}
	return s.write(ctx, c.update, rnd, id)
}

// DeleteDocument implements Store.
func (s *sqliteStore) DeleteDocument(ctx context.Context, coll string, id int64) (int64, error) {
	c, err := s.coll(coll)
	if err != nil {
		return 0, err
	}
	return s.write(ctx, c.delete, id)
}

// DocumentStats implements Store.
func (s *sqliteStore) DocumentStats(ctx context.Context, coll string) (int64, int64, error) {
	if !collName.MatchString(coll) {
		return 0, 0, fmt.Errorf("documents: %q is not a plain collection name", coll)
	}
	var n, maxID int64
	err := s.reader.QueryRowContext(ctx, `SELECT count(*), coalesce(max(`+sqliteIDExpr+`), 0) FROM `+target.SQLite.Quote(coll)).Scan(&n, &maxID)
	return n, maxID, err
}

// DocumentIndexes implements Store: sqlite_master.
func (s *sqliteStore) DocumentIndexes(ctx context.Context, coll string) ([]string, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name`, coll)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
