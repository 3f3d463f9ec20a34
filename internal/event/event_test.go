package event

import (
	"errors"
	"testing"
)

type rec struct {
	got []Event
	err error
}

func (r *rec) Handle(e Event) error { r.got = append(r.got, e); return r.err }
func (r *rec) Close() error         { return nil }

// Every output sees an event; a failure on the run's last event stops
// the outputs after it (the report after results.json), on others not.
func TestListFansOut(t *testing.T) {
	bad, after := &rec{err: errors.New("disk full")}, &rec{}
	l := List{bad, after}
	if err := l.Handle(Tick{Done: 1}); err == nil || len(after.got) != 1 {
		t.Fatalf("tick: err %v, the output after saw %d events", err, len(after.got))
	}
	if err := l.Handle(RunFinished{}); err == nil || len(after.got) != 1 {
		t.Fatalf("run finished: err %v, the output after saw %d events", err, len(after.got))
	}
}
