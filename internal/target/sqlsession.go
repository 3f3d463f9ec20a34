package target

import "context"

// SQLSessioner is a SQL target on which a workload opens sessions of its
// own: connections outside any pool, each used by one goroutine, on which
// the workload prepares its statements (written in the target's dialect)
// once and then runs them by handle, its transactions as BEGIN … COMMIT.
// The target serves them on its cheapest client (MariaDB/MySQL and
// PostgreSQL: their lean protocol clients on a plain socket, one write
// and one read system call per statement).
type SQLSessioner interface {
	SQLer
	OpenSQLSession(ctx context.Context) (SQLSession, error)
}

// SQLSession is one session; not safe for concurrent use. Its errors are
// classified as SQLDriver.SQLError's are: joined with ErrSQLRetry (roll
// back and run the transaction again) or ErrSQLLost (close the session,
// open another and prepare again), else the server's or the client's
// error itself; once the caller's context has ended, the context's error
// (the session then refuses every statement).
type SQLSession interface {
	// Prepare prepares q and returns its handle: the number of
	// statements the session prepared before it.
	Prepare(ctx context.Context, q string) (int, error)
	// Run runs prepared statement h with args, one per parameter, and
	// returns the rows the statement affected (an UPDATE's matched rows;
	// 0 for a SELECT). row, when set, gets each row's columns in text
	// (a binary column's bytes for MariaDB's BLOB and PostgreSQL's bytea;
	// nil for NULL; valid only during the call); its first error stops
	// the rows and is Run's once the whole reply is read. row is nil for
	// a statement that returns no rows (rows that come are discarded).
	Run(ctx context.Context, h int, args []SQLArg, row func(cols [][]byte) error) (affected int64, err error)
	// Begin, Commit and Rollback run BEGIN, COMMIT and ROLLBACK.
	Begin(ctx context.Context) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	Close() error
}

// SQLArg is one parameter of a statement run on a SQLSession: an integer
// (Int), or bytes when IsBytes (nil Bytes: NULL), sent as the parameter's
// type asks (text for a string column, binary for a binary one).
type SQLArg struct {
	Int     int64
	Bytes   []byte
	IsBytes bool
}

// SQLInt is the integer parameter v.
func SQLInt(v int64) SQLArg { return SQLArg{Int: v} }

// SQLBytes is the bytes parameter b (nil: NULL).
func SQLBytes(b []byte) SQLArg { return SQLArg{Bytes: b, IsBytes: true} }

// EventedSQLSession is the optional ability of a SQLSession on a plain
// socket whose protocol an event loop can drive (package evloop): one
// goroutine then owns many sessions and reads only the readable ones.
type EventedSQLSession interface {
	// Events says whether the session can be handed to an event loop
	// now (a plain socket whose protocol the target speaks itself).
	Events() bool
	// Detach hands the session's socket to an event loop: its
	// descriptor (non-blocking, out of the Go runtime's netpoller) and
	// its protocol. After Detach only the SQLWire is used; Close still
	// closes the session.
	Detach() (fd int, w SQLWire, err error)
}

// SQLTxOp is a transaction's control statement on a SQLWire.
type SQLTxOp int

const (
	SQLBegin SQLTxOp = iota
	SQLCommit
	SQLRollback
)

// SQLWire is a detached session's protocol, one statement at a time: the
// event loop writes what an Append returned and hands what it reads to
// Reply until the reply is done.
type SQLWire interface {
	// AppendRun appends to w the request that runs prepared statement h
	// with args.
	AppendRun(w []byte, h int, args []SQLArg) []byte
	// AppendTx appends to w the request of BEGIN, COMMIT or ROLLBACK.
	AppendTx(w []byte, op SQLTxOp) []byte
	// Reply consumes the reply bytes in in of the request in flight,
	// calling row for each row as Run does; n is how many bytes it
	// consumed (whole messages: 0 when it needs more). done says the
	// reply is complete (all of it consumed); stmtErr is then what the
	// server answered, classified as Run's errors are, or row's first
	// error; err is a reply the protocol does not allow (the session
	// cannot go on).
	Reply(in []byte, row func(cols [][]byte) error) (n int, done bool, stmtErr, err error)
	// Affected is the rows the last complete statement affected (an
	// UPDATE's matched rows), as Run returns them.
	Affected() int64
	// Closed says why the server closed the connection, from what Reply
	// parsed so far (an error it sent before hanging up), or nil.
	Closed() error
}
