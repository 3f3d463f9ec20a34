package postgres

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"golang.org/x/sys/unix"

	"storebench/internal/evloop"
	"storebench/internal/redact"
	"storebench/internal/target"
	"storebench/internal/target/detach"
)

// Integer point selects (pgbench -S shaped, the pointselect workload): a
// connection of its own per load goroutine, the SELECT prepared on it.

// PrepareIntSelect implements target.IntSelecter: a connection of its own
// with q prepared, as pgbench -S runs its select.
func (s *Store) PrepareIntSelect(ctx context.Context, q string) (target.IntSelect, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: select connection: %s", redact.Scrub(s.connCfg.ConnString(), err.Error()))
	}
	sd, err := conn.PgConn().Prepare(ctx, "pointselect", q, nil)
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: preparing %s: %w", q, err)
	}
	c := &selectConn{conn: conn, param: make([]byte, 8), fd: -1}
	pc := conn.PgConn()
	c.watch.Interrupt = func() { pc.Conn().SetDeadline(interrupted) }
	if len(sd.ParamOIDs) != 1 || len(sd.Fields) != 1 {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s takes %d parameters and returns %d columns, want 1 and 1", q, len(sd.ParamOIDs), len(sd.Fields))
	}
	switch sd.ParamOIDs[0] {
	case pgtype.Int8OID:
	case pgtype.Int4OID:
		c.param = c.param[:4]
	case pgtype.Int2OID:
		c.param = c.param[:2]
	default:
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s: the parameter is of type OID %d, want an integer", q, sd.ParamOIDs[0])
	}
	switch sd.Fields[0].DataTypeOID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
	default:
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s: the column is of type OID %d, want an integer", q, sd.Fields[0].DataTypeOID)
	}
	c.params = [][]byte{c.param}
	// On a plain socket the select runs on our own lean path (see
	// leanConn); over TLS or a Unix socket through pgx.
	l, ok, err := takeOver(pc)
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	if ok {
		c.lean, c.conn = l, nil
	}
	return c, nil
}

var binaryFormat = []int16{1}

// selectConn runs the prepared point select; not safe for concurrent use.
type selectConn struct {
	conn   *pgx.Conn
	lean   *leanConn    // the socket taken over from conn (then nil)
	fd     int          // the socket handed to an event loop (Session), or -1
	watch  detach.Watch // the run's context, followed once (see session)
	param  []byte
	params [][]byte
	// the current select's answer (onRow)
	v     int64
	found bool
	bad   error
	row   func([][]byte)
}

// Select implements target.IntSelect.
func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	c.setParam(key)
	c.v, c.found, c.bad = 0, false, nil
	if c.row == nil {
		c.row = c.onRow // bound once: no closure per select
	}
	row := c.row
	if c.lean != nil {
		if _, err := c.lean.exec(ctx, "pointselect", c.params, binaryFormat, 1, row); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return 0, false, fmt.Errorf("postgres: %w (%v)", cerr, err)
			}
			return 0, false, err
		}
		return c.v, c.found, c.bad
	}
	if err := c.watch.Check(ctx); err != nil {
		return 0, false, err
	}
	rr := c.conn.PgConn().ExecPrepared(context.Background(), "pointselect", c.params, binaryFormat, binaryFormat)
	for rr.NextRow() {
		row(rr.Values())
	}
	if _, err := rr.Close(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, false, fmt.Errorf("postgres: %w (%v)", cerr, err)
		}
		return 0, false, err
	}
	return c.v, c.found, c.bad
}

// onRow takes the select's row.
func (c *selectConn) onRow(vals [][]byte) {
	if c.found {
		c.bad = fmt.Errorf("postgres: a point select returned more than one row")
	}
	c.found = true
	switch b := vals[0]; len(b) {
	case 8:
		c.v = int64(binary.BigEndian.Uint64(b))
	case 4:
		c.v = int64(int32(binary.BigEndian.Uint32(b)))
	case 2:
		c.v = int64(int16(binary.BigEndian.Uint16(b)))
	default:
		c.bad = fmt.Errorf("postgres: a point select's value has %d bytes, want an integer", len(b))
	}
}

