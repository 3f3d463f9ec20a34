package mysql

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"storebench/internal/target"
	"storebench/internal/target/detach"
	"storebench/internal/target/internal/rtconn"
)

// leanConn speaks the MySQL client/server protocol itself for the SQL
// sessions (target.SQLSession) on plain TCP: its own handshake
// (mysql_native_password), the workload's statements prepared with
// COM_STMT_PREPARE and run with COM_STMT_EXECUTE (binary parameters and
// rows), BEGIN/COMMIT/ROLLBACK as COM_QUERY. Each command is written and
// its reply read through rtconn, which sends inside the read that waits
// for the reply: one write and one read system call per statement, the
// read made once the socket is readable, as libmysqlclient's loop in
// sysbench does, instead of go-sql-driver's write, a read that finds
// nothing yet, a park and a wake-up (and database/sql/driver's
// conversions of every value). Every reply is parsed in full: every row
// goes to the caller, an ERR packet is a *mysql.MySQLError (classify sees
// its number), a broken socket a *net.OpError (a lost connection).
// An event loop can take the socket over (session.Detach): its wire
// then writes with the same encoders (appendExecute, appendQuery) and
// parses with the same packet parser (take) and statement state.
// Not safe for concurrent use.
type leanConn struct {
	c     *rtconn.Conn
	nc    net.Conn
	watch detach.Watch // the run's context, followed once
	id    uint32       // the server's connection id
	seq   byte         // sequence number of the next packet sent
	// cacheMeta is MariaDB's MARIADB_CLIENT_CACHE_METADATA, agreed at the
	// handshake (libmariadb, sysbench's client, asks for it too): an
	// execute's result set then comes without its column definitions
	// when they are those of the prepare.
	cacheMeta bool
	stmts     []leanStmt // by handle
	r         reply      // the reply being read
	big       []byte     // a packet larger than the read buffer
}

// reply is the state of one command's reply as it is parsed packet by
// packet (take), the same code whether the packets come from the socket
// (the synchronous path: reply) or from an event loop's bytes (leanWire).
type reply struct {
	st    *leanStmt // the statement executed; nil for a COM_QUERY
	typed bool      // this execute sent st's parameter types
	row   func([]colType, [][]byte) error
	state byte
	left  int // column definitions still to come
	// affected is an OK packet's affected rows.
	affected int64
	rerr     error     // the row callback's first error
	cols     []colType // the columns of the result being read
	parsed   []colType // column definitions as read
	vals     [][]byte  // a row's values (nil: NULL), valid until the next packet
}

// The parts of a reply, in order.
const (
	replyFirst      = iota // OK, ERR, or a result set's column count
	replyColumns           // column definitions
	replyColumnsEOF        // the EOF after them
	replyRows              // binary rows, up to an EOF (or an ERR)
)

type leanStmt struct {
	q      string // its text, as errors name it
	id     uint32
	params int
	cols   []colType // as the prepare (or the latest execute) described them
	typed  bool      // the server has the parameters' types (integers, strings)
}

type colType struct {
	typ      byte
	unsigned bool
}

// Protocol constants (the MySQL client/server protocol).
const (
	capLongPassword  = 1 << 0
	capFoundRows     = 1 << 1
	capLongFlag      = 1 << 2
	capConnectWithDB = 1 << 3
	capProtocol41    = 1 << 9
	capTransactions  = 1 << 13
	capSecureConn    = 1 << 15
	capPluginAuth    = 1 << 19
	// MariaDB's extended capabilities (the handshake's upper 32 bits,
	// exchanged when the server clears CLIENT_MYSQL, which is
	// capLongPassword).
	extCacheMetadata = 1 << 4

	comQuit        = 0x01
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17

	typeLongLong = 0x08
	typeNull     = 0x06
	typeString   = 0xfe

	// utf8mb4_general_ci, go-sql-driver's default collation.
	collationUTF8MB4 = 45

	nativePassword = "mysql_native_password"
)

