package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/evloop"
	"storebench/internal/measure/latency"
	"storebench/internal/runner"
)

// The event-loop client. Why: with one goroutine per connection on a
// blocking net.Conn, every request pays a write, a read that finds
// nothing yet (EAGAIN), a park, a netpoller wake-up and a second read,
// plus deadline timers; in close mode net.Dial adds its socket options.
// ab and wrk pay a write, a share of one epoll_wait and a read. Here each
// of a few loops (one per core at most) owns its share of the C
// connections as raw non-blocking sockets in its own epoll set, reads
// only sockets that are readable, and writes the next request as soon as
// a response completes (keep-alive) or opens the next connection (close
// mode). Every response is still checked in full (status, length, every
// body byte against the page) and timed into the same four histograms;
// timeouts are a deadline per connection scanned from the loop, not a
// timer per request.

// events is the event-loop driver of one step.
type events struct {
	r       *run
	addr    *evloop.Addr
	conns   int
	loops   int
	tallies []*tally // one per loop
}

// newEvents returns the event-loop driver for r over conns connections
// with loops loops (0: half the cores), or nil when r needs the goroutine client (TLS, or an address that does
// not resolve here: the goroutine client then reports it as ab would).
func newEvents(r *run, conns, loops int) *events {
	if r.tls != nil {
		return nil
	}
	addr, err := evloop.ResolveAddr(r.addr)
	if err != nil {
		return nil
	}
	e := &events{r: r, addr: addr, conns: conns}
	e.loops = loops
	if e.loops <= 0 {
		// Half the cores (at least one): the server under test usually
		// shares the machine, and fewer loops wait on fuller epoll sets
		// (measured on 2 cores against nginx, keep-alive: one loop cost
		// about 17 µs of client CPU per request, two about 24).
		e.loops = max(runtime.GOMAXPROCS(0)/2, 1)
	}
	e.loops = min(e.loops, conns)
	for range e.loops {
		e.tallies = append(e.tallies, newTally())
	}
	return e
}

// conn states
const (
	stIdle       = iota // no request (the loop's share is done)
	stConnecting        // connect in progress, request not yet written
	stWriting           // request partly written
	stReading           // request written, response being read
	stQueued            // waiting in the loop's ready list for its next request
)

// econn is one connection slot of a loop.
type econn struct {
	fd       int // -1: no connection
	state    int
	interest uint32 // events registered in the loop's epoll set (0: none)
	idx      int32  // index in the loop's slots, the epoll user data

	seq                            int64
	start, tConn, tWritten, tFirst time.Duration // mono
	deadline                       time.Duration
	reused                         bool
	attempt                        int
	connecting                     bool // the current fd has not carried a byte yet

	wrote          int
	filled, hdrEnd int // head phase: bytes in buf, end of the head (-1: not yet)
	status         int
	clen, body     int64
	closeConn      bool
	// mis is the body offset of the first byte that differs from the
	// page (-1: none so far); from there on the body is hashed, so a
	// wrong page is reported by its SHA-256 like the goroutine client.
	mis int64
	h   hash.Hash

	buf []byte
}

// loop is one driving goroutine's state, the evloop.Handler of its
// poller.
type loop struct {
	e     *events
	l     *runner.Loop
	t     *tally
	p     *evloop.Poller
	slots []*econn
	live  int      // slots with a request in flight
	ready []*econn // slots to start their next request
}

func mono() time.Duration { return evloop.Mono() }

// drive is the runner.Drive of the step: loop l owns connection slots
// l, l+L, l+2L, ...
func (e *events) drive(ctx context.Context, rl *runner.Loop) error {
	var slots []*econn
	for i := rl.ID; i < e.conns; i += e.loops {
		slots = append(slots, &econn{fd: -1, idx: int32(len(slots)), buf: make([]byte, 64<<10), mis: -1})
	}
	p, err := evloop.NewPoller(len(slots))
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	lp := &loop{e: e, l: rl, t: e.tallies[rl.ID], p: p, slots: slots}
	defer lp.closeAll()
	lp.ready = append(lp.ready, lp.slots...)
	for _, c := range lp.slots {
		c.state = stQueued // live until begin finds no more work
	}
	lp.live = len(lp.slots)
	return p.Run(ctx, rl, lp)
}

// Live starts the next request of the slots whose request ended without
// a response (a failure) here rather than from the failure, so a run of
// failures is a loop, not a recursion; and says whether any is in flight.
func (lp *loop) Live() (bool, error) {
	for len(lp.ready) > 0 {
		c := lp.ready[len(lp.ready)-1]
		lp.ready = lp.ready[:len(lp.ready)-1]
		lp.begin(c, mono())
	}
	return lp.live > 0, nil
}

