package postgres

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"storebench/internal/workload/documents"
)

// The documents layout (mongodb-performance-test's documents in jsonb):
//
//	perfN(doc jsonb NOT NULL), UNIQUE INDEX perfN_id ON perfN (((doc->>'_id')::bigint))
//
// Every query filters on that same expression, so it uses the index, as
// a MongoDB find by _id does. Update is one statement that sets rnd and
// increments v inside the document (doc || jsonb_build_object(...)).

var collName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

const idExpr = `((doc->>'_id')::bigint)`

func docTable(coll string) (string, error) {
	if !collName.MatchString(coll) {
		return "", fmt.Errorf("documents: %q is not a plain collection name", coll)
	}
	return pgx.Identifier{coll}.Sanitize(), nil
}

// PrepareDocuments implements documents.Store.
func (s *Store) PrepareDocuments(ctx context.Context, colls []string) (string, error) {
	for _, c := range colls {
		t, err := docTable(c)
		if err != nil {
			return "", err
		}
		for _, q := range []string{
			"DROP TABLE IF EXISTS " + t,
			"CREATE TABLE " + t + " (doc jsonb NOT NULL)",
			"CREATE UNIQUE INDEX " + pgx.Identifier{c + "_id"}.Sanitize() + " ON " + t + " (" + idExpr + ")",
		} {
			if _, err := s.pool.Exec(ctx, q); err != nil {
				return "", fmt.Errorf("%s: %w", q, err)
			}
		}
	}
	return "CREATE UNIQUE INDEX perfN_id ON perfN (((doc->>'_id')::bigint)) (btree), before the load", nil
}

// InsertDocuments implements documents.Store: one INSERT of the batch.
func (s *Store) InsertDocuments(ctx context.Context, coll string, docs []documents.Doc) error {
	t, err := docTable(coll)
	if err != nil {
		return err
	}
	all := make([]string, len(docs))
	var b []byte
	for i := range docs {
		b = documents.AppendJSON(b[:0], &docs[i])
		all[i] = string(b)
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO "+t+" (doc) SELECT unnest($1::text[])::jsonb", all)
	return err
}

// InsertDocument implements documents.Store.
func (s *Store) InsertDocument(ctx context.Context, coll string, d *documents.Doc) error {
	t, err := docTable(coll)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO "+t+" (doc) VALUES ($1::text::jsonb)", string(documents.AppendJSON(make([]byte, 0, 128+len(d.Text)), d)))
	return err
}

// FindDocuments implements documents.Store.
func (s *Store) FindDocuments(ctx context.Context, coll string, id int64, fn func(*documents.Doc) error) (int64, error) {
	t, err := docTable(coll)
	if err != nil {
		return 0, err
	}
	rows, err := s.pool.Query(ctx, "SELECT doc::text FROM "+t+" WHERE "+idExpr+" = $1", id)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	var d documents.Doc
	for rows.Next() {
		n++
		if err := documents.ParseJSON(rows.RawValues()[0], &d); err != nil {
			return n, err
		}
		if err := fn(&d); err != nil {
			return n, err
		}
	}
	return n, rows.Err()
}

// UpdateDocument implements documents.Store.
func (s *Store) UpdateDocument(ctx context.Context, coll string, id, rnd int64) (int64, error) {
	t, err := docTable(coll)
	if err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, "UPDATE "+t+" SET doc = doc || jsonb_build_object('rnd', $2::bigint, 'v', (doc->>'v')::int + 1) WHERE "+idExpr+" = $1", id, rnd)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// DeleteDocument implements documents.Store.
func (s *Store) DeleteDocument(ctx context.Context, coll string, id int64) (int64, error) {
	t, err := docTable(coll)
	if err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM "+t+" WHERE "+idExpr+" = $1", id)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// DocumentStats implements documents.Store.
func (s *Store) DocumentStats(ctx context.Context, coll string) (int64, int64, error) {
	t, err := docTable(coll)
	if err != nil {
		return 0, 0, err
	}
	var n, maxID int64
	err = s.pool.QueryRow(ctx, "SELECT count(*), coalesce(max("+idExpr+"), 0) FROM "+t).Scan(&n, &maxID)
	return n, maxID, err
}

// DocumentIndexes implements documents.Store: pg_indexes.
func (s *Store) DocumentIndexes(ctx context.Context, coll string) ([]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", coll)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
