package oltp

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// SQLConn is the part of a Conn every database/sql target shares: one
// connection of its own with sysbench's statements prepared on every
// table, and the selects and writes run through them. A target embeds it
// and adds its transactions (BEGIN … COMMIT differ: SQLite takes a write
// lock first) and what its driver's errors mean (Classify).
type SQLConn struct {
	// Name prefixes the errors of preparing ("mysql", "sqlite").
	Name string
	// Classify marks the driver's errors that sysbench ignores and
	// retries, and lost connections (see Conn).
	Classify func(error) error

	db    *sql.DB
	conn  *sql.Conn
	stmts [][NumKinds]*sql.Stmt // by table-1
	raw   sql.RawBytes
	sum   sql.NullInt64
}

// Open opens one connection through c and prepares every statement on
// tables tables.
func (s *SQLConn) Open(ctx context.Context, c driver.Connector, tables int) error {
	s.db = sql.OpenDB(c)
	s.db.SetMaxOpenConns(1)
	s.db.SetMaxIdleConns(1)
	var err error
	if s.conn, err = s.db.Conn(ctx); err != nil {
		s.db.Close()
		s.db = nil
		return s.Classify(err)
	}
	s.stmts = make([][NumKinds]*sql.Stmt, tables)
	for t := range s.stmts {
		for k := Kind(0); k < NumKinds; k++ {
			q := Statement(k, t+1)
			if s.stmts[t][k], err = s.conn.PrepareContext(ctx, q); err != nil {
				s.Close()
				return fmt.Errorf("%s: preparing %s: %w", s.Name, q, s.Classify(err))
			}
		}
	}
	return nil
}

// ExecText runs a statement without parameters (BEGIN, COMMIT…).
func (s *SQLConn) ExecText(ctx context.Context, q string) error {
	_, err := s.conn.ExecContext(ctx, q)
	return s.Classify(err)
}

// Select implements Conn.
func (s *SQLConn) Select(ctx context.Context, k Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	st := s.stmts[table-1][k]
	var rows *sql.Rows
	var err error
	if k == PointSelect {
		rows, err = st.QueryContext(ctx, lo)
	} else {
		rows, err = st.QueryContext(ctx, lo, hi)
	}
	if err != nil {
		return s.Classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		if k == SumRange {
			if err := rows.Scan(&s.sum); err != nil {
				return s.Classify(err)
			}
			row(nil, s.sum.Int64, !s.sum.Valid)
			continue
		}
		if err := rows.Scan(&s.raw); err != nil {
			return s.Classify(err)
		}
		row(s.raw, 0, false)
	}
	if err := rows.Err(); err != nil {
		return s.Classify(err)
	}
	return s.Classify(rows.Close())
}

// Exec implements Conn.
func (s *SQLConn) Exec(ctx context.Context, k Kind, table int, a *Args) (int64, error) {
	res, err := s.stmts[table-1][k].ExecContext(ctx, a.Values(k)...)
	if err != nil {
		return 0, s.Classify(err)
	}
	return res.RowsAffected()
}

// Close closes the statements, the connection and its pool.
func (s *SQLConn) Close() error {
	for _, ts := range s.stmts {
		for _, st := range ts {
			if st != nil {
				st.Close()
			}
		}
	}
	s.stmts = nil
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	if s.db != nil {
		err := s.db.Close()
		s.db = nil
		return err
	}
	return nil
}