// unsupportedAuth is a server that asks for an authentication method the
// lean client does not speak; the caller then uses go-sql-driver.
type unsupportedAuth struct{ plugin string }

func (e *unsupportedAuth) Error() string {
	return fmt.Sprintf("mysql: the server asks for authentication plugin %q; the lean client speaks %s only", e.plugin, nativePassword)
}

// leanEligible says whether cfg is one the lean client serves: plain TCP,
// no TLS, no session variables to set (the driver sets those).
func leanEligible(cfg *mysql.Config) bool {
	return cfg.Net == "tcp" && cfg.TLS == nil && cfg.TLSConfig == "" && len(cfg.Params) == 0
}

// dialLean connects to cfg's server. The handshake ends with ctx or
// within openTimeout.
func dialLean(ctx context.Context, cfg *mysql.Config) (*leanConn, error) {
	nc, err := (&net.Dialer{Timeout: cfg.Timeout}).DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	rc, err := rtconn.Wrap(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	l := &leanConn{c: rc, nc: nc}
	_ = nc.SetDeadline(time.Now().Add(openTimeout))
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(interrupted) })
	err = l.handshake(cfg)
	if !stop() || ctx.Err() != nil {
		err = fmt.Errorf("mysql: session: %w", ctx.Err())
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	// The connection follows the context of its statements (the run's),
	// not the one it was made under.
	rc.Ready(context.Background())
	l.watch.Interrupt = func() { _ = nc.SetDeadline(interrupted) }
	return l, nil
}

// interrupted is the deadline that stops a detached connection's
// statement when the run's context ends.
var interrupted = time.Unix(1, 0)

// broken is the error of a connection that failed: a net.Error, which
// classify takes for a lost connection (the caller names the run's end
// instead when that is why: the watch interrupted the socket).
func broken(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Err: err}
}

// malformed is a reply the client cannot read: a plain error, which
// fails the run rather than hide behind reconnects.
func malformed(format string, args ...any) error {
	return fmt.Errorf("mysql: malformed reply: "+format, args...)
}

// start begins a packet in W (its header filled by end) and returns its
// offset; n is the payload's expected size.
func (l *leanConn) start(n int) int {
	l.c.Room(4 + n)
	at := len(l.c.W)
	l.c.W = append(l.c.W, 0, 0, 0, 0)
	return at
}

// end fills the header of the packet begun at at.
func (l *leanConn) end(at int) {
	header(l.c.W, at, l.seq)
	l.seq++
}

// header fills the header of the packet that starts at w[at] and runs to
// w's end: its payload's length and sequence number seq.
func header(w []byte, at int, seq byte) {
	n := len(w) - at - 4
	w[at], w[at+1], w[at+2], w[at+3] = byte(n), byte(n>>8), byte(n>>16), seq
}

// appendQuery appends COM_QUERY q (a command: sequence number 0).
func appendQuery(w []byte, q string) []byte {
	at := len(w)
	w = append(w, 0, 0, 0, 0, comQuery)
	w = append(w, q...)
	header(w, at, 0)
	return w
}

