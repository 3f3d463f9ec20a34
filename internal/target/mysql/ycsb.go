package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

// The YCSB layout: usertable, recreated by Init, its prepared statements,
// and the ycsb.DB and ycsb.Scanner methods.

// ycsbStmts are the prepared statements of a usertable of n fields.
type ycsbStmts struct {
	n                  int
	insert, read, scan *sql.Stmt
	updates            stmtCache // by field mask (tables of up to 30 fields)
	cols               string
}

func (y *ycsbStmts) close() {
	for _, st := range []*sql.Stmt{y.insert, y.read, y.scan} {
		if st != nil {
			st.Close()
		}
	}
	y.updates.close()
}

// closeYCSB closes the statements of the table Init made.
func (s *Store) closeYCSB() {
	s.mu.Lock()
	if s.ycsb != nil {
		s.ycsb.close()
	}
	s.mu.Unlock()
}

func (s *Store) statements() (*ycsbStmts, error) {
	s.mu.RLock()
	y := s.ycsb
	s.mu.RUnlock()
	if y == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return y, nil
}

// Init implements ycsb.DB: it drops and recreates usertable.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ycsb != nil {
		s.ycsb.close()
		s.ycsb = nil
	}
	var ddl, cols, marks strings.Builder
	ddl.WriteString("CREATE TABLE usertable (ycsb_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY")
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&ddl, ", field%d LONGBLOB", i)
		if i > 0 {
			cols.WriteString(", ")
		}
		fmt.Fprintf(&cols, "field%d", i)
		marks.WriteString(",?")
	}
	ddl.WriteString(") ENGINE=InnoDB")
	for _, q := range []string{"DROP TABLE IF EXISTS usertable", ddl.String()} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	y := &ycsbStmts{n: fieldCount, cols: cols.String()}
	var err error
	if y.insert, err = s.db.PrepareContext(ctx, "INSERT INTO usertable (ycsb_key, "+y.cols+") VALUES (?"+marks.String()+")"); err != nil {
		return err
	}
	if y.read, err = s.db.PrepareContext(ctx, "SELECT "+y.cols+" FROM usertable WHERE ycsb_key = ?"); err != nil {
		y.close()
		return err
	}
	if y.scan, err = s.db.PrepareContext(ctx, "SELECT ycsb_key, "+y.cols+" FROM usertable WHERE ycsb_key >= ? ORDER BY ycsb_key LIMIT ?"); err != nil {
		y.close()
		return err
	}
	s.ycsb = y
	return nil
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	y, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) != y.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), y.n)
	}
	ap := argsPool.Get().(*[]any)
	args := append((*ap)[:0], key)
	for _, f := range fields {
		args = append(args, nonNil(f))
	}
	_, err = y.insert.ExecContext(ctx, args...)
	clear(args)
	*ap = args[:0]
	argsPool.Put(ap)
	return err
}

// Update implements ycsb.DB: an UPDATE of the non-nil fields only.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	y, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > y.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), y.n)
	}
	ap := argsPool.Get().(*[]any)
	defer argsPool.Put(ap)
	args := (*ap)[:0]
	mask := 0
	for i, f := range fields {
		if f != nil {
			args = append(args, f)
			if i < 30 {
				mask |= 1 << i
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	args = append(args, key)
	defer func() { clear(args); *ap = args[:0] }()
	build := func() string {
		var set strings.Builder
		for i, f := range fields {
			if f == nil {
				continue
			}
			if set.Len() > 0 {
				set.WriteString(", ")
			}
			fmt.Fprintf(&set, "field%d = ?", i)
		}
		return "UPDATE usertable SET " + set.String() + " WHERE ycsb_key = ?"
	}
	var res sql.Result
	if len(fields) <= 30 {
		st, err := y.updates.get(s.db, mask, build)
		if err != nil {
			return err
		}
		if res, err = st.ExecContext(ctx, args...); err != nil {
			return err
		}
	} else if res, err = s.db.ExecContext(ctx, build(), args...); err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return nil
}

// scratchPool holds the per-call scan destinations of records.
var scratchPool targetkit.ScratchPool[sql.RawBytes]

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	y, err := s.statements()
	if err != nil {
		return nil, err
	}
	rows, err := y.read.QueryContext(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	sc := scratchPool.Get(y.n)
	defer scratchPool.Put(sc)
	if err := rows.Scan(sc.Dest...); err != nil {
		return nil, err
	}
	out := targetkit.CopyFields(sc.Vals)
	rows.Close()
	return out, rows.Err()
}

// Scan implements ycsb.Scanner: count records from start in key order.
func (s *Store) Scan(ctx context.Context, start []byte, count int, fn func(key []byte, fields [][]byte) bool) error {
	y, err := s.statements()
	if err != nil {
		return err
	}
	rows, err := y.scan.QueryContext(ctx, start, count)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := scratchPool.Get(1 + y.n)
	defer scratchPool.Put(sc)
	for rows.Next() {
		if err := rows.Scan(sc.Dest...); err != nil {
			return err
		}
		rec := targetkit.CopyFields(sc.Vals)
		if !fn(rec[0], rec[1:]) {
			return nil
		}
	}
	return rows.Err()
}
