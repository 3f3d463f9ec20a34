package oltp

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"

	"storebench/internal/target/detach"
)

// SQLConn is the part of a Conn every database/sql driver target shares:
// one driver connection of its own with sysbench's statements prepared on
// every table, and the selects and writes run through them. A target
// embeds it and adds its transactions (BEGIN … COMMIT differ: SQLite takes
// a write lock first) and what its driver's errors mean (Classify).
//
// It speaks to the driver directly (database/sql/driver), not through
// database/sql: the pool, its locks, the Rows and Stmt objects and the
// conversions of each Scan cost a read_only client more CPU per
// transaction than sysbench spends in all, and a connection pinned to one
// goroutine needs none of them.
type SQLConn struct {
	// Name prefixes the errors of preparing ("mysql", "sqlite").
	Name string
	// Classify marks the driver's errors that sysbench ignores and
	// retries, and lost connections (see Conn).
	Classify func(error) error
	// Interrupt, when set, stops the connection's statement in flight (a
	// past deadline on its socket): statements then run without the
	// caller's context, which is watched once per run instead of by the
	// driver on every statement (package detach). Without it, each
	// statement gets the caller's context.
	Interrupt func()

	conn  driver.Conn
	exec  driver.ExecerContext
	stmts [][NumKinds]stmt // by table-1
	args  [4]driver.NamedValue
	dest  [1]driver.Value
	watch detach.Watch
}

// stmt is a prepared statement with the driver's context-taking methods.
type stmt interface {
	driver.Stmt
	driver.StmtQueryContext
	driver.StmtExecContext
}

// Open opens one connection through c and prepares every statement on
// tables tables.
func (s *SQLConn) Open(ctx context.Context, c driver.Connector, tables int) error {
	dc, err := c.Connect(ctx)
	if err != nil {
		return s.Classify(err)
	}
	s.conn = dc
	var ok bool
	if s.exec, ok = dc.(driver.ExecerContext); !ok {
		s.Close()
		return fmt.Errorf("%s: the driver's connection cannot execute a statement with a context", s.Name)
	}
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		s.Close()
		return fmt.Errorf("%s: the driver's connection cannot prepare a statement with a context", s.Name)
	}
	s.watch.Interrupt = s.Interrupt
	s.stmts = make([][NumKinds]stmt, tables)
	for t := range s.stmts {
		for k := Kind(0); k < NumKinds; k++ {
			q := Statement(k, t+1)
			ds, err := pc.PrepareContext(ctx, q)
			if err != nil {
				s.Close()
				return fmt.Errorf("%s: preparing %s: %w", s.Name, q, s.Classify(err))
			}
			if s.stmts[t][k], ok = ds.(stmt); !ok {
				ds.Close()
				s.Close()
				return fmt.Errorf("%s: the driver's statements take no context", s.Name)
			}
		}
	}
	for i := range s.args {
		s.args[i].Ordinal = i + 1
	}
	return nil
}

// context is what a statement runs under (see Interrupt), or the error of
// an ended ctx.
func (s *SQLConn) context(ctx context.Context) (context.Context, error) {
	if s.Interrupt == nil {
		return ctx, ctx.Err()
	}
	if err := s.watch.Check(ctx); err != nil {
		return nil, err
	}
	return context.Background(), nil
}

// ExecText runs a statement without parameters (BEGIN, COMMIT…).
func (s *SQLConn) ExecText(ctx context.Context, q string) error {
	sctx, err := s.context(ctx)
	if err != nil {
		return err
	}
	_, err = s.exec.ExecContext(sctx, q, nil)
	return s.classify(ctx, err)
}

// classify is Classify, except that an error after ctx ended is ctx's
// (the interruption's timeout is no lost connection).
func (s *SQLConn) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %w (%v)", s.Name, cerr, err)
	}
	return s.Classify(err)
}

// Select implements Conn.
func (s *SQLConn) Select(ctx context.Context, k Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	sctx, err := s.context(ctx)
	if err != nil {
		return err
	}
	s.args[0].Value, s.args[1].Value = lo, hi
	args := s.args[:2]
	if k == PointSelect {
		args = args[:1]
	}
	rows, err := s.stmts[table-1][k].QueryContext(sctx, args)
	if err != nil {
		return s.classify(ctx, err)
	}
	if n := len(rows.Columns()); n != 1 {
		rows.Close()
		return fmt.Errorf("%s: %s returned %d columns, want 1", s.Name, Statements[k], n)
	}
	for {
		s.dest[0] = nil
		if err = rows.Next(s.dest[:]); err != nil {
			break
		}
		if k == SumRange {
			sum, null, cerr := integer(s.dest[0])
			if cerr != nil {
				rows.Close()
				return fmt.Errorf("%s: SUM(k): %w", s.Name, cerr)
			}
			row(nil, sum, null)
			continue
		}
		switch v := s.dest[0].(type) {
		case []byte:
			row(v, 0, false)
		case string:
			row([]byte(v), 0, false)
		default:
			rows.Close()
			return fmt.Errorf("%s: %s returned c as %T, want text", s.Name, Statements[k], v)
		}
	}
	if !errors.Is(err, io.EOF) {
		rows.Close()
		return s.classify(ctx, err)
	}
	return s.classify(ctx, rows.Close())
}

// integer is an integer result (SUM: MariaDB sends a DECIMAL as text).
func integer(v driver.Value) (int64, bool, error) {
	switch v := v.(type) {
	case nil:
		return 0, true, nil
	case int64:
		return v, false, nil
	case []byte:
		n, err := strconv.ParseInt(string(v), 10, 64)
		return n, false, err
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, false, err
	}
	return 0, false, fmt.Errorf("a %T, want an integer", v)
}

// Exec implements Conn.
func (s *SQLConn) Exec(ctx context.Context, k Kind, table int, a *Args) (int64, error) {
	sctx, err := s.context(ctx)
	if err != nil {
		return 0, err
	}
	var args []driver.NamedValue
	switch k {
	case NonIndexUpdate:
		s.args[0].Value, s.args[1].Value = a.C, a.ID
		args = s.args[:2]
	case Insert:
		s.args[0].Value, s.args[1].Value, s.args[2].Value, s.args[3].Value = a.ID, a.K, a.C, a.Pad
		args = s.args[:4]
	default:
		s.args[0].Value = a.ID
		args = s.args[:1]
	}
	res, err := s.stmts[table-1][k].ExecContext(sctx, args)
	if err != nil {
		return 0, s.classify(ctx, err)
	}
	return res.RowsAffected()
}

// Close closes the statements and the connection.
func (s *SQLConn) Close() error {
	s.watch.Stop()
	for _, ts := range s.stmts {
		for _, st := range ts {
			if st != nil {
				st.Close()
			}
		}
	}
	s.stmts = nil
	if s.conn != nil {
		err := s.conn.Close()
		s.conn = nil
		return err
	}
	return nil
}