// packet reads one packet's payload, valid until the next read.
func (l *leanConn) packet() ([]byte, error) {
	h, err := l.c.R.Peek(4)
	if err != nil {
		return nil, broken("read", err)
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	l.seq = h[3] + 1
	_, _ = l.c.R.Discard(4)
	if n == 0xffffff {
		return nil, malformed("a packet of 16 MiB or more")
	}
	if n <= l.c.R.Size() {
		b, err := l.c.R.Peek(n)
		if err != nil {
			return nil, broken("read", err)
		}
		_, _ = l.c.R.Discard(n)
		return b, nil
	}
	if cap(l.big) < n {
		l.big = make([]byte, n)
	}
	b := l.big[:n]
	if _, err := io.ReadFull(l.c.R, b); err != nil {
		return nil, broken("read", err)
	}
	return b, nil
}

// sent writes the command in W (if W did not overflow already); its
// reply is read next.
func (l *leanConn) sent() error {
	if err := l.c.Sent(); err != nil {
		return broken("write", err)
	}
	return nil
}

// handshake answers the server's Handshake V10 with a
// HandshakeResponse41 (mysql_native_password) and follows an
// AuthSwitchRequest to the same method.
func (l *leanConn) handshake(cfg *mysql.Config) error {
	h, err := l.readHello()
	if err != nil {
		return err
	}
	l.answerHello(cfg, h)
	return l.authenticated(cfg, h.plugin)
}

// serverHello is what the lean client takes of a Handshake V10.
type serverHello struct {
	scramble []byte
	// caps are the server's capabilities, ext MariaDB's extended ones.
	caps, ext uint32
	// plugin is the server's default authentication plugin.
	plugin string
}

// readHello reads the server's Handshake V10 (and the connection's id).
func (l *leanConn) readHello() (serverHello, error) {
	var h serverHello
	p, err := l.packet()
	if err != nil {
		return h, err
	}
	if len(p) > 0 && p[0] == 0xff {
		return h, errPacket(p)
	}
	if len(p) < 1 || p[0] != 10 {
		return h, malformed("a handshake of protocol version %d, want 10", first(p))
	}
	i := 1
	for i < len(p) && p[i] != 0 { // the server's version
		i++
	}
	i++
	if len(p) < i+4+8+1+2 {
		return h, malformed("a handshake of %d bytes", len(p))
	}
	l.id = binary.LittleEndian.Uint32(p[i:])
	i += 4
	h.scramble = append([]byte(nil), p[i:i+8]...)
	i += 8 + 1
	h.caps = uint32(binary.LittleEndian.Uint16(p[i:]))
	i += 2
	if len(p) >= i+1+2+2+1+10 {
		i += 1 + 2 // character set, status
		h.caps |= uint32(binary.LittleEndian.Uint16(p[i:])) << 16
		i += 2
		authLen := int(p[i])
		if h.caps&capLongPassword == 0 { // a MariaDB server
			h.ext = binary.LittleEndian.Uint32(p[i+1+6:])
		}
		i += 1 + 10
		if h.caps&capSecureConn != 0 {
			n := max(13, authLen-8)
			if len(p) < i+n {
				return h, malformed("a handshake's scramble cut short")
			}
			h.scramble = append(h.scramble, p[i:i+n-1]...) // without its NUL
			i += n
		}
		if h.caps&capPluginAuth != 0 && i < len(p) {
			end := i
			for end < len(p) && p[end] != 0 {
				end++
			}
			h.plugin = string(p[i:end])
		}
	}
	if h.caps&capProtocol41 == 0 || h.caps&capSecureConn == 0 {
		return h, fmt.Errorf("mysql: the server speaks neither protocol 4.1 nor secure authentication (capabilities %#x)", h.caps)
	}
	return h, nil
}

// answerHello puts the HandshakeResponse41 in W. Whatever the server's
// default plugin, the answer is mysql_native_password's: the server asks
// to switch when the user's method differs.
func (l *leanConn) answerHello(cfg *mysql.Config, h serverHello) {
	want := uint32(capLongPassword | capLongFlag | capProtocol41 | capTransactions | capSecureConn | capPluginAuth)
	if cfg.ClientFoundRows {
		want |= capFoundRows
	}
	if cfg.DBName != "" {
		want |= capConnectWithDB
	}
	var wantExt uint32
	if h.ext&extCacheMetadata != 0 {
		want &^= capLongPassword // a MariaDB client: extended capabilities follow
		wantExt = extCacheMetadata
		l.cacheMeta = true
	}
	auth := nativeAuth(h.scramble, cfg.Passwd)
	at := l.start(32 + len(cfg.User) + 1 + 1 + len(auth) + len(cfg.DBName) + 1 + len(nativePassword) + 1)
	w := binary.LittleEndian.AppendUint32(l.c.W, want)
	w = binary.LittleEndian.AppendUint32(w, 1<<24) // max packet size
	w = append(w, collationUTF8MB4)
	w = append(w, make([]byte, 19)...)
	w = binary.LittleEndian.AppendUint32(w, wantExt)
	w = append(w, cfg.User...)
	w = append(w, 0, byte(len(auth)))
	w = append(w, auth...)
	if cfg.DBName != "" {
		w = append(w, cfg.DBName...)
		w = append(w, 0)
	}
	w = append(w, nativePassword...)
	l.c.W = append(w, 0)
	l.end(at)
}

// authenticated sends what W holds and reads the server's verdict,
// answering one AuthSwitchRequest to mysql_native_password; plugin is
// the server's default, named when it asks for more of another method.
func (l *leanConn) authenticated(cfg *mysql.Config, plugin string) error {
	for switched := false; ; switched = true {
		if err := l.sent(); err != nil {
			return err
		}
		p, err := l.packet()
		if err != nil {
			return err
		}
		switch first(p) {
		case 0x00:
			return nil
		case 0xff:
			return errPacket(p)
		case 0xfe: // AuthSwitchRequest: plugin name, NUL, its data
			end := 1
			for end < len(p) && p[end] != 0 {
				end++
			}
			name := string(p[1:end])
			if name != nativePassword || switched {
				return &unsupportedAuth{plugin: name}
			}
			data := p[min(end+1, len(p)):]
			if len(data) > 0 && data[len(data)-1] == 0 {
				data = data[:len(data)-1]
			}
			auth := nativeAuth(data, cfg.Passwd)
			at := l.start(len(auth))
			l.c.W = append(l.c.W, auth...)
			l.end(at)
		default: // AuthMoreData of another method (caching_sha2_password…)
			return &unsupportedAuth{plugin: plugin}
		}
	}
}

func first(p []byte) byte {
	if len(p) == 0 {
		return 0
	}
	return p[0]
}

// nativeAuth is mysql_native_password's answer to a scramble:
// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))); nothing for
// an empty password.
func nativeAuth(scramble []byte, password string) []byte {
	if password == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	s := sha1.New()
	s.Write(scramble[:min(20, len(scramble))])
	s.Write(h2[:])
	out := s.Sum(nil)
	for i := range out {
		out[i] ^= h1[i]
	}
	return out
}

// errPacket is an ERR packet as go-sql-driver states it.
func errPacket(p []byte) error {
	if len(p) < 3 {
		return malformed("an ERR packet of %d bytes", len(p))
	}
	e := &mysql.MySQLError{Number: binary.LittleEndian.Uint16(p[1:])}
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		copy(e.SQLState[:], msg[1:6])
		msg = msg[6:]
	}
	e.Message = string(msg)
	return e
}

