package ycsb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/kv"
	"storebench/internal/target/conn"
)

// The YCSB layout on a CQL target (conn.CQL: Cassandra), in the target's
// keyspace: usertable, recreated by Init, and the DB methods (no Scanner:
// rows are in token order, not key order).
//
//	usertable (y_id text PRIMARY KEY, field0 blob, …)

// CQLDB runs YCSB on a CQL target, at the consistency of its session.
type CQLDB struct {
	s    *gocql.Session
	ks   string
	cons gocql.Consistency // the session's, of every read and write

	q atomic.Pointer[cqlStmts] // the statements of the table Init made
}

// cqlDBs holds each CQL handle's layout, so that the steps of a run on
// one handle share the table Init made (conn.CQL -> *CQLDB).
var cqlDBs sync.Map

// cqlDBOf is the YCSB layout on c, the same for every step on it.
func cqlDBOf(c conn.CQL) *CQLDB {
	if s, ok := cqlDBs.Load(c); ok {
		return s.(*CQLDB)
	}
	db := &CQLDB{s: c.CQLSession(), ks: c.CQLKeyspace()}
	db.cons = db.s.Query("").GetConsistency()
	s, _ := cqlDBs.LoadOrStore(c, db)
	return s.(*CQLDB)
}

// cqlStmts are the statements of a usertable of n fields.
type cqlStmts struct {
	n            int
	insert, read string
	updates      sync.Map // field mask (uint64) -> UPDATE statement
}

func (s *CQLDB) newStmts(n int) *cqlStmts {
	var cols, marks strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&cols, ", field%d", i)
		marks.WriteString(", ?")
	}
	c := cols.String()[2:]
	return &cqlStmts{
		n:      n,
		insert: "INSERT INTO " + s.ks + ".usertable (y_id, " + c + ") VALUES (?" + marks.String() + ")",
		read:   "SELECT " + c + " FROM " + s.ks + ".usertable WHERE y_id = ?",
	}
}

func (s *CQLDB) statements() (*cqlStmts, error) {
	q := s.q.Load()
	if q == nil {
		return nil, errors.New("ycsb: Init was not called")
	}
	return q, nil
}

// Init implements DB: it drops and recreates usertable.
func (s *CQLDB) Init(ctx context.Context, fieldCount int) error {
	if err := checkFields(fieldCount); err != nil {
		return err
	}
	var ddl strings.Builder
	ddl.WriteString("CREATE TABLE " + s.ks + ".usertable (y_id text PRIMARY KEY")
	for i := 0; i < fieldCount; i++ {
		fmt.Fprintf(&ddl, ", field%d blob", i)
	}
	ddl.WriteString(")")
	for _, q := range []string{"DROP TABLE IF EXISTS " + s.ks + ".usertable", ddl.String()} {
		if err := s.s.Query(q).ExecContext(ctx); err != nil {
			return err
		}
	}
	s.q.Store(s.newStmts(fieldCount))
	return nil
}

// Attach implements Attacher: usertable, which another worker process's
// Init created, is kept; this handle makes its statements.
func (s *CQLDB) Attach(ctx context.Context, fieldCount int) error {
	if err := checkFields(fieldCount); err != nil {
		return err
	}
	s.q.Store(s.newStmts(fieldCount))
	return nil
}

// Insert implements DB.
func (s *CQLDB) Insert(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	args, err := insertArgs(q.n, string(key), fields)
	if err != nil {
		return err
	}
	return s.s.Query(q.insert, args...).ExecContext(ctx)
}

// Update implements DB: an UPDATE of the non-nil columns (an upsert, as
// in YCSB's own Cassandra binding).
func (s *CQLDB) Update(ctx context.Context, key []byte, fields [][]byte) error {
	q, err := s.statements()
	if err != nil {
		return err
	}
	if len(fields) > q.n {
		return fmt.Errorf("ycsb: %d fields, table has %d", len(fields), q.n)
	}
	stmt, args := partialUpdate(&q.updates, s.ks+".usertable", "y_id", func(int) string { return "?" }, string(key), fields)
	if args == nil {
		return nil
	}
	return s.s.Query(stmt, args...).ExecContext(ctx)
}

// Read implements DB.
func (s *CQLDB) Read(ctx context.Context, key []byte) ([][]byte, error) {
	return s.readAt(ctx, key, s.cons)
}

func (s *CQLDB) readAt(ctx context.Context, key []byte, cons gocql.Consistency) ([][]byte, error) {
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

// ReadDurable implements DurableReader: a read at consistency ALL, which
// asks every replica and returns the newest value any of them holds
// (resolving differences before answering), so it must see every write
// that any replica acknowledged, whatever consistency it was written at.
// It fails while a replica is down.
func (s *CQLDB) ReadDurable(ctx context.Context, key []byte) ([][]byte, error) {
	return s.readAt(ctx, key, gocql.All)
}

// DurableRead implements DurableReader.
func (s *CQLDB) DurableRead() string {
	return "consistency ALL (every replica answers; the newest value any of them holds is returned)"
}

// usertable is the YCSB table of every layout (CQL, SQL, MongoDB, and
// Aerospike's set).
func init() { conn.AddOwnTables("usertable") }
