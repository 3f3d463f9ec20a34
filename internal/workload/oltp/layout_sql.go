package oltp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"storebench/internal/target"
	"storebench/internal/target/conn"
)

// The oltp layout on MariaDB/MySQL and PostgreSQL: sysbench's own schema
// in each one's dialect, made through the target's pool (target.SQLDB),
// and its statements prepared on sessions of the workload's own
// (target.SQLSessioner), which the target serves on its lean protocol
// clients and hands to event loops (target.EventedSQLSession).
//
//	mysql     sbtest<N>(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL,
//	          c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB
//	postgres  sbtest<N>(id SERIAL, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL,
//	          pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))
//
// Index k_<N> on k after the load. The load is sysbench's multi-row
// INSERT, or on PostgreSQL's pgx pool (conn.Postgres) a COPY of each
// batch. A transaction is BEGIN, sysbench's statements, COMMIT, each a
// statement of its own, as sysbench sends them.

// sqlLayout is the layout of h: its pool and sessions; false when h
// offers neither, or a dialect without sysbench's schema here.
func sqlLayout(h any) (*sqlStore, bool) {
	db, ok := h.(target.SQLDB)
	if !ok {
		return nil, false
	}
	ss, ok := h.(target.SQLSessioner)
	if !ok {
		return nil, false
	}
	s := &sqlStore{db: db, ss: ss, d: db.SQLDialect()}
	switch s.d.Name {
	case "mysql":
	case "postgres":
		s.pg, _ = h.(conn.Postgres)
	default:
		return nil, false
	}
	return s, true
}

type sqlStore struct {
	db target.SQLDB
	ss target.SQLSessioner
	d  target.Dialect
	pg conn.Postgres // PostgreSQL's pool, for COPY (nil: INSERT)
}

// createTable is sbtest<t>'s DDL in the store's dialect, as sysbench's
// prepare writes it.
func (s *sqlStore) createTable(t int) string {
	if s.d.Name == "postgres" {
		return fmt.Sprintf("CREATE TABLE sbtest%d(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n)", t)
	}
	return fmt.Sprintf("CREATE TABLE sbtest%d(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) ENGINE = InnoDB", t)
}

// CreateTables implements Store.
func (s *sqlStore) CreateTables(ctx context.Context, tables int) error {
	for t := 1; t <= tables; t++ {
		for _, q := range []string{fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t), s.createTable(t)} {
			if err := s.db.ExecDDL(ctx, q); err != nil {
				return fmt.Errorf("%s: %s: %w", s.d.Name, strings.SplitN(q, "(", 2)[0], err)
			}
		}
	}
	return nil
}

// InsertRows implements Store: one multi-row INSERT, or a COPY on
// PostgreSQL's pool.
func (s *sqlStore) InsertRows(ctx context.Context, table int, rows []Row) error {
	if s.pg != nil {
		return s.copyRows(ctx, table, rows)
	}
	var q strings.Builder
	fmt.Fprintf(&q, "INSERT INTO sbtest%d (id, k, c, pad) VALUES ", table)
	args := make([]any, 0, 4*len(rows))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		n := len(args)
		fmt.Fprintf(&q, "(%s,%s,%s,%s)", s.d.Param(n+1), s.d.Param(n+2), s.d.Param(n+3), s.d.Param(n+4))
		args = append(args, r.ID, r.K, r.C, r.Pad)
	}
	if _, err := s.db.Exec(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("%s: inserting into sbtest%d: %w", s.d.Name, table, err)
	}
	return nil
}

// copyRows loads rows into sbtest<table> with one COPY and moves the
// SERIAL past their ids, as sysbench's own inserts through it would have.
func (s *sqlStore) copyRows(ctx context.Context, table int, rows []Row) error {
	pool := s.pg.PostgresPool()
	_, err := pool.CopyFrom(ctx, pgx.Identifier{fmt.Sprintf("sbtest%d", table)}, []string{"id", "k", "c", "pad"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			return []any{int32(r.ID), int32(r.K), string(r.C), string(r.Pad)}, nil
		}))
	if err != nil {
		return fmt.Errorf("postgres: copying into sbtest%d: %w", table, err)
	}
	_, err = pool.Exec(ctx, fmt.Sprintf("SELECT setval(pg_get_serial_sequence('sbtest%d', 'id'), GREATEST(nextval(pg_get_serial_sequence('sbtest%d', 'id')), $1))", table, table), rows[len(rows)-1].ID)
	return err
}