// prepare prepares q with COM_STMT_PREPARE and returns its handle (its
// index in l.stmts). It ends with ctx (the socket is then interrupted:
// the session is over).
func (l *leanConn) prepare(ctx context.Context, q string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, l.watch.Interrupt)
	h, err := l.prepareNow(q)
	if !stop() {
		return 0, fmt.Errorf("mysql: preparing %s: %w", q, ctx.Err())
	}
	return h, err
}

func (l *leanConn) prepareNow(q string) (int, error) {
	l.seq = 0
	at := l.start(1 + len(q))
	l.c.W = append(l.c.W, comStmtPrepare)
	l.c.W = append(l.c.W, q...)
	l.end(at)
	if err := l.sent(); err != nil {
		return 0, err
	}
	p, err := l.packet()
	if err != nil {
		return 0, err
	}
	if first(p) == 0xff {
		return 0, fmt.Errorf("mysql: preparing %s: %w", q, errPacket(p))
	}
	if first(p) != 0 || len(p) < 12 {
		return 0, malformed("preparing %s: a reply of %d bytes starting %#x", q, len(p), first(p))
	}
	st := leanStmt{q: q, id: binary.LittleEndian.Uint32(p[1:]), params: int(binary.LittleEndian.Uint16(p[7:]))}
	cols := int(binary.LittleEndian.Uint16(p[5:]))
	// The parameters' and the columns' definitions, each list ended by
	// an EOF packet.
	for list, n := range []int{st.params, cols} {
		if n == 0 {
			continue
		}
		for i := 0; i <= n; i++ {
			p, err := l.packet()
			if err != nil {
				return 0, err
			}
			if list == 1 && i < n {
				ct, err := columnType(p)
				if err != nil {
					return 0, err
				}
				st.cols = append(st.cols, ct)
			}
		}
	}
	l.stmts = append(l.stmts, st)
	return len(l.stmts) - 1, nil
}

