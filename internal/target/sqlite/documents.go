//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sync"

	"storebench/internal/workload/documents"
)

// The documents layout (mongodb-performance-test's documents as JSON
// text, read and written with SQLite's JSON functions), in kv.db:
//
//	perfN(doc TEXT NOT NULL), UNIQUE INDEX perfN_id ON perfN (json_extract(doc, '$._id'))
//
// Every statement filters on that same expression, so SQLite uses the
// index. Writes go through the single writer connection behind the
// store's mutex, reads through the reader pool, as for the key-value
// layout.

var collName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

const idExpr = `json_extract(doc, '$._id')`

// docStmts caches the prepared statements of each collection.
type docStmts struct {
	mu sync.Mutex
	m  map[string]*collStmts
}

type collStmts struct {
	insert, update, delete *sql.Stmt // writer
	find                   *sql.Stmt // reader
}

func (s *Store) docStmts(coll string) (*collStmts, error) {
	if !collName.MatchString(coll) {
		return nil, fmt.Errorf("documents: %q is not a plain collection name", coll)
	}
	s.docs.mu.Lock()
	defer s.docs.mu.Unlock()
	if c, ok := s.docs.m[coll]; ok {
		return c, nil
	}
	t := `"` + coll + `"`
	c := &collStmts{}
	for _, p := range []struct {
		db *sql.DB
		st **sql.Stmt
		q  string
	}{
		{s.writer, &c.insert, "INSERT INTO " + t + " (doc) VALUES (?)"},
		{s.writer, &c.update, "UPDATE " + t + " SET doc = json_set(doc, '$.rnd', ?, '$.v', json_extract(doc, '$.v') + 1) WHERE " + idExpr + " = ?"},
		{s.writer, &c.delete, "DELETE FROM " + t + " WHERE " + idExpr + " = ?"},
		{s.reader, &c.find, "SELECT doc FROM " + t + " WHERE " + idExpr + " = ?"},
	} {
		st, err := p.db.Prepare(p.q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("sqlite: preparing %s: %w", p.q, err)
		}
		*p.st = st
	}
	if s.docs.m == nil {
		s.docs.m = map[string]*collStmts{}
	}
	s.docs.m[coll] = c
	return c, nil
}

func (c *collStmts) close() {
	for _, st := range []*sql.Stmt{c.insert, c.update, c.delete, c.find} {
		if st != nil {
			st.Close()
		}
	}
}

// PrepareDocuments implements documents.Store.
func (s *Store) PrepareDocuments(ctx context.Context, colls []string) (string, error) {
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
		s.docs.mu.Lock()
		if c, ok := s.docs.m[coll]; ok {
			c.close()
			delete(s.docs.m, coll)
		}
		s.docs.mu.Unlock()
		t := `"` + coll + `"`
		for _, q := range []string{
			"DROP TABLE IF EXISTS " + t,
			"CREATE TABLE " + t + " (doc TEXT NOT NULL)",
			`CREATE UNIQUE INDEX "` + coll + `_id" ON ` + t + " (" + idExpr + ")",
		} {
			if _, err := s.writer.ExecContext(ctx, q); err != nil {
				return "", fmt.Errorf("sqlite: %s: %w", q, err)
			}
		}
	}
	return "perfN(doc TEXT, JSON) + CREATE UNIQUE INDEX perfN_id ON perfN (json_extract(doc, '$._id')), before the load", nil
}

// InsertDocuments implements documents.Store: one transaction.
func (s *Store) InsertDocuments(ctx context.Context, coll string, docs []documents.Doc) error {
	c, err := s.docStmts(coll)
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
		b = documents.AppendJSON(b[:0], &docs[i])
		if _, err := ins.ExecContext(ctx, string(b)); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// InsertDocument implements documents.Store.
func (s *Store) InsertDocument(ctx context.Context, coll string, d *documents.Doc) error {
	c, err := s.docStmts(coll)
	if err != nil {
		return err
	}
	doc := string(documents.AppendJSON(make([]byte, 0, 128+len(d.Text)), d))
	s.mu.Lock()
	_, err = c.insert.ExecContext(ctx, doc)
	s.mu.Unlock()
	return err
}

// FindDocuments implements documents.Store.
func (s *Store) FindDocuments(ctx context.Context, coll string, id int64, fn func(*documents.Doc) error) (int64, error) {
	c, err := s.docStmts(coll)
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
	var d documents.Doc
	for rows.Next() {
		n++
		if err := rows.Scan(&raw); err != nil {
			return n, err
		}
		if err := documents.ParseJSON(raw, &d); err != nil {
			return n, err
		}
		if err := fn(&d); err != nil {
			return n, err
		}
	}
	return n, rows.Err()
}

func (s *Store) docWrite(ctx context.Context, st *sql.Stmt, args ...any) (int64, error) {
	s.mu.Lock()
	res, err := st.ExecContext(ctx, args...)
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// UpdateDocument implements documents.Store.
func (s *Store) UpdateDocument(ctx context.Context, coll string, id, rnd int64) (int64, error) {
	c, err := s.docStmts(coll)
	if err != nil {
		return 0, err
	}
	return s.docWrite(ctx, c.update, rnd, id)
}

// DeleteDocument implements documents.Store.
func (s *Store) DeleteDocument(ctx context.Context, coll string, id int64) (int64, error) {
	c, err := s.docStmts(coll)
	if err != nil {
		return 0, err
	}
	return s.docWrite(ctx, c.delete, id)
}

// DocumentStats implements documents.Store.
func (s *Store) DocumentStats(ctx context.Context, coll string) (int64, int64, error) {
	if !collName.MatchString(coll) {
		return 0, 0, fmt.Errorf("documents: %q is not a plain collection name", coll)
	}
	var n, maxID int64
	err := s.reader.QueryRowContext(ctx, `SELECT count(*), coalesce(max(`+idExpr+`), 0) FROM "`+coll+`"`).Scan(&n, &maxID)
	return n, maxID, err
}

// DocumentIndexes implements documents.Store: sqlite_master.
func (s *Store) DocumentIndexes(ctx context.Context, coll string) ([]string, error) {
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
