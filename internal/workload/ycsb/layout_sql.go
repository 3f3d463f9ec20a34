package ycsb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/workload/layout"
)

// The YCSB layout on SQL targets (target.SQLDB: MariaDB/MySQL and
// PostgreSQL; the CQL layout is layout_cql.go), written once through the target's dialect: usertable,
// recreated by Init, its statements, and the DB and Scanner methods.
//
//	mysql     usertable(ycsb_key VARCHAR(255) utf8mb4_bin PRIMARY KEY, field0 LONGBLOB, …) InnoDB
//	postgres  usertable(ycsb_key varchar COLLATE "C" PRIMARY KEY, field0 bytea, …)
//	sqlite    usertable(ycsb_key TEXT PRIMARY KEY, field0 BLOB, …)

// SQLDB runs YCSB on a SQL target.
type SQLDB struct {
	db target.SQLDB
	d  target.Dialect

	q atomic.Pointer[sqlStmts] // the statements of the table Init made
}

// sqlDBs holds each SQL handle's layout, so that the steps of a run on
// one handle share the table Init made (target.SQLDB -> *SQLDB).
var sqlDBs layout.PerHandle[target.SQLDB, *SQLDB]

// sqlDBOf is the YCSB layout on db, the same for every step on it.
func sqlDBOf(db target.SQLDB) *SQLDB {
	return sqlDBs.Of(db, func() *SQLDB { return &SQLDB{db: db, d: db.SQLDialect()} })
}

// createTable is usertable's DDL in dialect d.
func createTable(d target.Dialect, fields int) (string, error) {
	var key, field, suffix string
	switch d.Name {
	case "mysql":
		key, field, suffix = "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY", "LONGBLOB", " ENGINE=InnoDB"
	case "postgres":
		key, field = `varchar COLLATE "C" PRIMARY KEY`, "bytea"
	case "sqlite":
		key, field = "TEXT NOT NULL PRIMARY KEY", "BLOB"
	default:
		return "", fmt.Errorf("ycsb: no usertable for SQL dialect %q", d.Name)
	}
	var b strings.Builder
	b.WriteString("CREATE TABLE usertable (ycsb_key " + key)
	for i := 0; i < fields; i++ {
		fmt.Fprintf(&b, ", field%d %s", i, field)
	}
	b.WriteString(")" + suffix)
	return b.String(), nil
}

// sqlStmts are the statements of a usertable of n fields.
type sqlStmts struct {
	n                  int
	insert, read, scan string
	updates            sync.Map // field mask (uint64) -> UPDATE statement
}

func newSQLStmts(d target.Dialect, n int) *sqlStmts {
	var cols, params strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			cols.WriteString(", ")
		}
		fmt.Fprintf(&cols, "field%d", i)
		params.WriteString(", " + d.Param(i+2))
	}
	c := cols.String()
	return &sqlStmts{
		n:      n,
		insert: "INSERT INTO usertable (ycsb_key, " + c + ") VALUES (" + d.Param(1) + params.String() + ")",
		read:   "SELECT " + c + " FROM usertable WHERE ycsb_key = " + d.Param(1),
		scan:   "SELECT ycsb_key, " + c + " FROM usertable WHERE ycsb_key >= " + d.Param(1) + " ORDER BY ycsb_key LIMIT " + d.Param(2),
	}
}

// update returns the UPDATE of the non-nil fields (their values first,
// the key last) and its arguments; nil arguments when there is none.
func (q *sqlStmts) update(d target.Dialect, key []byte, fields [][]byte) (string, []any) {
	return partialUpdate(&q.updates, "usertable", "ycsb_key", d.Param, key, fields)
}