// query runs q as COM_QUERY, for a statement that returns no rows (BEGIN,
// COMMIT, ROLLBACK).
func (l *leanConn) query(ctx context.Context, q string) error {
	if err := l.watch.Check(ctx); err != nil {
		return err
	}
	l.c.Room(5 + len(q))
	l.c.W = appendQuery(l.c.W, q)
	l.seq = 1
	_, err := l.reply(nil, false, nil)
	return err
}

// execute runs statement h with params and reads its reply: each row's
// values go to row (valid during the call), and the rows an OK packet
// says were affected are returned.
func (l *leanConn) execute(ctx context.Context, h int, params []target.SQLArg, row func([]colType, [][]byte) error) (int64, error) {
	if err := l.watch.Check(ctx); err != nil {
		return 0, err
	}
	if h < 0 || h >= len(l.stmts) {
		return 0, fmt.Errorf("mysql: no prepared statement %d (%d prepared)", h, len(l.stmts))
	}
	st := &l.stmts[h]
	if len(params) != st.params {
		return 0, fmt.Errorf("mysql: %s takes %d parameters, given %d", st.q, st.params, len(params))
	}
	l.c.Room(4 + executeSize(params))
	var typed bool
	l.c.W, typed = appendExecute(l.c.W, st, params)
	l.seq = 1
	return l.reply(st, typed, row)
}

// executeSize is the payload size of a COM_STMT_EXECUTE of params.
func executeSize(params []target.SQLArg) int {
	size := 1 + 4 + 1 + 4 + (len(params)+7)/8 + 1 + 2*len(params)
	for _, p := range params {
		size += 9 + len(p.Bytes)
	}
	return size
}

// appendExecute appends the COM_STMT_EXECUTE of st with params (a
// command: sequence number 0); typed says whether it sends the
// parameters' types, which the server keeps once it runs the statement
// (take then marks st typed).
func appendExecute(w []byte, st *leanStmt, params []target.SQLArg) ([]byte, bool) {
	at := len(w)
	w = append(w, 0, 0, 0, 0, comStmtExecute)
	w = binary.LittleEndian.AppendUint32(w, st.id)
	w = append(w, 0)                           // no cursor
	w = binary.LittleEndian.AppendUint32(w, 1) // iteration count
	typed := false
	if len(params) > 0 {
		nulls := len(w)
		w = append(w, make([]byte, (len(params)+7)/8)...)
		null := false
		for i, p := range params {
			if p.IsBytes && p.Bytes == nil {
				w[nulls+i/8] |= 1 << (i % 8)
				null = true
			}
		}
		// The types go with the first execute only, as libmariadb sends
		// them (the server keeps them), and again after one with a NULL
		// or a failed one.
		if st.typed && !null {
			w = append(w, 0)
		} else {
			st.typed = false
			w = append(w, 1) // new parameters bound: their types follow
			for _, p := range params {
				switch {
				case !p.IsBytes:
					w = append(w, typeLongLong, 0)
				case p.Bytes == nil:
					w = append(w, typeNull, 0)
				default:
					w = append(w, typeString, 0)
				}
			}
			typed = !null
		}
		for _, p := range params {
			switch {
			case !p.IsBytes:
				w = binary.LittleEndian.AppendUint64(w, uint64(p.Int))
			case p.Bytes != nil:
				w = appendLenEnc(w, uint64(len(p.Bytes)))
				w = append(w, p.Bytes...)
			}
		}
	}
	header(w, at, 0)
	return w, typed
}

