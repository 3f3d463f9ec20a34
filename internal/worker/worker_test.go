package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
	"storebench/internal/target"
	_ "storebench/internal/target/pebble"
	"storebench/internal/wire"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest"
)

// session runs Serve on pipes and returns a way to send lines and a
// channel of the events it writes.
func session(t *testing.T) (send func(string), events <-chan wire.Event) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(inR, outW, "test"); outW.Close() }()
	ch := make(chan wire.Event, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e wire.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("the worker wrote a line that is not an event: %q", sc.Text())
				return
			}
			ch <- e
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after end of input")
		}
	})
	if e := <-ch; e.Type != wire.EvHello || e.Hello.Protocol != wire.Version {
		t.Fatalf("first event %+v, want hello", e)
	}
	return func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}, ch
}

func next(t *testing.T, events <-chan wire.Event) wire.Event {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the worker closed its output")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10s")
	}
	return wire.Event{}
}

// A request the worker cannot read is answered: for its ID when the ID
// can be read, else with a protocol error; never with an event the
// coordinator would take for someone else's.
func TestUnreadableRequestsAreAnswered(t *testing.T) {
	send, events := session(t)
	send(`{"id": 7, "cmd": "open", "open": "pebble"}`)
	if e := next(t, events); e.ID != 7 || e.Type != wire.EvError || !strings.Contains(e.Error, "bad request") {
		t.Errorf("a request with a readable id but bad arguments: %+v", e)
	}
	for _, line := range []string{`Segmentation fault`, `{"id": "7", "cmd": "quit"}`, `{"cmd": "sample"}`, `[1,2]`} {
		e := next2(t, send, events, line)
		if e.ID != 0 || e.Type != wire.EvProtocolError || !strings.Contains(e.Error, "bad request") {
			t.Errorf("%s: answered %+v, want a protocol_error", line, e)
		}
	}
	// The worker still serves after all that.
	send(`{"id": 8, "cmd": "sample"}`)
	if e := next(t, events); e.ID != 8 || e.Type != wire.EvDone || e.Sample == nil {
		t.Errorf("sample after bad requests: %+v", e)
	}
}

func next2(t *testing.T, send func(string), events <-chan wire.Event, line string) wire.Event {
	t.Helper()
	send(line)
	return next(t, events)
}

// While a request is handled the worker sends heartbeats with its ID, so
// that the coordinator can tell a quiet step from a dead worker.
func TestHeartbeatsDuringARequest(t *testing.T) {
	heartbeatEvery = 20 * time.Millisecond
	defer func() { heartbeatEvery = wire.HeartbeatEvery }()
	send, events := session(t)
	open, _ := json.Marshal(wire.Request{ID: 1, Cmd: wire.CmdOpen, Open: &wire.OpenArgs{Target: "pebble", Dir: t.TempDir(), Durability: "async"}})
	send(string(open))
	for e := next(t, events); e.Type != wire.EvDone; e = next(t, events) {
		if e.Type == wire.EvError {
			t.Fatalf("open: %s", e.Error)
		}
	}
	steps := worktest.Plan(t, ledger.Ledger{}, `
name: t
ladder: [100]
targets: [pebble]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 10
      chains: {lengths: [10], samples: 1}
      stress: {duration: 400ms, rate: 50}
      balance: {addresses: 100, reads: 10}
`)
	var id int64 = 1
	beats := 0
	for _, st := range steps {
		if st.Phase != "insert" && st.Phase != "stress" {
			continue
		}
		id++
		req, _ := json.Marshal(wire.Request{ID: id, Cmd: wire.CmdStep, Step: &st})
		send(string(req))
		for e := next(t, events); e.Type != wire.EvDone; e = next(t, events) {
			if e.ID != id {
				t.Fatalf("event for request %d during request %d: %+v", e.ID, id, e)
			}
			if e.Type == wire.EvError {
				t.Fatalf("%s: %s", st.Phase, e.Error)
			}
			if e.Type == wire.EvHeartbeat && st.Phase == "stress" {
				beats++
			}
		}
	}
	// 400 ms at one heartbeat per 20 ms; the runner's own progress ticks
	// come once a second, so none of these are those.
	if beats < 8 {
		t.Errorf("%d heartbeats during a 400 ms step, want one every 20 ms", beats)
	}
}

// An event that cannot be encoded becomes an error for its request; a
// protocol stream that cannot be written is fatal.
func TestEncodeAndWriteFailures(t *testing.T) {
	var out strings.Builder
	w := &server{out: &out}
	w.send(wire.Event{ID: 3, Type: wire.EvDone, Step: &results.Step{Metrics: map[string]float64{"txns_per_s": math.Inf(1)}}})
	var e wire.Event
	if err := json.Unmarshal([]byte(out.String()), &e); err != nil {
		t.Fatalf("not one event: %q", out.String())
	}
	if e.ID != 3 || e.Type != wire.EvError || !strings.Contains(e.Error, "could not encode its done event") {
		t.Errorf("got %+v", e)
	}

	var fatalErr error
	saved := fatal
	fatal = func(err error) { fatalErr = err }
	defer func() { fatal = saved }()
	w = &server{out: failingWriter{}}
	w.send(wire.Event{ID: 4, Type: wire.EvDone})
	if fatalErr == nil || !strings.Contains(fatalErr.Error(), "writing the protocol stream: broken pipe") {
		t.Errorf("fatal got %v", fatalErr)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// An error the worker sends has the secrets of its target's URI masked,
// also where a driver quotes them without the URI (decoded, here).
func TestErrorsMaskTheURISecrets(t *testing.T) {
	target.Register(target.Info{Name: "leaky", Title: "Leaky", Schemes: []string{"leaky"}, Provides: target.Caps{target.KeyValue},
		Open: func(o target.Options) (io.Closer, error) {
			u, err := url.Parse(o.URI)
			if err != nil {
				return nil, err
			}
			pw, _ := u.User.Password()
			return nil, fmt.Errorf("login with %q refused; %s", pw, u.Query().Get("password"))
		}})
	send, events := session(t)
	send(`{"id": 1, "cmd": "open", "open": {"target": "leaky", "uri": "leaky://u:Us%21pw-4410@h/db?password=Qy%26pw-4410", "durability": "async"}}`)
	e := next(t, events)
	if e.Type != wire.EvError || !strings.Contains(e.Error, "refused") {
		t.Fatalf("open: %+v", e)
	}
	for _, pw := range []string{"Us!pw-4410", "Qy&pw-4410"} {
		if strings.Contains(e.Error, pw) {
			t.Errorf("the error holds %s: %s", pw, e.Error)
		}
	}
}
