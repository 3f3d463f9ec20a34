package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"storebench/internal/kv"
	"storebench/internal/target/internal/targetkit"
)

// The YCSB layout: usertable, recreated by Init, its statements, and the
// ycsb.DB and ycsb.Scanner methods.

// ycsbSQL holds the statements for a usertable of n fields.
type ycsbSQL struct {
	n       int
	insert  string
	read    string
	scan    string
	updates sync.Map // field mask (uint64) -> UPDATE statement
}

func newYCSBSQL(n int) *ycsbSQL {
	var cols, params strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			cols.WriteString(", ")
		}
		fmt.Fprintf(&cols, "field%d", i)
		fmt.Fprintf(&params, ", $%d", i+2)
	}
	return &ycsbSQL{
		n:      n,
		insert: "INSERT INTO usertable (ycsb_key, " + cols.String() + ") VALUES ($1" + params.String() + ")",
		read:   "SELECT " + cols.String() + " FROM usertable WHERE ycsb_key = $1",
		scan:   "SELECT ycsb_key, " + cols.String() + " FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2",
	}
}

// update returns the UPDATE of the non-nil fields and its arguments.
func (q *ycsbSQL) update(key []byte, fields [][]byte) (string, []any) {
	args := make([]any, 1, 1+len(fields))
	args[0] = key
	var mask uint64
	for i, f := range fields {
		if f != nil {
			args = append(args, f)
			if i < 64 {
				mask |= 1 << i
			}
		}
	}
	if len(fields) <= 64 {
		if sql, ok := q.updates.Load(mask); ok {
			return sql.(string), args
		}
	}
	var b strings.Builder
	b.WriteString("UPDATE usertable SET ")
	p := 2
	for i, f := range fields {
		if f == nil {
			continue
		}
		if p > 2 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "field%d = $%d", i, p)
		p++
	}
	b.WriteString(" WHERE ycsb_key = $1")
	sql := b.String()
	if len(fields) <= 64 {
		q.updates.Store(mask, sql)
	}
	return sql, args
}

func (s *Store) statements() (*ycsbSQL, error) {
	s.mu.RLock()
	q := s.ycsb
	s.mu.RUnlock()
	if q == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return q, nil
}

// Init implements ycsb.DB: it drops and recreates usertable.
func (s *Store) Init(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	var b strings.Builder
	b.WriteString(`DROP TABLE IF EXISTS usertable; CREATE TABLE usertable (ycsb_key varchar COLLATE "C" PRIMARY KEY`)
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&b, ", field%d bytea", i)
	}
	b.WriteString(")")
	if _, err := s.pool.Exec(ctx, b.String(), pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	s.mu.Lock()
	s.ycsb = newYCSBSQL(fieldCount)
	s.mu.Unlock()
	return nil
}

// Attach implements ycsb.Attacher: usertable, which another worker
// process's Init created, is kept; this handle prepares its statements.
func (s *Store) Attach(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	s.mu.Lock()
	s.ycsb = newYCSBSQL(fieldCount)
	s.mu.Unlock()
	return nil
}

// Insert implements ycsb.DB.
func (s *Store) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) != q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	args := make([]any, 1+len(fields))
	args[0] = key
	for i, f := range fields {
		args[1+i] = f
	}
	_, err = s.pool.Exec(ctx, q.insert, args...)
	return err
}

// Update implements ycsb.DB: an UPDATE of the non-nil fields only.
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	sql, args := q.update(key, fields)
	if len(args) == 1 {
		return nil
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return err
}

// scratchPool holds the per-call scan destinations of records.
var scratchPool targetkit.ScratchPool[pgtype.DriverBytes]

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	q, err := s.statements()
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q.read, key)
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
	sc := scratchPool.Get(q.n)
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
	q, err := s.statements()
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, q.scan, start, count)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := scratchPool.Get(1 + q.n)
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