// reply reads a command's reply (st, typed and row as for begin): an
// OK packet (its affected rows), an ERR packet, or the binary result set
// of statement st read to its end (after a row callback's error too, so
// that the next command starts in step).
func (l *leanConn) reply(st *leanStmt, typed bool, row func([]colType, [][]byte) error) (int64, error) {
	if err := l.sent(); err != nil {
		return 0, err
	}
	l.begin(st, typed, row)
	for {
		p, err := l.packet()
		if err != nil {
			return 0, err
		}
		done, serr, err := l.take(p)
		if err != nil {
			return 0, err
		}
		if done {
			if serr != nil {
				return 0, serr
			}
			return l.r.affected, nil
		}
	}
}

// begin starts reading the reply to a command: an execute of st (nil: a
// COM_QUERY) that sent its parameters' types when typed, its rows going
// to row (nil: none expected).
func (l *leanConn) begin(st *leanStmt, typed bool, row func([]colType, [][]byte) error) {
	l.r.st, l.r.typed, l.r.row = st, typed, row
	l.r.state, l.r.affected, l.r.rerr = replyFirst, 0, nil
}

// take parses the reply's next packet p. done says it was the reply's
// last; serr is then the server's ERR packet (a *mysql.MySQLError) or the
// row callback's first error; err is a reply the protocol does not allow.
func (l *leanConn) take(p []byte) (done bool, serr, err error) {
	r := &l.r
	switch r.state {
	case replyFirst:
		switch first(p) {
		case 0x00:
			n, _, ok := lenEnc(p[1:])
			if !ok {
				return false, nil, malformed("an OK packet of %d bytes", len(p))
			}
			r.affected = int64(n)
			r.ran()
			return true, nil, nil
		case 0xff:
			return true, errPacket(p), nil
		}
		ncols, m, ok := lenEnc(p)
		if !ok || ncols == 0 || ncols > 4096 {
			return false, nil, malformed("a result set header of %d bytes starting %#x", len(p), first(p))
		}
		if r.st == nil {
			return false, nil, malformed("a result set to a statement that returns none")
		}
		if l.cacheMeta && len(p) > m && p[m] == 0 {
			// The columns are those the statement has.
			if len(r.st.cols) != int(ncols) {
				return false, nil, malformed("%d columns without their definitions, the statement has %d", ncols, len(r.st.cols))
			}
			r.cols = r.st.cols
			r.state = replyColumnsEOF
			return false, nil, nil
		}
		r.parsed, r.left = r.parsed[:0], int(ncols)
		r.state = replyColumns
	case replyColumns:
		ct, err := columnType(p)
		if err != nil {
			return false, nil, err
		}
		r.parsed = append(r.parsed, ct)
		if r.left--; r.left == 0 {
			r.cols = r.parsed
			if l.cacheMeta {
				// The server sends definitions again when they changed:
				// the statement's from now on.
				r.st.cols = append(r.st.cols[:0], r.parsed...)
			}
			r.state = replyColumnsEOF
		}
	case replyColumnsEOF:
		if !isEOF(p) {
			return false, nil, malformed("no EOF after the column definitions")
		}
		r.state = replyRows
	case replyRows:
		switch {
		case isEOF(p):
			r.ran()
			return true, r.rerr, nil
		case first(p) == 0xff:
			return true, errPacket(p), nil
		case first(p) != 0:
			return false, nil, malformed("a binary row starting %#x", first(p))
		}
		if err := r.binaryRow(p); err != nil {
			return false, nil, err
		}
		if r.rerr == nil && r.row != nil {
			r.rerr = r.row(r.cols, r.vals)
		}
	}
	return false, nil, nil
}