// CreateIndex implements Store.
func (s *sqlStore) CreateIndex(ctx context.Context, table int) error {
	return s.db.ExecDDL(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", table, table))
}

// OpenConn implements Store: a session of its own with every statement
// prepared on it.
func (s *sqlStore) OpenConn(ctx context.Context, tables int, _ bool) (Conn, error) {
	c := &sqlConn{s: s, tables: tables}
	c.onCols = c.deliver
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// statement is sysbench's statement k on table t in dialect d.
func statement(d target.Dialect, k Kind, t int) string {
	q := Statement(k, t)
	if d.Param(1) == "?" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString(d.Param(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sqlConn is one connection: a session with sysbench's statements
// prepared on it (their handles by table and kind).
type sqlConn struct {
	s       *sqlStore
	tables  int
	sess    target.SQLSession
	handles [][NumKinds]int
	args    [4]target.SQLArg
	// The select in flight: its kind and the caller's row callback;
	// onCols (deliver, bound once) hands each row to it.
	kind   Kind
	row    func(c []byte, sum int64, null bool)
	onCols func(cols [][]byte) error
}

func (c *sqlConn) connect(ctx context.Context) error {
	sess, err := c.s.ss.OpenSQLSession(ctx)
	if err != nil {
		return err
	}
	c.handles = make([][NumKinds]int, c.tables)
	for t := range c.handles {
		for k := Kind(0); k < NumKinds; k++ {
			h, err := sess.Prepare(ctx, statement(c.s.d, k, t+1))
			if err != nil {
				sess.Close()
				return err
			}
			c.handles[t][k] = h
		}
	}
	c.sess = sess
	return nil
}

func (c *sqlConn) Begin(ctx context.Context) error    { return c.sess.Begin(ctx) }
func (c *sqlConn) Commit(ctx context.Context) error   { return c.sess.Commit(ctx) }
func (c *sqlConn) Rollback(ctx context.Context) error { return c.sess.Rollback(ctx) }

// bind sets c.args for statement k (a select's ids lo and hi, or a
// write's a) and returns them.
func (c *sqlConn) bind(k Kind, lo, hi int64, a *Args) []target.SQLArg {
	switch k {
	case PointSelect:
		c.args[0] = target.SQLInt(lo)
		return c.args[:1]
	case SimpleRange, SumRange, OrderRange, DistinctRange:
		c.args[0], c.args[1] = target.SQLInt(lo), target.SQLInt(hi)
		return c.args[:2]
	case NonIndexUpdate:
		c.args[0], c.args[1] = target.SQLBytes(a.C), target.SQLInt(a.ID)
		return c.args[:2]
	case Insert:
		c.args[0], c.args[1], c.args[2], c.args[3] = target.SQLInt(a.ID), target.SQLInt(a.K), target.SQLBytes(a.C), target.SQLBytes(a.Pad)
		return c.args[:4]
	}
	c.args[0] = target.SQLInt(a.ID)
	return c.args[:1]
}

// Select implements Conn.
func (c *sqlConn) Select(ctx context.Context, k Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	c.kind, c.row = k, row
	_, err := c.sess.Run(ctx, c.handles[table-1][k], c.bind(k, lo, hi, nil), c.onCols)
	c.row = nil
	return err
}

// deliver hands a select's row to c.row: c, or SUM(k) (an integer in
// text, or NULL).
func (c *sqlConn) deliver(cols [][]byte) error {
	if len(cols) != 1 {
		return fmt.Errorf("oltp: %s returned %d columns, want 1", Statements[c.kind], len(cols))
	}
	v := cols[0]
	if c.kind != SumRange {
		c.row(v, 0, false)
		return nil
	}
	if v == nil {
		c.row(nil, 0, true)
		return nil
	}
	sum, ok := parseInt(v)
	if !ok {
		return fmt.Errorf("oltp: SUM(k) came back as %q, want an integer", v)
	}
	c.row(nil, sum, false)
	return nil
}

// parseInt parses a decimal integer without converting it to a string.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// Exec implements Conn.
func (c *sqlConn) Exec(ctx context.Context, k Kind, table int, a *Args) (int64, error) {
	return c.sess.Run(ctx, c.handles[table-1][k], c.bind(k, 0, 0, a), nil)
}

// Reconnect implements Conn: a new session, its statements prepared
// again.
func (c *sqlConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *sqlConn) Close() error {
	if c.sess == nil {
		return nil
	}
	err := c.sess.Close()
	c.sess = nil
	return err
}

// Events implements Evented: the target's session can go to an event
// loop.
func (c *sqlConn) Events() bool {
	e, ok := c.sess.(target.EventedSQLSession)
	return ok && e.Events()
}

// Detach implements Evented.
func (c *sqlConn) Detach() (int, Wire, error) {
	e, ok := c.sess.(target.EventedSQLSession)
	if !ok {
		return -1, nil, errors.New("oltp: the session cannot go to an event loop")
	}
	fd, w, err := e.Detach()
	if err != nil {
		return -1, nil, err
	}
	return fd, &sqlWire{c: c, w: w}, nil
}

// sqlWire is a sqlConn's session driven by an event loop (Wire).
type sqlWire struct {
	c *sqlConn
	w target.SQLWire
}

func (w *sqlWire) Append(b []byte, s *Stmt) []byte {
	switch s.Kind {
	case TxBegin:
		return w.w.AppendTx(b, target.SQLBegin)
	case TxCommit:
		return w.w.AppendTx(b, target.SQLCommit)
	case TxRollback:
		return w.w.AppendTx(b, target.SQLRollback)
	}
	return w.w.AppendRun(b, w.c.handles[s.Table-1][s.Kind], w.c.bind(s.Kind, s.Lo, s.Hi, &s.Args))
}

func (w *sqlWire) Reply(in []byte, s *Stmt, row func([]byte, int64, bool)) (int, bool, error, error) {
	var onCols func([][]byte) error
	if s.Kind < IndexUpdate { // a select
		w.c.kind, w.c.row, onCols = s.Kind, row, w.c.onCols
	}
	return w.w.Reply(in, onCols)
}

func (w *sqlWire) Closed() error { return w.w.Closed() }
