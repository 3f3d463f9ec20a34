package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"storebench/internal/target/detach"
	"storebench/internal/target/internal/rtconn"
)

// leanConn runs prepared statements over PostgreSQL's extended protocol
// itself, on a connection pgx opened and prepared (then hijacked): a
// statement's Bind+Execute+Sync are written and its replies read through
// rtconn, which sends inside the read that waits for the replies, so a
// statement costs one write and one read system call made once the
// socket is readable — as libpq's loop in pgbench and sysbench does —
// instead of pgx's write, a read that finds nothing yet, a park and a
// wake-up. Everything the server answers is parsed: every row goes to
// the caller, an ErrorResponse is a *pgconn.PgError (classify sees its
// SQLSTATE), a broken socket a *net.OpError (a lost connection).
// Not safe for concurrent use.
type leanConn struct {
	c       *rtconn.Conn
	watch   detach.Watch // the run's context, followed once
	vals    [][]byte
	scratch []byte
	// resultOIDs are the result columns' types of the statement
	// prepareNow prepared last (its RowDescription; none for NoData).
	resultOIDs []uint32
}

// takeOver hijacks pc's socket for a leanConn; ok is false when the
// socket is not plain TCP (TLS, a Unix socket): pc is then left as it is.
func takeOver(pc *pgconn.PgConn) (*leanConn, bool, error) {
	if _, tcp := pc.Conn().(*net.TCPConn); !tcp {
		return nil, false, nil
	}
	hc, err := pc.Hijack()
	if err != nil {
		return nil, false, fmt.Errorf("postgres: taking over the connection: %w", err)
	}
	rc, err := rtconn.Wrap(hc.Conn)
	if err != nil {
		hc.Conn.Close()
		return nil, false, fmt.Errorf("postgres: taking over the connection: %w", err)
	}
	// The connection follows the context of its statements (the run's),
	// not the one it was made under.
	rc.Ready(context.Background())
	l := &leanConn{c: rc}
	l.watch.Interrupt = func() { hc.Conn.SetDeadline(interrupted) }
	return l, true, nil
}

// exec runs prepared statement name with params (their formats as
// pgconn takes them: none, one for all, or one each; a nil one is NULL)
// and every result in format result (0 text, 1 binary); row gets each
// row's values, valid during the call. It returns the rows the command
// tag counts.
func (l *leanConn) exec(ctx context.Context, name string, params [][]byte, formats []int16, result int16, row func([][]byte)) (int64, error) {
	return l.execResults(ctx, bindMsg{name: name, params: params, formats: formats, result: result}, row)
}

// bindMsg is what a Bind message carries: prepared statement name, its
// params and their formats (as exec takes them), and the results'
// formats: one per column (results, when not nil), else result for all.
type bindMsg struct {
	name    string
	params  [][]byte
	formats []int16
	results []int16
	result  int16
}

// execResults is exec with a result format per column (b.results, when
// not nil; else b.result for all).
func (l *leanConn) execResults(ctx context.Context, b bindMsg, row func([][]byte)) (int64, error) {
	if err := l.watch.Check(ctx); err != nil {
		return 0, err
	}
	l.c.Room(execSize(b.name, b.params, b.formats))
	l.c.W = appendBind(l.c.W, b.name, b.params, b.formats, b.results, b.result)
	return l.replies(ctx, row)
}

// prepare parses q as prepared statement name and describes it,
// returning its parameters' types (OIDs). It ends with ctx (the socket is
// then interrupted: the connection is over).
func (l *leanConn) prepare(ctx context.Context, name, q string) ([]uint32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, l.watch.Interrupt)
	oids, err := l.prepareNow(name, q)
	if !stop() {
		return nil, fmt.Errorf("postgres: preparing %s: %w", q, ctx.Err())
	}
	return oids, err
}

