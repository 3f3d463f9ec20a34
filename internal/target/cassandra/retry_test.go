package cassandra

import (
	"errors"
	"sync/atomic"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"storebench/internal/target"
)

// attempts is a gocql.RetryableQuery that has been tried n times.
type attempts struct {
	gocql.RetryableQuery
	n int
}

func (a attempts) Attempts() int { return a.n }

// TestTimeoutRetryRetriesServerTimeoutsOnly: the server's write and read
// timeouts and overload are retried and counted, at most maxRetries
// times a request; a node down, a bad statement and a client-side
// timeout fail at once and count nothing.
func TestTimeoutRetryRetriesServerTimeoutsOnly(t *testing.T) {
	n := new(atomic.Int64)
	p := timeoutRetry{retried: n}
	for _, err := range []error{&gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}, &gocql.RequestErrReadTimeout{}, &gocql.RequestErrOverloaded{}} {
		if got := p.GetRetryType(err); got != gocql.Retry {
			t.Errorf("%T: retry type %v, want Retry", err, got)
		}
	}
	if n.Load() != 3 {
		t.Errorf("counted %d retries, want 3", n.Load())
	}
	for _, err := range []error{&gocql.RequestErrUnavailable{}, &gocql.RequestErrSyntax{}, &gocql.RequestErrWriteFailure{}, gocql.ErrTimeoutNoResponse, errors.New("connection refused")} {
		if got := p.GetRetryType(err); got != gocql.Rethrow {
			t.Errorf("%T (%v): retry type %v, want Rethrow", err, err, got)
		}
	}
	if n.Load() != 3 {
		t.Errorf("counted %d retries after errors that are not retried, want 3", n.Load())
	}
	for tries := 1; tries <= maxRetries+2; tries++ {
		if got, want := p.Attempt(attempts{n: tries}), tries <= maxRetries; got != want {
			t.Errorf("after %d attempts: another %v, want %v", tries, got, want)
		}
	}
}

// The worker finds the count by type assertion.
var _ target.Retrier = (*Store)(nil)
