package mysql

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"storebench/internal/target"
	"storebench/internal/target/internal/targetkit"
)

// The SQL primitive (target.SQLDB) the workloads' tables run on: their
// statements, each prepared once on the pool and kept.

// maxPrepared bounds the statements kept: beyond, a statement runs
// unprepared (a workload that builds statements without bound).
const maxPrepared = 1024

// prepared holds the pool's prepared statements by text; lookups take no
// lock.
type prepared struct {
	mu    sync.Mutex // held while preparing
	n     int
	stmts sync.Map // string -> *stmt
}

// stmt is a prepared statement and the number of columns of its rows,
// learnt from its first query (0 until then).
type stmt struct {
	*sql.Stmt
	cols atomic.Int32
}

// get returns q prepared, or nil when too many are kept already.
func (p *prepared) get(ctx context.Context, db *sql.DB, q string) (*stmt, error) {
	if st, ok := p.stmts.Load(q); ok {
		return st.(*stmt), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts.Load(q); ok {
		return st.(*stmt), nil
	}
	if p.n >= maxPrepared {
		return nil, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s := &stmt{Stmt: st}
	p.stmts.Store(q, s)
	p.n++
	return s, nil
}

func (p *prepared) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stmts.Range(func(k, v any) bool {
		v.(*stmt).Close()
		p.stmts.Delete(k)
		return true
	})
	p.n = 0
}

// ExecDDL implements target.SQLDB.
func (s *Store) ExecDDL(ctx context.Context, stmts ...string) error {
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Exec implements target.SQLDB.
func (s *Store) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	st, err := s.prepared.get(ctx, s.db, q)
	if err != nil {
		return 0, err
	}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = s.db.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// scratchPool holds the per-call scan destinations of rows.
var scratchPool targetkit.ScratchPool[sql.RawBytes]

// Query implements target.SQLDB.
func (s *Store) Query(ctx context.Context, q string, args []any, row func([][]byte) bool) error {
	st, err := s.prepared.get(ctx, s.db, q)
	if err != nil {
		return err
	}
	var rows *sql.Rows
	if st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = s.db.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	var sc *targetkit.Scratch[sql.RawBytes]
	for rows.Next() {
		if sc == nil {
			n := 0
			if st != nil {
				n = int(st.cols.Load())
			}
			if n == 0 {
				cols, err := rows.Columns()
				if err != nil {
					return err
				}
				n = len(cols)
				if st != nil {
					st.cols.Store(int32(n))
				}
			}
			sc = scratchPool.Get(n)
			defer scratchPool.Put(sc)
		}
		if err := rows.Scan(sc.Dest...); err != nil {
			return err
		}
		if !row(sc.Fill()) {
			return nil
		}
	}
	return rows.Err()
}

// SQLDialect implements target.SQLer.
func (s *Store) SQLDialect() target.Dialect { return target.MySQL }