// Ready moves a ready slot's request on.
func (lp *loop) Ready(slot int32, _ uint32) error {
	c := lp.slots[slot]
	switch c.state {
	case stConnecting, stWriting:
		lp.write(c, mono())
	case stReading:
		lp.read(c)
	}
	return nil
}

// Scan fails the requests whose deadline passed.
func (lp *loop) Scan(now time.Duration) error {
	lp.expire(now)
	return nil
}

func (lp *loop) closeAll() {
	for _, c := range lp.slots {
		lp.drop(c)
	}
	lp.p.Close()
}

// begin starts the slot's next request at now, if the loop has one.
func (lp *loop) begin(c *econn, now time.Duration) {
	seq, ok := lp.l.Next()
	if !ok {
		if c.state != stIdle {
			c.state = stIdle
			lp.live--
		}
		lp.drop(c)
		return
	}
	if c.state == stIdle {
		lp.live++
	}
	c.seq, c.start, c.attempt = seq, now, 0
	c.reused = c.fd >= 0
	lp.send(c, now)
}

// send opens a connection if the slot has none and writes the request.
func (lp *loop) send(c *econn, now time.Duration) {
	c.wrote, c.filled, c.hdrEnd, c.body, c.mis, c.closeConn = 0, 0, -1, 0, -1, false
	if c.fd >= 0 {
		c.state, c.tConn = stWriting, now
		if c.reused && c.attempt == 0 {
			// A request on a kept-alive connection has no connect time.
			c.tConn = c.start
		}
		c.deadline = c.tConn + lp.e.r.timeout
		lp.write(c, now)
		return
	}
	fd, errno := lp.e.addr.Connect()
	if fd < 0 {
		lp.fail(c, fConnect, "connect: socket: "+errno.Error())
		return
	}
	c.fd, c.state, c.connecting, c.interest = fd, stConnecting, true, 0
	c.deadline = now + lp.e.r.timeout
	if errno != 0 {
		lp.fail(c, fConnect, "connect: "+errno.Error())
		return
	}
	// On loopback the handshake is usually done by now: try the write
	// at once (a connecting socket answers EAGAIN, a refused one its
	// error), which saves an epoll round per connection.
	lp.write(c, mono())
}

// write writes (the rest of) the request.
func (lp *loop) write(c *econn, now time.Duration) {
	req := lp.e.r.req
	n, errno := evloop.Write(c.fd, req[c.wrote:])
	if errno == unix.EAGAIN || errno == unix.EINTR {
		lp.want(c, evloop.Out)
		return
	}
	if errno != 0 {
		switch {
		case c.connecting:
			lp.fail(c, fConnect, "connect: "+errno.Error())
		case c.reused && c.attempt == 0:
			lp.retry(c, now)
		default:
			lp.fail(c, fReceive, "receive: write: "+errno.Error())
		}
		return
	}
	if c.connecting {
		c.connecting = false
		c.tConn = now
		c.deadline = now + lp.e.r.timeout
		lp.t.n.dials++
	}
	c.wrote += n
	if c.wrote < len(req) {
		lp.want(c, evloop.Out)
		return
	}
	c.tWritten = mono()
	c.state = stReading
	lp.want(c, evloop.In)
}

// want sets the slot's epoll interest.
func (lp *loop) want(c *econn, ev uint32) {
	if c.interest == ev {
		return
	}
	if err := lp.p.Set(c.fd, c.idx, ev, c.interest != 0); err != nil {
		lp.fail(c, fExceptions, strings.TrimPrefix(err.Error(), "evloop: "))
		return
	}
	c.interest = ev
}

// retry reopens a kept-alive connection the server closed while it was
// idle and sends the request again, once, as ab -k and browsers do.
func (lp *loop) retry(c *econn, now time.Duration) {
	lp.drop(c)
	c.attempt++
	lp.send(c, now)
}

