// Package stalltest runs a workload's steps on a server target whose server
// stops answering, and checks that a cancelled step returns at once.
package stalltest

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"storebench/internal/target"
	"storebench/internal/target/servers"
	"storebench/internal/workload"
)

// CancelBound is how long a cancelled step may take to return when the
// server has stopped answering: less than the coordinator's grace (1.5 s)
// before it kills the worker and loses what the step measured.
const CancelBound = time.Second

// stallProxy forwards TCP connections to a server until stall is called;
// from then on it keeps every connection open and forwards nothing, as a
// server that stopped answering (SIGSTOP, a hung disk) would.
type stallProxy struct {
	l       net.Listener
	to      string
	stalled atomic.Bool
	closed  chan struct{}
	once    sync.Once
	mu      sync.Mutex
	conns   []net.Conn
}

func newStallProxy(t servers.T, to string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p := &stallProxy{l: l, to: to, closed: make(chan struct{})}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(s, c)
			go p.pipe(c, s)
		}
	}()
	return p
}

// pipe copies src to dst until the proxy stalls, then swallows src.
func (p *stallProxy) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if p.stalled.Load() {
			<-p.closed
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) close() {
	p.once.Do(func() {
		close(p.closed)
		p.l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
}

// CancelWhenStalled opens target name through a proxy to the server of
// o.URI and runs steps on it: all but the last to completion, then the
// last one, during which the proxy stops forwarding (the server stops
// answering, connections stay open) and then the step's context is
// cancelled. The step must return within CancelBound of the cancel:
// every operation takes the step's context.
func CancelWhenStalled(t servers.T, name string, o target.Options, steps []workload.Step) {
	t.Helper()
	u, err := url.Parse(o.URI)
	if err != nil {
		t.Fatalf("%v", err)
	}
	p := newStallProxy(t, u.Host)
	defer p.close()
	u.Host = p.l.Addr().String()
	o.URI = u.String()
	h := servers.Open(t, name, o)
	// The proxy first: a client closing a connection to a stalled server
	// may wait for its goodbye to be read.
	defer h.Close()
	defer p.close()
	env := &workload.Env{Target: h}
	for i, st := range steps {
		w, err := workload.Lookup(st.Workload)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if i < len(steps)-1 {
			if _, err := w.Execute(context.Background(), env, st); err != nil {
				t.Fatalf("%s %s: %v", st.Workload, st.Phase, err)
			}
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type outcome struct {
			err     error
			partial bool
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := w.Execute(ctx, env, st)
			done <- outcome{err, res != nil && res.Partial}
		}()
		time.Sleep(300 * time.Millisecond)
		select {
		case o := <-done:
			t.Fatalf("%s %s ended before the server stalled (%v): make it longer", st.Workload, st.Phase, o.err)
		default:
		}
		p.stalled.Store(true)
		time.Sleep(300 * time.Millisecond) // operations now wait on the server
		start := time.Now()
		cancel()
		select {
		case o := <-done:
			took := time.Since(start)
			t.Logf("%s %s returned %v after cancel (partial %v, err %v)", st.Workload, st.Phase, took.Round(time.Millisecond), o.partial, o.err)
			if took > CancelBound {
				t.Errorf("%s %s on a stalled %s returned %v after its cancel, bound %v", st.Workload, st.Phase, name, took.Round(time.Millisecond), CancelBound)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s %s on a stalled %s did not return within 15s of its cancel", st.Workload, st.Phase, name)
			p.close() // lets it end, with errors
			<-done
		}
	}
}