func (l *leanConn) prepareNow(name, q string) ([]uint32, error) {
	l.resultOIDs = l.resultOIDs[:0]
	size := 1 + 4 + len(name) + 1 + len(q) + 1 + 2 + // Parse
		1 + 4 + 1 + len(name) + 1 + // Describe
		5 // Sync
	l.c.Room(size)
	w := append(l.c.W, 'P')
	w = binary.BigEndian.AppendUint32(w, uint32(4+len(name)+1+len(q)+1+2))
	w = append(w, name...)
	w = append(w, 0)
	w = append(w, q...)
	w = append(w, 0, 0, 0) // no parameter types given: the server's
	w = append(w, 'D')
	w = binary.BigEndian.AppendUint32(w, uint32(4+1+len(name)+1))
	w = append(w, 'S')
	w = append(w, name...)
	w = append(w, 0)
	l.c.W = append(w, 'S', 0, 0, 0, 4)
	if err := l.c.Sent(); err != nil {
		return nil, broken("write", err)
	}
	var (
		oids []uint32
		qerr error
	)
	for {
		typ, body, err := l.message()
		if err != nil {
			return nil, broken("read", err)
		}
		switch typ {
		case 't': // ParameterDescription
			if len(body) < 2 || len(body) != 2+4*int(binary.BigEndian.Uint16(body)) {
				return nil, broken("read", fmt.Errorf("a ParameterDescription of %d bytes", len(body)))
			}
			for b := body[2:]; len(b) >= 4; b = b[4:] {
				oids = append(oids, binary.BigEndian.Uint32(b))
			}
		case 'E':
			qerr = pgError(body)
		case 'Z':
			if qerr != nil {
				return nil, fmt.Errorf("postgres: preparing %s: %w", q, qerr)
			}
			return oids, nil
		case 'T': // RowDescription
			l.resultOIDs = l.resultOIDs[:0]
			if len(body) < 2 {
				return nil, broken("read", fmt.Errorf("a RowDescription of %d bytes", len(body)))
			}
			b := body[2:]
			for range int(binary.BigEndian.Uint16(body)) {
				end := bytes.IndexByte(b, 0)
				if end < 0 || len(b) < end+1+18 {
					return nil, broken("read", fmt.Errorf("a RowDescription of %d bytes", len(body)))
				}
				// name, table OID (4), column (2), type OID (4), size
				// (2), modifier (4), format (2)
				l.resultOIDs = append(l.resultOIDs, binary.BigEndian.Uint32(b[end+1+6:]))
				b = b[end+1+18:]
			}
		case '1', 'n', 'N', 'S', 'A':
			// ParseComplete, NoData, a notice, a parameter's new value,
			// a notification.
		default:
			return nil, broken("read", fmt.Errorf("unexpected message %q", typ))
		}
	}
}

// execSize is the length of appendExec's messages.
func execSize(name string, params [][]byte, formats []int16) int {
	size := 1 + 4 + 1 + len(name) + 1 + 2 + 2*len(formats) + 2 + 2 + 2
	for _, p := range params {
		size += 4 + len(p)
	}
	return size + 10 + 5
}

// appendExec appends the Bind (unnamed portal, every result in format
// result), Execute and Sync of prepared statement name to w.
func appendExec(w []byte, name string, params [][]byte, formats []int16, result int16) []byte {
	return appendBind(w, name, params, formats, nil, result)
}

// appendBind is appendExec with a result format per column when results
// is not nil.
func appendBind(w []byte, name string, params [][]byte, formats, results []int16, result int16) []byte {
	size := execSize(name, params, formats) - 15
	if results != nil {
		size += 2*len(results) - 2
	}
	w = append(w, 'B')
	w = binary.BigEndian.AppendUint32(w, uint32(size-1))
	w = append(w, 0) // the unnamed portal
	w = append(w, name...)
	w = append(w, 0)
	w = binary.BigEndian.AppendUint16(w, uint16(len(formats)))
	for _, f := range formats {
		w = binary.BigEndian.AppendUint16(w, uint16(f))
	}
	w = binary.BigEndian.AppendUint16(w, uint16(len(params)))
	for _, p := range params {
		if p == nil {
			w = append(w, 0xff, 0xff, 0xff, 0xff) // NULL
			continue
		}
		w = binary.BigEndian.AppendUint32(w, uint32(len(p)))
		w = append(w, p...)
	}
	if results != nil {
		w = binary.BigEndian.AppendUint16(w, uint16(len(results)))
		for _, f := range results {
			w = binary.BigEndian.AppendUint16(w, uint16(f))
		}
	} else {
		w = append(w, 0, 1, byte(result>>8), byte(result)) // one result format for all
	}
	w = append(w, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0)
	w = append(w, 'S', 0, 0, 0, 4)
	return w
}

// simple runs query with the simple protocol (no parameters, rows
// discarded): ROLLBACK.
func (l *leanConn) simple(ctx context.Context, query string) error {
	if err := l.watch.Check(ctx); err != nil {
		return err
	}
	l.c.Room(5 + len(query) + 1)
	l.c.W = appendQuery(l.c.W, query)
	_, err := l.replies(ctx, nil)
	return err
}

// appendQuery appends a simple-protocol Query of query to w.
func appendQuery(w []byte, query string) []byte {
	w = append(w, 'Q')
	w = binary.BigEndian.AppendUint32(w, uint32(4+len(query)+1))
	w = append(w, query...)
	return append(w, 0)
}

