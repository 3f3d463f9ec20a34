package postgres

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"storebench/internal/target"
	"storebench/internal/target/detach"
	"storebench/internal/workload/pointselect"
)

// The pointselect workload (pgbench -S shaped): a connection of its own
// per load goroutine, the SELECT prepared on it.

// NewSelectConn implements pointselect.Selecter: a connection of its own
// with "SELECT value FROM table WHERE key = $1" prepared, as pgbench -S
// runs it.
func (s *Store) NewSelectConn(ctx context.Context, table, key, value string) (pointselect.SelectConn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: select connection: %s", target.Scrub(s.connCfg.ConnString(), err.Error()))
	}
	q := "SELECT " + pgx.Identifier{value}.Sanitize() + " FROM " + pgx.Identifier{table}.Sanitize() +
		" WHERE " + pgx.Identifier{key}.Sanitize() + " = $1"
	sd, err := conn.PgConn().Prepare(ctx, "pointselect", q, nil)
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: preparing %s: %w", q, err)
	}
	c := &selectConn{conn: conn, param: make([]byte, 8)}
	pc := conn.PgConn()
	c.watch.Interrupt = func() { pc.Conn().SetDeadline(interrupted) }
	switch sd.ParamOIDs[0] {
	case pgtype.Int8OID:
	case pgtype.Int4OID:
		c.param = c.param[:4]
	case pgtype.Int2OID:
		c.param = c.param[:2]
	default:
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s.%s is of type OID %d, want an integer", table, key, sd.ParamOIDs[0])
	}
	switch sd.Fields[0].DataTypeOID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
	default:
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: %s.%s is of type OID %d, want an integer", table, value, sd.Fields[0].DataTypeOID)
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
	watch  detach.Watch // the run's context, followed once (see oltpConn)
	param  []byte
	params [][]byte
	// the current select's answer (onRow)
	v     int64
	found bool
	bad   error
	row   func([][]byte)
}

// Select implements pointselect.SelectConn.
func (c *selectConn) Select(ctx context.Context, key int64) (int64, bool, error) {
	switch len(c.param) {
	case 8:
		binary.BigEndian.PutUint64(c.param, uint64(key))
	case 4:
		binary.BigEndian.PutUint32(c.param, uint32(key))
	default:
		binary.BigEndian.PutUint16(c.param, uint16(key))
	}
	c.v, c.found, c.bad = 0, false, nil
	if c.row == nil {
		c.row = c.onRow // bound once: no closure per select
	}
	row := c.row
	if c.lean != nil {
		if _, err := c.lean.exec(ctx, "pointselect", c.params, binaryFormat, row); err != nil {
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

// Close implements pointselect.SelectConn.
func (c *selectConn) Close() error {
	if c.lean != nil {
		return c.lean.close()
	}
	c.watch.Stop()
	return c.conn.Close(context.Background())
}
