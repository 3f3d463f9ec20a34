package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"storebench/internal/target"
	"storebench/internal/target/detach"
	"storebench/internal/workload/oltp"
)

// The oltp workload (sysbench oltp_read_only / oltp_write_only): sysbench's
// own PostgreSQL schema, sbtest<N>(id SERIAL, k INTEGER DEFAULT '0' NOT
// NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL,
// PRIMARY KEY (id)), index k_<N> on k after the load (COPY in batches);
// every statement, BEGIN and COMMIT included, prepared on the
// connection's own session and executed through pgconn (integers binary,
// CHARs as text, results binary).

// CreateTables implements oltp.Store.
func (s *Store) CreateTables(ctx context.Context, tables int) error {
	for t := 1; t <= tables; t++ {
		for _, q := range []string{
			fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t),
			fmt.Sprintf("CREATE TABLE sbtest%d(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n)", t),
		} {
			if _, err := s.pool.Exec(ctx, q); err != nil {
				return fmt.Errorf("postgres: %s: %w", strings.SplitN(q, "(", 2)[0], err)
			}
		}
	}
	return nil
}

// InsertRows implements oltp.Store: one COPY of the batch.
func (s *Store) InsertRows(ctx context.Context, table int, rows []oltp.Row) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{fmt.Sprintf("sbtest%d", table)}, []string{"id", "k", "c", "pad"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			return []any{int32(r.ID), int32(r.K), string(r.C), string(r.Pad)}, nil
		}))
	if err != nil {
		return fmt.Errorf("postgres: copying into sbtest%d: %w", table, err)
	}
	// The rows carry their ids: move the SERIAL past them, as sysbench's
	// own inserts through it would have.
	_, err = s.pool.Exec(ctx, fmt.Sprintf("SELECT setval(pg_get_serial_sequence('sbtest%d', 'id'), GREATEST(nextval(pg_get_serial_sequence('sbtest%d', 'id')), $1))", table, table), rows[len(rows)-1].ID)
	return err
}

// CreateIndex implements oltp.Store.
func (s *Store) CreateIndex(ctx context.Context, table int) error {
	_, err := s.pool.Exec(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", table, table))
	return err
}

// OpenConn implements oltp.Store.
func (s *Store) OpenConn(ctx context.Context, tables int, _ bool) (oltp.Conn, error) {
	c := &oltpConn{cfg: s.connCfg, tables: tables}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type oltpConn struct {
	cfg    *pgx.ConnConfig
	tables int
	conn   *pgx.Conn
	// lean is conn's socket taken over once the statements are prepared
	// (see leanConn; conn is then nil), on a plain TCP connection.
	lean *leanConn
	// watch follows the run's context once (see package detach): pgconn
	// would register and remove a context.AfterFunc and make a channel on
	// every statement.
	watch  detach.Watch
	names  [][oltp.NumKinds]string
	ints   [3][4]byte
	params [][]byte
}

var (
	fmtBinary        = []int16{1}
	fmtInt2          = []int16{1, 1}
	fmtTextInt       = []int16{0, 1}
	fmtInsert        = []int16{1, 1, 0, 0}
	oltpResultBinary = []int16{1}
)

func (c *oltpConn) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.cfg.Copy())
	if err != nil {
		return classify(fmt.Errorf("postgres: oltp connection: %s", target.Scrub(c.cfg.ConnString(), err.Error())), err)
	}
	c.conn = conn
	pc := conn.PgConn()
	c.watch.Interrupt = func() { pc.Conn().SetDeadline(interrupted) }
	for _, q := range []string{"BEGIN", "COMMIT"} {
		if _, err := pc.Prepare(ctx, strings.ToLower(q), q, nil); err != nil {
			c.Close()
			return classify(fmt.Errorf("postgres: preparing %s: %w", q, err), err)
		}
	}
	c.names = make([][oltp.NumKinds]string, c.tables)
	for t := range c.names {
		for k := oltp.Kind(0); k < oltp.NumKinds; k++ {
			q := oltp.Statement(k, t+1)
			for i := 1; strings.Contains(q, "?"); i++ {
				q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
			}
			name := fmt.Sprintf("sb%d_%d", k, t+1)
			if _, err := pc.Prepare(ctx, name, q, nil); err != nil {
				c.Close()
				return classify(fmt.Errorf("postgres: preparing %s: %w", q, err), err)
			}
			c.names[t][k] = name
		}
	}
	l, ok, err := takeOver(pc)
	if err != nil {
		c.Close()
		return oltp.Lost(err)
	}
	if ok {
		c.lean, c.conn = l, nil
	}
	return nil
}

func (c *oltpConn) int4(i int, v int64) []byte {
	binary.BigEndian.PutUint32(c.ints[i][:], uint32(int32(v)))
	return c.ints[i][:]
}

