package cassandra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
)

// The YCSB layout: table usertable, recreated by Init, and the ycsb.DB
// methods (no Scanner: rows are in token order).

// ycsbCQL holds the statements for a usertable of n fields.
type ycsbCQL struct {
	n            int
	insert, read string
	updates      sync.Map // field mask (uint64) -> UPDATE statement
}

func (s *Store) statements() (*ycsbCQL, error) {
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
	var ddl, cols, marks strings.Builder
	ddl.WriteString("CREATE TABLE " + s.ks + ".usertable (y_id text PRIMARY KEY")
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&ddl, ", field%d blob", i)
		fmt.Fprintf(&cols, ", field%d", i)
		marks.WriteString(", ?")
	}
	ddl.WriteString(")")
	for _, q := range []string{"DROP TABLE IF EXISTS " + s.ks + ".usertable", ddl.String()} {
		if err := s.s.Query(q).ExecContext(ctx); err != nil {
			return err
		}
	}
	s.prepareYCSB(fieldCount, cols.String()[2:], marks.String())
	return nil
}

// Attach implements ycsb.Attacher: usertable, which another worker
// process's Init created, is kept; this handle prepares its statements.
func (s *Store) Attach(ctx context.Context, fieldCount int) error {
	if fieldCount < 1 || fieldCount > 1000 {
		return fmt.Errorf("ycsb: %d fields: want 1..1000", fieldCount)
	}
	var cols, marks strings.Builder
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&cols, ", field%d", i)
		marks.WriteString(", ?")
	}
	s.prepareYCSB(fieldCount, cols.String()[2:], marks.String())
	return nil
}

func (s *Store) prepareYCSB(fieldCount int, c, marks string) {
	s.mu.Lock()
	s.ycsb = &ycsbCQL{
		n:      fieldCount,
		insert: "INSERT INTO " + s.ks + ".usertable (y_id, " + c + ") VALUES (?" + marks + ")",
		read:   "SELECT " + c + " FROM " + s.ks + ".usertable WHERE y_id = ?",
	}
	s.mu.Unlock()
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
	args[0] = string(key)
	for i, f := range fields {
		args[1+i] = nonNil(f)
	}
	return s.s.Query(q.insert, args...).ExecContext(ctx)
}

// Update implements ycsb.DB: an UPDATE of the non-nil columns (an upsert,
// as in YCSB's own Cassandra binding).
func (s *Store) Update(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	args := make([]any, 0, 1+len(fields))
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
		return nil
	}
	args = append(args, string(key))
	var stmt string
	if v, ok := q.updates.Load(mask); ok && len(fields) <= 64 {
		stmt = v.(string)
	} else {
		var b strings.Builder
		b.WriteString("UPDATE " + s.ks + ".usertable SET ")
		first := true
		for i, f := range fields {
			if f == nil {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, "field%d = ?", i)
		}
		b.WriteString(" WHERE y_id = ?")
		stmt = b.String()
		if len(fields) <= 64 {
			q.updates.Store(mask, stmt)
		}
	}
	return s.s.Query(stmt, args...).ExecContext(ctx)
}

// Read implements ycsb.DB.
func (s *Store) Read(ctx context.Context, key []byte) ([][]byte, error) {
	return s.readAt(ctx, key, s.cons)
}

func (s *Store) readAt(ctx context.Context, key []byte, cons gocql.Consistency) ([][]byte, error) {
	q, err := s.statements()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, q.n)
	dest := make([]any, q.n)
	for i := range out {
		dest[i] = &out[i]
	}
	err = s.s.Query(q.read, string(key)).Consistency(cons).ScanContext(ctx, dest...)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, fmt.Errorf("record %q: %w", key, kv.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out, nil
}

// ReadDurable implements ycsb.DurableReader: a read at consistency ALL,
// which asks every replica and returns the newest value any of them
// holds (resolving differences before answering), so it must see every
// write that any replica acknowledged, whatever consistency it was written
// at. It fails while a replica is down.
func (s *Store) ReadDurable(ctx context.Context, key []byte) ([][]byte, error) {
	return s.readAt(ctx, key, gocql.All)
}

// DurableRead implements ycsb.DurableReader.
func (s *Store) DurableRead() string {
	return "consistency ALL (every replica answers; the newest value any of them holds is returned)"
}