// read reads what the socket has and, when the response is complete,
// checks and records it and starts the slot's next request.
func (lp *loop) read(c *econn) {
	var p []byte
	if c.hdrEnd < 0 {
		if c.filled == len(c.buf) {
			lp.fail(c, fExceptions, "response headers larger than "+strconv.Itoa(len(c.buf))+" bytes")
			return
		}
		p = c.buf[c.filled:]
	} else {
		p = c.buf
	}
	n, errno := evloop.Read(c.fd, p)
	if errno == unix.EAGAIN || errno == unix.EINTR {
		return
	}
	if errno != 0 || n == 0 {
		msg := "EOF"
		if errno != 0 {
			msg = errno.Error()
		}
		switch {
		case c.hdrEnd < 0 && c.filled == 0 && c.reused && c.attempt == 0:
			lp.retry(c, mono())
		case c.hdrEnd < 0 && c.filled == 0:
			lp.fail(c, fReceive, errClosedEarly.Error())
		case c.hdrEnd >= 0 && c.clen < 0 && n == 0:
			// The body ends with the connection.
			c.closeConn = true
			lp.complete(c, mono())
		default:
			lp.fail(c, fReceive, "receive: "+msg)
		}
		return
	}
	now := mono()
	if c.hdrEnd < 0 {
		if c.filled == 0 {
			c.tFirst = now
		}
		from := max(c.filled-3, 0)
		c.filled += n
		i := bytes.Index(c.buf[from:c.filled], crlfcrlf)
		if i < 0 {
			return
		}
		c.hdrEnd = from + i + 4
		var chunked, ok bool
		c.status, c.clen, c.closeConn, chunked, ok = parseHead(c.buf[:c.hdrEnd])
		if !ok {
			lp.fail(c, fExceptions, "malformed response head: "+strconv.Quote(string(c.buf[:min(c.hdrEnd, 80)])))
			return
		}
		if chunked {
			lp.fail(c, fExceptions, "chunked transfer encoding is not supported (the server must send Content-Length)")
			return
		}
		lp.feed(c, c.buf[c.hdrEnd:c.filled])
	} else {
		lp.feed(c, c.buf[:n])
	}
	if c.clen >= 0 && c.body >= c.clen {
		lp.complete(c, now)
	}
}

// feed checks one piece of the body against the page.
func (lp *loop) feed(c *econn, b []byte) {
	if c.clen >= 0 && c.body+int64(len(b)) > c.clen {
		// Bytes past the declared length: the connection is out of
		// step, so it is not reused.
		b = b[:c.clen-c.body]
		c.closeConn = true
	}
	want := lp.e.r.want
	if c.mis < 0 {
		k := 0
		if c.body < int64(len(want)) {
			k = min(len(b), len(want)-int(c.body))
		}
		w := want[c.body : c.body+int64(k)]
		if k == len(b) && bytes.Equal(b, w) {
			c.body += int64(len(b))
			return
		}
		i := 0
		for i < k && b[i] == w[i] {
			i++
		}
		// The received body equals the page up to c.body+i: hash that
		// much of the page, then go on with what was received.
		c.mis = c.body + int64(i)
		if c.h == nil {
			c.h = sha256.New()
		}
		c.h.Reset()
		c.h.Write(want[:c.mis])
		c.h.Write(b[i:])
	} else {
		c.h.Write(b)
	}
	c.body += int64(len(b))
}

// complete records a whole response, checks it, and starts the next.
func (lp *loop) complete(c *econn, tDone time.Duration) {
	t, r := lp.t, lp.e.r
	t.n.total += int64(c.hdrEnd) + c.body
	t.n.html += c.body
	latency.Record(t.hist[0], c.tConn-c.start)
	latency.Record(t.hist[1], tDone-c.tConn)
	latency.Record(t.hist[2], c.tFirst-c.tWritten)
	latency.Record(t.hist[3], tDone-c.start)
	lp.l.Done(c.seq, tDone-c.start)
	if !r.keepAlive || c.closeConn {
		lp.drop(c)
	}
	switch {
	case c.status != 200:
		lp.failed(c, fNon2xx, "status "+strconv.Itoa(c.status))
	case c.body != int64(len(r.want)):
		lp.failed(c, fLength, fmt.Sprintf("body of %d bytes, want %d", c.body, len(r.want)))
	case c.mis >= 0:
		var sum [sha256.Size]byte
		lp.failed(c, fContent, fmt.Sprintf("body of %d bytes with sha256 %x, want %x", c.body, c.h.Sum(sum[:0]), r.wantSum))
	default:
		t.n.ok++
	}
	lp.begin(c, tDone)
}

// failed counts a completed request's failure and drops its connection.
func (lp *loop) failed(c *econn, kind int, msg string) {
	lp.t.count(kind, msg)
	lp.drop(c)
}

// fail ends the slot's request as failed (it counts as done, as ab counts
// it among the complete requests' failures) and queues its next one.
func (lp *loop) fail(c *econn, kind int, msg string) {
	lp.failed(c, kind, msg)
	lp.l.Done(c.seq, mono()-c.start)
	c.state = stQueued
	lp.ready = append(lp.ready, c)
}

// expire fails the requests whose deadline passed.
func (lp *loop) expire(now time.Duration) {
	for _, c := range lp.slots {
		if c.state == stIdle || c.state == stQueued || now < c.deadline {
			continue
		}
		if c.connecting {
			lp.fail(c, fConnect, "connect: timed out after "+lp.e.r.timeout.String())
		} else {
			lp.fail(c, fReceive, "receive: timed out after "+lp.e.r.timeout.String())
		}
	}
}

// drop closes the slot's connection (which also leaves the epoll set).
func (lp *loop) drop(c *econn) {
	if c.fd >= 0 {
		evloop.CloseRaw(c.fd)
		c.fd, c.interest, c.connecting = -1, 0, false
	}
}