// replies reads up to ReadyForQuery (after an error too, so the next
// statement starts in step).
func (l *leanConn) replies(ctx context.Context, row func([][]byte)) (int64, error) {
	if err := l.c.Sent(); err != nil {
		return 0, broken("write", err)
	}
	var (
		n    int64
		qerr error
	)
	for {
		typ, body, err := l.message()
		if err != nil {
			return 0, broken("read", err)
		}
		switch typ {
		case 'D':
			if qerr == nil && row != nil {
				if err := l.dataRow(body); err != nil {
					qerr = err
					continue
				}
				row(l.vals)
			}
		case 'C':
			n = commandRows(body)
		case 'E':
			qerr = pgError(body)
		case 'Z':
			return n, qerr
		case '2', '1', 'N', 'S', 'A', 'n', 'I', 's':
			// BindComplete, ParseComplete, a notice, a parameter's new
			// value, a notification, NoData, an empty query, a portal
			// suspended.
		default:
			return 0, broken("read", fmt.Errorf("unexpected message %q", typ))
		}
	}
}

// broken is the error of a connection that failed: a net.Error, which
// classify takes for a lost connection (the caller names the run's end
// instead when that is why: the watch interrupted the socket).
func broken(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Err: err}
}

// message reads one backend message: its type and body (valid until the
// next read).
func (l *leanConn) message() (byte, []byte, error) {
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

// nextMessage cuts the first whole backend message from in: its type,
// its body and the bytes it took (n 0: the message is not all there yet).
func nextMessage(in []byte) (typ byte, body []byte, n int, err error) {
	if len(in) < 5 {
		return 0, nil, 0, nil
	}
	size := int(binary.BigEndian.Uint32(in[1:]))
	if size < 4 {
		return 0, nil, 0, fmt.Errorf("postgres: message %q of length %d", in[0], size)
	}
	if len(in) < 1+size {
		return 0, nil, 0, nil
	}
	return in[0], in[5 : 1+size], 1 + size, nil
}

// dataRow splits a DataRow into l.vals (a NULL is nil).
func (l *leanConn) dataRow(b []byte) (err error) {
	l.vals, err = splitRow(l.vals[:0], b)
	return err
}

// splitRow appends a DataRow's values to vals (a NULL is nil).
func splitRow(vals [][]byte, b []byte) ([][]byte, error) {
	if len(b) < 2 {
		return vals, fmt.Errorf("postgres: a DataRow of %d bytes", len(b))
	}
	cols := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	for i := 0; i < cols; i++ {
		if len(b) < 4 {
			return vals, fmt.Errorf("postgres: a DataRow cut short")
		}
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if n < 0 {
			vals = append(vals, nil)
			continue
		}
		if int(n) > len(b) {
			return vals, fmt.Errorf("postgres: a DataRow cut short")
		}
		vals = append(vals, b[:n:n])
		b = b[n:]
	}
	return vals, nil
}

// commandRows is the row count at the end of a command tag ("UPDATE 1",
// "INSERT 0 1", "SELECT 100"); 0 for a tag without one ("BEGIN").
func commandRows(tag []byte) int64 {
	if len(tag) > 0 && tag[len(tag)-1] == 0 {
		tag = tag[:len(tag)-1]
	}
	var n int64
	i := len(tag)
	for i > 0 && tag[i-1] >= '0' && tag[i-1] <= '9' {
		i--
	}
	if i == len(tag) || i == 0 || tag[i-1] != ' ' {
		return 0
	}
	for _, c := range tag[i:] {
		n = n*10 + int64(c-'0')
	}
	return n
}

// pgError is the server's ErrorResponse as pgx states it.
func pgError(b []byte) error {
	e := &pgconn.PgError{}
	for len(b) > 1 {
		f := b[0]
		end := 1
		for end < len(b) && b[end] != 0 {
			end++
		}
		v := string(b[1:end])
		switch f {
		case 'S':
			e.Severity = v
		case 'V':
			e.SeverityUnlocalized = v
		case 'C':
			e.Code = v
		case 'M':
			e.Message = v
		case 'D':
			e.Detail = v
		case 'H':
			e.Hint = v
		}
		if end >= len(b) {
			break
		}
		b = b[end+1:]
	}
	return e
}

// close says Terminate, then closes the socket.
func (l *leanConn) close() error {
	l.watch.Stop()
	l.c.W = append(l.c.W[:0], 'X', 0, 0, 0, 4)
	_ = l.c.Flush()
	return l.c.Close()
}
