package durability

import (
	"errors"
	"fmt"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// flaky times out the writes it is told to, by number (from 1).
type flaky struct {
	n       int
	timeout map[int]bool
}

func (f *flaky) write([][]byte) error {
	f.n++
	if f.timeout[f.n] {
		return fmt.Errorf("cassandra: %w", &gocql.RequestErrWriteTimeout{})
	}
	return nil
}

func (f *flaky) timedOut(err error) bool { return (&cqlConn{}).timedOut(err) }

// A write the engine timed out before the crash (Cassandra under a
// loaded machine: "Operation timed out - received only 0 responses",
// which failed a whole 20-trial step) is neither acknowledged nor a
// failure: the writer marks it, goes on, and reaches its quota. An
// engine that times out every write fails after maxTimeouts in a row;
// any other error fails at once.
func TestWriteTimeoutIsUnacknowledged(t *testing.T) {
	p := Params{ValueSize: 10}
	run := func(c writerConn, quota int64) ([]Attempt, error) {
		reached, stop, crashing := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			select {
			case <-reached:
			case <-time.After(time.Minute):
			}
			close(stop)
		}()
		return write(c, 0, p, quota, reached, trialClock{start: time.Now(), stop: stop, crashing: crashing})
	}
	out, err := run(&flaky{timeout: map[int]bool{2: true, 3: true}}, 5)
	if err != nil {
		t.Fatalf("timeouts failed the writer: %v", err)
	}
	timedOut, acked := 0, 0
	for _, a := range out {
		if a.TimedOut {
			timedOut++
			if a.Acked {
				t.Errorf("%+v: timed out and acknowledged", a)
			}
		}
		if a.Acked {
			acked++
		}
	}
	if timedOut != 2 || acked < 5 {
		t.Errorf("%d timed out, %d acknowledged: want 2 and the quota of 5", timedOut, acked)
	}
	all := map[int]bool{}
	for i := 1; i <= 100; i++ {
		all[i] = true
	}
	if _, err := run(&flaky{timeout: all}, 5); err == nil {
		t.Errorf("an engine timing out every write did not fail the writer")
	}
	if (&cqlConn{}).timedOut(errors.New("cassandra: unavailable")) {
		t.Errorf("another error read as a timeout")
	}
	if !(&cqlConn{}).timedOut(gocql.ErrTimeoutNoResponse) {
		t.Errorf("the driver's own timeout not read as one")
	}
}
