package mysql

import (
	"context"
	"database/sql"

	"storebench/internal/target"
)

// sqlTx is a transaction of the workloads' statements (target.SQLTx).
type sqlTx struct {
	s  *Store
	tx *sql.Tx
}

// BeginSQL implements target.SQLTransactor.
func (s *Store) BeginSQL(ctx context.Context) (target.SQLTx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return sqlTx{s: s, tx: tx}, nil
}

// Exec implements target.SQLTx: the statement prepared on the pool, run
// on the transaction's connection.
func (t sqlTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	st, err := t.s.prepared.get(ctx, t.s.db, q)
	if err != nil {
		return 0, err
	}
	var res sql.Result
	if st != nil {
		res, err = t.tx.StmtContext(ctx, st.Stmt).ExecContext(ctx, args...)
	} else {
		res, err = t.tx.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) Commit() error   { return t.tx.Commit() }
func (t sqlTx) Rollback() error { return t.tx.Rollback() }