// Session implements target.EventedIntSelect on the lean path: the socket
// goes to an event loop, each select's Bind/Execute/Sync written by
// Request and its replies parsed in full by Reply (every DataRow, an
// ErrorResponse as a *pgconn.PgError, up to ReadyForQuery).
func (c *selectConn) Session(name string, key func(int64) int64, got func(key, value int64, found bool) error) (evloop.Conn, error) {
	if c.lean == nil {
		return evloop.Conn{}, fmt.Errorf("postgres: %s: not on a plain socket", name)
	}
	nc, err := c.lean.c.Take()
	if err != nil {
		return evloop.Conn{}, err
	}
	c.lean.watch.Stop()
	fd, err := evloop.Detach(nc)
	if err != nil {
		return evloop.Conn{}, fmt.Errorf("postgres: %s: %w", name, err)
	}
	c.fd = fd
	if c.row == nil {
		c.row = c.onRow
	}
	return evloop.Conn{Fd: fd, Name: "postgres " + name, Session: &selectSession{c: c, key: key, got: got}}, nil
}

// selectSession is a selectConn driven by an event loop.
type selectSession struct {
	c    *selectConn
	key  func(int64) int64
	got  func(key, value int64, found bool) error
	k    int64
	qerr error
	vals [][]byte
}

func (s *selectSession) Request(w []byte, seq int64) ([]byte, error) {
	s.k = s.key(seq)
	s.c.setParam(s.k)
	s.c.v, s.c.found, s.c.bad, s.qerr = 0, false, nil, nil
	return appendExec(w, "pointselect", s.c.params, binaryFormat, 1), nil
}

func (s *selectSession) Reply(in, _ []byte) (int, []byte, bool, error) {
	n := 0
	for {
		typ, body, k, err := nextMessage(in[n:])
		if err != nil {
			return n, nil, false, err
		}
		if k == 0 {
			break // the rest of this message is yet to come
		}
		n += k
		switch typ {
		case 'D':
			if s.qerr == nil {
				var err error
				if s.vals, err = splitRow(s.vals[:0], body); err != nil {
					s.qerr = err
				} else if len(s.vals) != 1 {
					s.qerr = fmt.Errorf("postgres: a point select returned %d columns", len(s.vals))
				} else {
					s.c.row(s.vals)
				}
			}
		case 'E':
			s.qerr = pgError(body)
		case 'Z':
			if s.qerr == nil {
				s.qerr = s.c.bad
			}
			if s.qerr == nil {
				s.qerr = s.got(s.k, s.c.v, s.c.found)
			}
			return n, nil, true, s.qerr
		case '2', 'C', 'N', 'S', 'A':
			// BindComplete, CommandComplete, a notice, a parameter's new
			// value, a notification.
		default:
			return n, nil, false, fmt.Errorf("postgres: unexpected message %q in a select's reply", typ)
		}
	}
	return n, nil, false, nil
}

// Closed implements evloop.Closer: the error the server sent before it
// closed the connection (FATAL: terminating connection…), if any.
func (s *selectSession) Closed() error { return s.qerr }

// setParam encodes key as the key column's integer type.
func (c *selectConn) setParam(key int64) {
	switch len(c.param) {
	case 8:
		binary.BigEndian.PutUint64(c.param, uint64(key))
	case 4:
		binary.BigEndian.PutUint32(c.param, uint32(key))
	default:
		binary.BigEndian.PutUint16(c.param, uint16(key))
	}
}

// Close implements target.IntSelect.
func (c *selectConn) Close() error {
	if c.fd >= 0 {
		// Terminate, best effort, then close.
		_, _ = unix.Write(c.fd, []byte{'X', 0, 0, 0, 4})
		return evloop.Close(c.fd)
	}
	if c.lean != nil {
		return c.lean.close()
	}
	c.watch.Stop()
	return c.conn.Close(context.Background())
}