func (c *oltpConn) run(ctx context.Context, name string, formats []int16, row func([][]byte)) (int64, error) {
	if c.lean != nil {
		n, err := c.lean.exec(ctx, name, c.params, formats, row)
		if err != nil {
			return 0, interruptedOr(ctx, err)
		}
		return n, nil
	}
	if err := c.watch.Check(ctx); err != nil {
		return 0, err
	}
	rr := c.conn.PgConn().ExecPrepared(context.Background(), name, c.params, formats, oltpResultBinary)
	for rr.NextRow() {
		if row != nil {
			row(rr.Values())
		}
	}
	tag, err := rr.Close()
	if err != nil {
		return 0, interruptedOr(ctx, err)
	}
	return tag.RowsAffected(), nil
}

// interrupted is the deadline that stops a detached connection's
// statement when the run's context ends.
var interrupted = time.Unix(1, 0)

// interruptedOr is the error of a detached statement: ctx's once it ended
// (the interruption's timeout is no lost connection), else classified.
func interruptedOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("postgres: %w (%v)", cerr, err)
	}
	return classify(err, err)
}

func (c *oltpConn) Begin(ctx context.Context) error {
	c.params = c.params[:0]
	_, err := c.run(ctx, "begin", nil, nil)
	return err
}

func (c *oltpConn) Commit(ctx context.Context) error {
	c.params = c.params[:0]
	_, err := c.run(ctx, "commit", nil, nil)
	return err
}

func (c *oltpConn) Rollback(ctx context.Context) error {
	if c.lean != nil {
		if err := c.lean.simple(ctx, "ROLLBACK"); err != nil {
			return interruptedOr(ctx, err)
		}
		return nil
	}
	if err := c.watch.Check(ctx); err != nil {
		return err
	}
	_, err := c.conn.PgConn().Exec(context.Background(), "ROLLBACK").ReadAll()
	if err != nil {
		return interruptedOr(ctx, err)
	}
	return nil
}

func (c *oltpConn) Select(ctx context.Context, k oltp.Kind, table int, lo, hi int64, row func([]byte, int64, bool)) error {
	c.params = append(c.params[:0], c.int4(0, lo))
	formats := fmtBinary
	if k != oltp.PointSelect {
		c.params = append(c.params, c.int4(1, hi))
		formats = fmtInt2
	}
	var bad error
	_, err := c.run(ctx, c.names[table-1][k], formats, func(vals [][]byte) {
		v := vals[0]
		if k != oltp.SumRange {
			row(v, 0, false)
			return
		}
		switch {
		case v == nil:
			row(nil, 0, true)
		case len(v) == 8: // SUM(integer) is a bigint
			row(nil, int64(binary.BigEndian.Uint64(v)), false)
		default:
			bad = fmt.Errorf("postgres: SUM(k) came back in %d bytes, want a bigint", len(v))
		}
	})
	if err == nil {
		err = bad
	}
	return err
}

func (c *oltpConn) Exec(ctx context.Context, k oltp.Kind, table int, a *oltp.Args) (int64, error) {
	var formats []int16
	switch k {
	case oltp.NonIndexUpdate:
		c.params = append(c.params[:0], a.C, c.int4(0, a.ID))
		formats = fmtTextInt
	case oltp.Insert:
		c.params = append(c.params[:0], c.int4(0, a.ID), c.int4(1, a.K), a.C, a.Pad)
		formats = fmtInsert
	default:
		c.params = append(c.params[:0], c.int4(0, a.ID))
		formats = fmtBinary
	}
	return c.run(ctx, c.names[table-1][k], formats, nil)
}

func (c *oltpConn) Reconnect(ctx context.Context) error {
	c.Close()
	return c.connect(ctx)
}

func (c *oltpConn) Close() error {
	if c.lean != nil {
		err := c.lean.close()
		c.lean = nil
		return err
	}
	c.watch.Stop()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close(context.Background())
	c.conn = nil
	return err
}

// classify marks what sysbench's PostgreSQL driver ignores and retries
// (deadlock 40P01, serialization failure 40001, and the unique violation
// 23505 two concurrent delete+inserts of one id meet under READ
// COMMITTED) and a lost connection; out is the error to return, cause
// the driver's.
func classify(out, cause error) error {
	if cause == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(cause, &pe) {
		switch pe.Code {
		case "40P01", "40001", "23505":
			return oltp.Ignorable(out)
		case "57P01", "57P02", "57P03": // admin shutdown, crash shutdown, cannot connect now
			return oltp.Lost(out)
		}
		return out
	}
	var ne net.Error
	if errors.As(cause, &ne) || pgconn.SafeToRetry(cause) || strings.Contains(cause.Error(), "conn closed") {
		return oltp.Lost(out)
	}
	return out
}
