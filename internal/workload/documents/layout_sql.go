package documents

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"storebench/internal/target"
)

// The documents layout on PostgreSQL (target.SQLDB in its dialect):
// mongodb-performance-test's documents in jsonb,
//
//	perfN(doc jsonb NOT NULL), UNIQUE INDEX perfN_id ON perfN (((doc->>'_id')::bigint))
//
// Every query filters on that same expression, so it uses the index, as
// a MongoDB find by _id does. Update is one statement that sets rnd and
// increments v inside the document (doc || jsonb_build_object(...)).

// pgStore is the documents layout on a PostgreSQL pool.
type pgStore struct {
	db target.SQLDB
	d  target.Dialect
}

var collName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

const idExpr = `((doc->>'_id')::bigint)`

func (s pgStore) docTable(coll string) (string, error) {
	if !collName.MatchString(coll) {
		return "", fmt.Errorf("documents: %q is not a plain collection name", coll)
	}
	return s.d.Quote(coll), nil
}

// PrepareDocuments implements Store.
func (s pgStore) PrepareDocuments(ctx context.Context, colls []string) (string, error) {
	for _, c := range colls {
		t, err := s.docTable(c)
		if err != nil {
			return "", err
		}
		for _, q := range []string{
			"DROP TABLE IF EXISTS " + t,
			"CREATE TABLE " + t + " (doc jsonb NOT NULL)",
			"CREATE UNIQUE INDEX " + s.d.Quote(c+"_id") + " ON " + t + " (" + idExpr + ")",
		} {
			if err := s.db.ExecDDL(ctx, q); err != nil {
				return "", fmt.Errorf("%s: %w", q, err)
			}
		}
	}
	return "CREATE UNIQUE INDEX perfN_id ON perfN (((doc->>'_id')::bigint)) (btree), before the load", nil
}

// InsertDocuments implements Store: one INSERT of the batch.
func (s pgStore) InsertDocuments(ctx context.Context, coll string, docs []Doc) error {
	t, err := s.docTable(coll)
	if err != nil {
		return err
	}
	all := make([]string, len(docs))
	var b []byte
	for i := range docs {
		b = AppendJSON(b[:0], &docs[i])
		all[i] = string(b)
	}
	_, err = s.db.Exec(ctx, "INSERT INTO "+t+" (doc) SELECT unnest($1::text[])::jsonb", all)
	return err
}

// InsertDocument implements Store.
func (s pgStore) InsertDocument(ctx context.Context, coll string, d *Doc) error {
	t, err := s.docTable(coll)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, "INSERT INTO "+t+" (doc) VALUES ($1::text::jsonb)", string(AppendJSON(make([]byte, 0, 128+len(d.Text)), d)))
	return err
}

// FindDocuments implements Store.
func (s pgStore) FindDocuments(ctx context.Context, coll string, id int64, fn func(*Doc) error) (int64, error) {
	t, err := s.docTable(coll)
	if err != nil {
		return 0, err
	}
	var n int64
	var d Doc
	var ferr error
	err = s.db.Query(ctx, "SELECT doc::text FROM "+t+" WHERE "+idExpr+" = $1", []any{id}, func(cols [][]byte) bool {
		n++
		if ferr = ParseJSON(cols[0], &d); ferr != nil {
			return false
		}
		ferr = fn(&d)
		return ferr == nil
	})
	if ferr != nil {
		return n, ferr
	}
	return n, err
}

// UpdateDocument implements Store.
func (s pgStore) UpdateDocument(ctx context.Context, coll string, id, rnd int64) (int64, error) {
	t, err := s.docTable(coll)
	if err != nil {
		return 0, err
	}
	return s.db.Exec(ctx, "UPDATE "+t+" SET doc = doc || jsonb_build_object('rnd', $2::bigint, 'v', (doc->>'v')::int + 1) WHERE "+idExpr+" = $1", id, rnd)
}

// DeleteDocument implements Store.
func (s pgStore) DeleteDocument(ctx context.Context, coll string, id int64) (int64, error) {
	t, err := s.docTable(coll)
	if err != nil {
		return 0, err
	}
	return s.db.Exec(ctx, "DELETE FROM "+t+" WHERE "+idExpr+" = $1", id)
}

// DocumentStats implements Store.
func (s pgStore) DocumentStats(ctx context.Context, coll string) (int64, int64, error) {
	t, err := s.docTable(coll)
	if err != nil {
		return 0, 0, err
	}
	// As text: the figures read the same in every dialect's bytes.
	var n, maxID int64
	var perr error
	err = s.db.Query(ctx, "SELECT count(*)::text, coalesce(max("+idExpr+"), 0)::text FROM "+t, nil, func(cols [][]byte) bool {
		if n, perr = strconv.ParseInt(string(cols[0]), 10, 64); perr == nil {
			maxID, perr = strconv.ParseInt(string(cols[1]), 10, 64)
		}
		return false
	})
	if err == nil {
		err = perr
	}
	return n, maxID, err
}

// DocumentIndexes implements Store: pg_indexes.
func (s pgStore) DocumentIndexes(ctx context.Context, coll string) ([]string, error) {
	var defs []string
	err := s.db.Query(ctx, "SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", []any{coll}, func(cols [][]byte) bool {
		defs = append(defs, string(cols[0]))
		return true
	})
	return defs, err
}