// ran records that the server ran the statement: it now has the
// parameters' types this execute sent.
func (r *reply) ran() {
	if r.typed {
		r.st.typed = true
	}
}

func isEOF(p []byte) bool { return len(p) < 9 && first(p) == 0xfe }

// columnType reads a ColumnDefinition41's type and unsigned flag.
func columnType(p []byte) (colType, error) {
	b := p
	for i := 0; i < 6; i++ { // catalog, schema, table, org_table, name, org_name
		n, m, ok := lenEnc(b)
		if !ok || uint64(len(b)-m) < n {
			return colType{}, malformed("a column definition of %d bytes", len(p))
		}
		b = b[m+int(n):]
	}
	// The length of the fixed fields (0x0c), character set (2), column
	// length (4), type (1), flags (2), decimals (1).
	if len(b) < 1+2+4+1+2+1 {
		return colType{}, malformed("a column definition of %d bytes", len(p))
	}
	flags := binary.LittleEndian.Uint16(b[8:])
	return colType{typ: b[7], unsigned: flags&32 != 0}, nil
}

// binaryRow splits a binary protocol row into r.vals: an integer or a
// float in its little-endian bytes, a date or time in its length-prefixed
// bytes, everything else (strings, decimals, blobs) in its text.
func (r *reply) binaryRow(p []byte) error {
	nullBytes := (len(r.cols) + 7 + 2) / 8
	if len(p) < 1+nullBytes {
		return malformed("a binary row of %d bytes", len(p))
	}
	nulls := p[1 : 1+nullBytes]
	b := p[1+nullBytes:]
	r.vals = r.vals[:0]
	for i, c := range r.cols {
		if nulls[(i+2)/8]&(1<<((i+2)%8)) != 0 {
			r.vals = append(r.vals, nil)
			continue
		}
		var n int
		switch c.typ {
		case 0x01: // TINY
			n = 1
		case 0x02, 0x0d: // SHORT, YEAR
			n = 2
		case 0x03, 0x09, 0x04: // LONG, INT24, FLOAT
			n = 4
		case 0x08, 0x05: // LONGLONG, DOUBLE
			n = 8
		case typeNull:
			n = 0
		case 0x07, 0x0a, 0x0b, 0x0c: // TIMESTAMP, DATE, TIME, DATETIME
			if len(b) < 1 {
				return malformed("a binary row cut short")
			}
			n = int(b[0])
			b = b[1:]
		default:
			m, k, ok := lenEnc(b)
			if !ok || uint64(len(b)-k) < m {
				return malformed("a binary row cut short")
			}
			b = b[k:]
			n = int(m)
		}
		if len(b) < n {
			return malformed("a binary row cut short")
		}
		r.vals = append(r.vals, b[:n:n])
		b = b[n:]
	}
	return nil
}

// lenEnc reads a length-encoded integer: its value and size.
func lenEnc(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, true
	case 0xfb, 0xff: // NULL, or no integer
		return 0, 0, false
	}
	return uint64(b[0]), 1, true
}

func appendLenEnc(w []byte, n uint64) []byte {
	switch {
	case n < 251:
		return append(w, byte(n))
	case n < 1<<16:
		return append(w, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		return append(w, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	return binary.LittleEndian.AppendUint64(append(w, 0xfe), n)
}

// close says COM_QUIT, then closes the socket.
func (l *leanConn) close() error {
	l.watch.Stop()
	l.seq = 0
	l.c.W = l.c.W[:0]
	at := l.start(1)
	l.c.W = append(l.c.W, comQuit)
	l.end(at)
	_ = l.c.Flush()
	return l.c.Close()
}