// partialUpdate returns the UPDATE of table that sets the non-nil fields
// of a record (field<i> = param(1), param(2), ...) where keyCol = the
// last parameter, and its arguments: the fields' values, then key; nil
// arguments when no field is set. The statement of each set of fields
// (their mask, up to 64 fields) is made once and kept in cache. The SQL
// and CQL layouts share it.
func partialUpdate(cache *sync.Map, table, keyCol string, param func(int) string, key any, fields [][]byte) (string, []any) {
	var args []any
	var mask uint64
	for i, f := range fields {
		if f != nil {
			args = append(args, f)
			if i < 64 {
				mask |= 1 << i
			}
		}
	}
	if len(args) == 0 {
		return "", nil
	}
	args = append(args, key)
	if len(fields) <= 64 {
		if s, ok := cache.Load(mask); ok {
			return s.(string), args
		}
	}
	var b strings.Builder
	b.WriteString("UPDATE " + table + " SET ")
	p := 1
	for i, f := range fields {
		if f == nil {
			continue
		}
		if p > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "field%d = %s", i, param(p))
		p++
	}
	b.WriteString(" WHERE " + keyCol + " = " + param(p))
	s := b.String()
	if len(fields) <= 64 {
		cache.Store(mask, s)
	}
	return s, args
}

func checkFields(fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	return nil
}

// Init implements DB: it drops and recreates usertable.
func (s *SQLDB) Init(ctx context.Context, fieldCount int) error {
	if err := checkFields(fieldCount); err != nil {
		return err
	}
	ddl, err := createTable(s.d, fieldCount)
	if err != nil {
		return err
	}
	if err := s.db.ExecDDL(ctx, "DROP TABLE IF EXISTS usertable", ddl); err != nil {
		return err
	}
	s.q.Store(newSQLStmts(s.d, fieldCount))
	return nil
}

// Attach implements Attacher: usertable, which another worker process's
// Init created, is kept; this handle makes its statements.
func (s *SQLDB) Attach(ctx context.Context, fieldCount int) error {
	if err := checkFields(fieldCount); err != nil {
		return err
	}
	s.q.Store(newSQLStmts(s.d, fieldCount))
	return nil
}

func (s *SQLDB) statements() (*sqlStmts, error) {
	q := s.q.Load()
	if q == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return q, nil
}

// Insert implements DB.
func (s *SQLDB) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	args, err := insertArgs(q.n, key, fields)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, q.insert, args...)
	return err
}

// insertArgs are the arguments of an INSERT of a whole record into a
// table of n fields: key, then every field (nil as empty, not NULL). The
// SQL and CQL layouts share it.
func insertArgs(n int, key any, fields [][]byte) ([]any, error) {
	if len(fields) != n {
		return nil, fmt.Errorf("ycsb: %d fields, table has %d", len(fields), n)
	}
	args := make([]any, 1+len(fields))
	args[0] = key
	for i, f := range fields {
		if f == nil {
			f = []byte{} // a nil slice would be NULL
		}
		args[1+i] = f
	}
	return args, nil
}

// Update implements DB: an UPDATE of the non-nil fields only.
func (s *SQLDB) Update(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	stmt, args := q.update(s.d, key, fields)
	if args == nil {
		return nil
	}
	n, err := s.db.Exec(ctx, stmt, args...)
	if err == nil && n == 0 {
		err = fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return err
}

// copyRow copies a row's columns into one allocation.
func copyRow(cols [][]byte) [][]byte {
	n := 0
	for _, c := range cols {
		n += len(c)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(cols))
	for i, c := range cols {
		start := len(buf)
		buf = append(buf, c...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// Read implements DB.
func (s *SQLDB) Read(ctx context.Context, key []byte) ([][]byte, error) {
	q, err := s.statements()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	err = s.db.Query(ctx, q.read, []any{key}, func(cols [][]byte) bool {
		out = copyRow(cols)
		return false
	})
	if err == nil && out == nil {
		err = fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	return out, err
}

// Scan implements Scanner: count records from start in key order.
func (s *SQLDB) Scan(ctx context.Context, start []byte, count int, fn func(key []byte, fields [][]byte) bool) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	return s.db.Query(ctx, q.scan, []any{start, count}, func(cols [][]byte) bool {
		rec := copyRow(cols)
		return fn(rec[0], rec[1:])
	})
}
