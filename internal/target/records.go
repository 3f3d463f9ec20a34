package target

import "context"

// EventedRecords is the optional ability of a key-value server whose
// YCSB records (fields under a key: Redis's hash per record) an event
// loop can read and write on connections of its own (package evloop):
// one goroutine then owns many connections and reads only the readable
// ones, instead of a goroutine per connection paying a park and a wake-up
// on every round trip. SQL targets offer the same through
// EventedSQLSession.
type EventedRecords interface {
	// RecordEvents says whether connections can go to an event loop (a
	// plain TCP socket, the protocol spoken by the target itself); false
	// for TLS, a Unix socket, or credentials only the general client
	// handles.
	RecordEvents() bool
	// OpenRecordConn opens a connection of its own for records of
	// fieldCount fields and hands its socket to an event loop: its
	// descriptor (non-blocking, out of the Go runtime's netpoller; the
	// caller closes it with evloop.Close) and its protocol.
	OpenRecordConn(ctx context.Context, fieldCount int) (fd int, w RecordWire, err error)
}

// RecordWire is a detached record connection's protocol, one request at
// a time: the event loop writes what an Append returned and hands what
// it reads to Reply until the reply is done.
type RecordWire interface {
	// AppendRead appends the request that reads every field of record
	// key.
	AppendRead(w, key []byte) []byte
	// AppendWrite appends the request that writes the non-nil fields of
	// record key (an insert or an update).
	AppendWrite(w, key []byte, fields [][]byte) []byte
	// Reply consumes the reply bytes in of the request in flight; n is
	// how many it consumed (0: it needs more). done says the reply is
	// complete; for a read, fields are then the record's fields in order
	// (nil: no such record; a field the record lacks is empty), valid
	// only until the next call. opErr is the server's error answer; err
	// a reply the protocol does not allow (the connection cannot go on).
	Reply(in []byte) (n int, done bool, fields [][]byte, opErr, err error)
}

// RecordSteps is the optional ability of a RecordWire whose write of
// some of a record's fields takes more than one round trip (memcached:
// a gets, then a compare-and-swap of the merged record, again from the
// gets on a conflict). AppendWrite then appends the first request; when
// Reply has consumed a complete reply without ending the write (done
// false, nothing left to wait for), Next appends the following request
// (nil when none is pending: Reply needs more bytes).
type RecordSteps interface {
	Next(w []byte) []byte
}
