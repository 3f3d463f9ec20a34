package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"storebench/internal/target/detach"
	"storebench/internal/target/internal/rtconn"
)

// leanSelect runs the prepared point select over PostgreSQL's extended
// protocol itself, on the connection pgx opened and prepared (then
// hijacked): one Bind+Execute+Sync written and the replies read through
// rtconn, which sends inside the read that waits for the replies, so a
// query costs one write and one read system call made once the socket is
// readable — as libpq's loop in pgbench does — instead of pgx's write,
// a read that finds nothing yet, a park and a wake-up. What the server
// answers is parsed in full: every row is counted, an error is an error.
type leanSelect struct {
	c *rtconn.Conn
	// msg is Bind (unnamed portal, the prepared statement, one binary
	// parameter, binary results), Execute and Sync, built once; the
	// parameter's bytes are msg[param:param+width].
	msg          []byte
	param, width int
	scratch      []byte
	watch        detach.Watch // the run's context, followed once
}

// newLeanSelect builds the messages for statement stmt with one integer
// parameter of width bytes.
func newLeanSelect(c *rtconn.Conn, stmt string, width int) *leanSelect {
	var m []byte
	// Bind
	body := []byte{0} // unnamed portal
	body = append(body, stmt...)
	body = append(body, 0)
	body = binary.BigEndian.AppendUint16(body, 1) // one parameter format
	body = binary.BigEndian.AppendUint16(body, 1) // binary
	body = binary.BigEndian.AppendUint16(body, 1) // one parameter
	body = binary.BigEndian.AppendUint32(body, uint32(width))
	param := 1 + 4 + len(body)
	body = append(body, make([]byte, width)...)
	body = binary.BigEndian.AppendUint16(body, 1) // one result format
	body = binary.BigEndian.AppendUint16(body, 1) // binary
	m = append(m, 'B')
	m = binary.BigEndian.AppendUint32(m, uint32(4+len(body)))
	m = append(m, body...)
	// Execute the unnamed portal, all rows; then Sync.
	m = append(m, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0)
	m = append(m, 'S', 0, 0, 0, 4)
	return &leanSelect{c: c, msg: m, param: param, width: width}
}

// Select implements pointselect.SelectConn.
func (l *leanSelect) Select(ctx context.Context, key int64) (int64, bool, error) {
	if err := l.watch.Check(ctx); err != nil {
		return 0, false, err
	}
	p := l.msg[l.param : l.param+l.width]
	switch l.width {
	case 8:
		binary.BigEndian.PutUint64(p, uint64(key))
	case 4:
		binary.BigEndian.PutUint32(p, uint32(key))
	default:
		binary.BigEndian.PutUint16(p, uint16(key))
	}
	l.c.Room(len(l.msg))
	l.c.W = append(l.c.W, l.msg...)
	if err := l.c.Sent(); err != nil {
		return 0, false, l.fail(ctx, err)
	}
	var (
		v     int64
		found bool
		qerr  error
	)
	for {
		typ, body, err := l.message()
		if err != nil {
			return 0, false, l.fail(ctx, err)
		}
		switch typ {
		case 'D':
			if found {
				return 0, false, fmt.Errorf("postgres: a point select returned more than one row")
			}
			found = true
			if v, err = dataRowInt(body); err != nil {
				return 0, false, err
			}
		case 'E':
			qerr = errorResponse(body)
		case 'Z':
			// ReadyForQuery ends the exchange, after an error too.
			return v, found, qerr
		case '2', 'C', 'N', 'S', 'A', 'n', 'I':
			// BindComplete, CommandComplete, a notice, a parameter's new
			// value, a notification, NoData, an empty query.
		default:
			return 0, false, fmt.Errorf("postgres: unexpected message %q in a point select's replies", typ)
		}
	}
}

// fail names the run's end when that is why the I/O failed.
func (l *leanSelect) fail(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("postgres: %w (%v)", cerr, err)
	}
	return fmt.Errorf("postgres: %w", err)
}

// message reads one backend message: its type and body (valid until the
// next read).
func (l *leanSelect) message() (byte, []byte, error) {
	h, err := l.c.R.Peek(5)
	if err != nil {
		return 0, nil, err
	}
	typ := h[0]
	n := int(binary.BigEndian.Uint32(h[1:5])) - 4
	_, _ = l.c.R.Discard(5)
	if n < 0 {
		return 0, nil, fmt.Errorf("message %q of negative length", typ)
	}
	if n <= l.c.R.Size() {
		b, err := l.c.R.Peek(n)
		if err != nil {
			return 0, nil, err
		}
		_, _ = l.c.R.Discard(n)
		return typ, b, nil
	}
	if cap(l.scratch) < n {
		l.scratch = make([]byte, n)
	}
	b := l.scratch[:n]
	if _, err := io.ReadFull(l.c.R, b); err != nil {
		return 0, nil, err
	}
	return typ, b, nil
}

// dataRowInt is the one integer column of a DataRow in binary format.
func dataRowInt(b []byte) (int64, error) {
	if len(b) < 6 || binary.BigEndian.Uint16(b) != 1 {
		return 0, errors.New("postgres: a point select's row is not one column")
	}
	n := int32(binary.BigEndian.Uint32(b[2:6]))
	col := b[6:]
	if n < 0 || int(n) != len(col) {
		return 0, fmt.Errorf("postgres: a point select's value is NULL or malformed (%d bytes of %d)", n, len(col))
	}
	switch n {
	case 8:
		return int64(binary.BigEndian.Uint64(col)), nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(col))), nil
	case 2:
		return int64(int16(binary.BigEndian.Uint16(col))), nil
	}
	return 0, fmt.Errorf("postgres: a point select's value has %d bytes, want an integer", n)
}

// errorResponse is the server's error: its SQLSTATE and message.
func errorResponse(b []byte) error {
	var code, msg string
	for len(b) > 1 {
		f := b[0]
		end := 1
		for end < len(b) && b[end] != 0 {
			end++
		}
		switch f {
		case 'C':
			code = string(b[1:end])
		case 'M':
			msg = string(b[1:end])
		}
		if end >= len(b) {
			break
		}
		b = b[end+1:]
	}
	return fmt.Errorf("postgres: %s (SQLSTATE %s)", msg, code)
}

// Close implements pointselect.SelectConn: Terminate, then the socket.
func (l *leanSelect) Close() error {
	l.watch.Stop()
	l.c.W = append(l.c.W[:0], 'X', 0, 0, 0, 4)
	_ = l.c.Flush()
	return l.c.Close()
}
