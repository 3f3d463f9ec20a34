package cassandra

import (
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// The driver retries only a request its sender marked idempotent (an
// upsert: the ledger's writes); timeoutRetry decides which of their
// failures are retried, as cassandra-stress retries by default: a
// server's write or read timeout (the coordinator gave up waiting on its
// replicas, under load the write may or may not have been applied, and
// an upsert applied twice is applied once) and an overloaded server.
// Nothing else is: a node down, a bad statement, a client-side timeout.
// Each retry is counted (Store.Retried), so a step says how many of its
// operations it took, and the operation's latency includes them.

const (
	// maxRetries bounds the retries of one request.
	maxRetries = 3
	// overloadPause is the wait before retrying an overloaded server
	// (a server timeout has already waited its write_request_timeout).
	overloadPause = 100 * time.Millisecond
)

// timeoutRetry is the session's gocql.RetryPolicy.
type timeoutRetry struct {
	retried *atomic.Int64
}

// Attempt implements gocql.RetryPolicy: another attempt while fewer than
// maxRetries retries were made.
func (p timeoutRetry) Attempt(q gocql.RetryableQuery) bool {
	return q.Attempts() <= maxRetries
}

// GetRetryType implements gocql.RetryPolicy (called once per failed
// attempt of an idempotent request).
func (p timeoutRetry) GetRetryType(err error) gocql.RetryType {
	if !retriable(err) {
		return gocql.Rethrow
	}
	if _, ok := err.(*gocql.RequestErrOverloaded); ok {
		time.Sleep(overloadPause)
	}
	p.retried.Add(1)
	return gocql.Retry
}

// retriable says whether err is the server saying it timed out or is
// overloaded.
func retriable(err error) bool {
	switch err.(type) {
	case *gocql.RequestErrWriteTimeout, *gocql.RequestErrReadTimeout, *gocql.RequestErrOverloaded:
		return true
	}
	return false
}

// Retried implements target.Retrier: the requests retried since Open.
func (s *Store) Retried() int64 { return s.retried.Load() }
