// Package http is the ab-shaped workload (seed 003: `ab -n 500 -c 100`):
// GETs of one page over C concurrent connections, a new connection per
// request (ab without -k) or persistent ones (keep-alive), with every
// response checked (status 200, length, SHA-256 of the body) and failures
// counted the way ab counts its "Failed requests". Its client is its own:
// raw HTTP/1.1 over net.Conn, allocation-free per request once a
// connection is up, timing each request's connect, processing, waiting
// (time to first byte after the request was written) and total into
// separate HdrHistograms, from which the report prints ab's tables.
package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gopkg.in/yaml.v3"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/target"
	"storebench/internal/workload"
)

func init() { workload.Register(HTTP{}) }

// Site is what an HTTP target's handle offers (target.HTTPSite, which
// package target/web implements).
type Site = target.HTTPSite

// Phases: a new connection per request, and persistent connections.
const (
	PhaseClose     = "close"
	PhaseKeepAlive = "keepalive"
)

// Metric and fact names in results.json.
const (
	MConcurrency = "concurrency"
	MRequests    = "requests"
	MFailed      = "failed"
	MConnect     = "failed_connect"
	MReceive     = "failed_receive"
	MLength      = "failed_length"
	MExceptions  = "failed_exceptions"
	MContent     = "failed_content"
	MNon2xx      = "non_2xx"
	MTotalBytes  = "total_bytes"
	MHTMLBytes   = "html_bytes"
	MRPS         = "requests_per_s"
	MPageBytes   = "page_bytes"
	MConns       = "connections_opened"
	// FactClient says which client drove the step: the event loops
	// ("epoll, L loops") or one goroutine per connection.
	FactClient = "client"
	// FactHist + a timing name ("connect", "processing", "waiting",
	// "total") holds that timing's encoded HdrHistogram.
	FactHist = "hist."
)

// Timings are ab's "Connection Times" rows.
var Timings = []string{"connect", "processing", "waiting", "total"}

// KeepAlive is the keep_alive param: a bool, or a list of them to run
// both ways ([false, true]); each value is a phase.
type KeepAlive []bool

func (k *KeepAlive) UnmarshalYAML(n *yaml.Node) error {
	var one bool
	if n.Kind == yaml.ScalarNode {
		if err := n.Decode(&one); err != nil {
			return fmt.Errorf("want true, false or a list of them")
		}
		*k = KeepAlive{one}
		return nil
	}
	var list []bool
	if err := n.Decode(&list); err != nil || len(list) == 0 || len(list) > 2 || (len(list) == 2 && list[0] == list[1]) {
		return fmt.Errorf("want true, false, or [false, true]")
	}
	*k = list
	return nil
}

// Requests is the requests param: a count, or a list of counts, each a
// step of its own (seed 003 ran ab at -n 500, and a longer run beside it
// says whether 500 requests were enough to tell anything).
type Requests []study.Count

func (r *Requests) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var one study.Count
		if err := n.Decode(&one); err != nil {
			return err
		}
		*r = Requests{one}
		return nil
	}
	var list []study.Count
	if err := n.Decode(&list); err != nil || len(list) == 0 {
		return fmt.Errorf("want a count (5000, 20k) or a list of them")
	}
	seen := map[study.Count]bool{}
	for _, c := range list {
		if seen[c] {
			return fmt.Errorf("%d is listed twice", c)
		}
		seen[c] = true
	}
	*r = list
	return nil
}

// LRequests labels a step with its request count when the requests param
// lists several.
const LRequests = "requests"

// Params of the workload (ab's flags in brackets).
type Params struct {
	Requests  Requests       `yaml:"requests" json:"requests" range:"0..1e12"` // -n
	Duration  study.Duration `yaml:"duration" json:"duration" range:"0s..24h"` // -t (then requests is ignored)
	KeepAlive KeepAlive      `yaml:"keep_alive" json:"keep_alive"`             // -k
	Timeout   study.Duration `yaml:"timeout" json:"timeout" range:"1ms..1h"`   // -s
	// Loops is how many event loops share the connections (Linux, plain
	// HTTP); 0: half the cores, at least one.
	Loops int `yaml:"loops" json:"loops,omitempty" range:"0..1024"`
}

// HTTP implements workload.Workload. Connections are the step's
// concurrency (-c).
type HTTP struct{}

func (HTTP) Name() string { return "http" }
func (HTTP) Describe() string {
	return "GETs of one page over C connections, new per request or kept alive, every response verified (ab -n N -c C [-k])"
}

func (HTTP) DecodeParams(s workload.Planning, e study.Entry) (json.RawMessage, error) {
	p := Params{Requests: Requests{5000}, KeepAlive: KeepAlive{false}, Timeout: study.Duration(30 * time.Second)}
	if err := study.DecodeParams(s.File, e.Params, "workloads.http.params", &p); err != nil {
		return nil, err
	}
	field := func(name, msg string) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Params, name), Field: "workloads.http.params." + name, Msg: msg}
	}
	switch {
	case p.Duration < 0:
		return nil, field("duration", "must not be negative")
	case p.Duration == 0 && slices.Min(p.Requests) < 1:
		return nil, field("requests", "want at least 1 (or a duration)")
	case p.Duration > 0 && len(p.Requests) > 1:
		return nil, field("requests", "a list of request counts needs no duration (a duration bounds every step)")
	case p.Timeout <= 0:
		return nil, field("timeout", "want a positive duration")
	case p.Loops < 0 || p.Loops > 1024:
		return nil, field("loops", "want 0 (half the cores) to 1024")
	}
	return json.Marshal(p)
}

func (HTTP) Plan(s workload.Planning, raw json.RawMessage) ([]workload.Step, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var steps []workload.Step
	for _, k := range p.KeepAlive {
		phase := PhaseClose
		if k {
			phase = PhaseKeepAlive
		}
		for _, n := range p.Requests {
			st := workload.Step{Workload: "http", Phase: phase, N: s.Largest(), Seed: s.Seed, Concurrency: s.Concurrency,
				Params: raw, Largest: s.Largest(), Requires: target.Caps{target.HTTPEndpoint}}
			if len(p.Requests) > 1 {
				st.Labels = results.Labels{LRequests: strconv.FormatInt(int64(n), 10)}
			}
			steps = append(steps, st)
		}
	}
	return steps, nil
}

// counts are one connection's tallies (padded: the goroutines or event
// loops write them on every request).
type counts struct {
	ok, connect, receive, length, exceptions, content, non2xx int64
	total, html, dials                                        int64
	_                                                         [6]int64
}

// tally is what one load goroutine counted: its failures by class, its
// bytes and its four timings. Each goroutine owns one; they are merged
// when the step ends.
type tally struct {
	hist [4]*hdr.Histogram // connect, processing, waiting, total
	n    counts
	// first failure seen, for the report and the error.
	first string
}

func newTally() *tally {
	return &tally{hist: [4]*hdr.Histogram{latency.New(), latency.New(), latency.New(), latency.New()}}
}

// count files one failed request under its ab class.
func (t *tally) count(kind int, msg string) {
	switch kind {
	case fConnect:
		t.n.connect++
	case fReceive:
		t.n.receive++
	case fLength:
		t.n.length++
	case fExceptions:
		t.n.exceptions++
	case fContent:
		t.n.content++
	case fNon2xx:
		t.n.non2xx++
	}
	if t.first == "" {
		t.first = msg
	}
}

// client is one connection slot (one of the C concurrent requests) of
// the goroutine client.
type client struct {
	tally
	mu   sync.Mutex // guards conn against the cancelling goroutine
	conn net.Conn
	buf  []byte
	h    hash.Hash
	sum  [sha256.Size]byte
}

type run struct {
	addr, host string
	tls        *tls.Config
	keepAlive  bool
	timeout    time.Duration
	req        []byte
	want       []byte
	wantSum    [sha256.Size]byte
	phase      string
}

// failure kinds
const (
	fConnect = iota
	fReceive
	fLength
	fExceptions
	fContent
	fNon2xx
)

func (c *client) fail(kind int, msg string) {
	c.count(kind, msg)
	c.drop()
}

func (c *client) drop() {
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	c.mu.Unlock()
}

func (r *run) dial(ctx context.Context, c *client) error {
	d := net.Dialer{Timeout: r.timeout}
	conn, err := d.DialContext(ctx, "tcp", r.addr)
	if err != nil {
		return err
	}
	if r.tls != nil {
		tc := tls.Client(conn, r.tls)
		_ = tc.SetDeadline(time.Now().Add(r.timeout))
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return err
		}
		conn = tc
	}
	c.n.dials++
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	if ctx.Err() != nil {
		c.drop()
		return ctx.Err()
	}
	return nil
}

var errClosedEarly = errors.New("connection closed before a response")

// do runs one request on c, tallying it; it returns an error only when
// ctx ended.
func (r *run) do(ctx context.Context, c *client) error {
	start := time.Now()
	reused := c.conn != nil
	for attempt := 0; ; attempt++ {
		if c.conn == nil {
			if err := r.dial(ctx, c); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				c.fail(fConnect, "connect: "+err.Error())
				return nil
			}
		}
		tConn := time.Now()
		if reused && attempt == 0 {
			// A request on a kept-alive connection has no connect time.
			tConn = start
		}
		err := r.exchange(c, start, tConn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			c.drop()
			return ctx.Err()
		}
		// A kept-alive connection the server closed while idle: one
		// retry on a fresh one, as ab -k and browsers do.
		if errors.Is(err, errClosedEarly) && reused && attempt == 0 {
			c.drop()
			continue
		}
		kind := fReceive
		var fe *failure
		if errors.As(err, &fe) {
			kind = fe.kind
		}
		c.fail(kind, err.Error())
		return nil
	}
}

type failure struct {
	kind int
	msg  string
}

func (f *failure) Error() string { return f.msg }

// exchange writes the request and reads the response on c.conn.
func (r *run) exchange(c *client, start, tConn time.Time) error {
	conn := c.conn
	_ = conn.SetDeadline(tConn.Add(r.timeout))
	if _, err := conn.Write(r.req); err != nil {
		return errClosedEarly
	}
	tWritten := time.Now()
	var tFirst time.Time
	filled, hdrEnd := 0, -1
	for hdrEnd < 0 {
		if filled == len(c.buf) {
			return &failure{fExceptions, "response headers larger than " + strconv.Itoa(len(c.buf)) + " bytes"}
		}
		n, err := conn.Read(c.buf[filled:])
		if n > 0 && filled == 0 {
			tFirst = time.Now()
		}
		filled += n
		if i := bytes.Index(c.buf[:filled], crlfcrlf); i >= 0 {
			hdrEnd = i + 4
			break
		}
		if err != nil {
			if filled == 0 {
				return errClosedEarly
			}
			return &failure{fReceive, "receive: " + err.Error()}
		}
	}
	status, clen, closeConn, chunked, ok := parseHead(c.buf[:hdrEnd])
	if !ok {
		return &failure{fExceptions, "malformed response head: " + strconv.Quote(string(c.buf[:min(hdrEnd, 80)]))}
	}
	if chunked {
		return &failure{fExceptions, "chunked transfer encoding is not supported (the server must send Content-Length)"}
	}
	c.h.Reset()
	body := int64(filled - hdrEnd)
	c.h.Write(c.buf[hdrEnd:filled])
	for clen < 0 || body < clen {
		n, err := conn.Read(c.buf)
		if n > 0 {
			if clen >= 0 && body+int64(n) > clen {
				n = int(clen - body)
			}
			c.h.Write(c.buf[:n])
			body += int64(n)
		}
		if err != nil {
			if clen < 0 {
				closeConn = true
				break // the body ends with the connection
			}
			return &failure{fReceive, "receive: " + err.Error()}
		}
	}
	tDone := time.Now()
	c.n.total += int64(hdrEnd) + body
	c.n.html += body
	latency.Record(c.hist[0], tConn.Sub(start))
	latency.Record(c.hist[1], tDone.Sub(tConn))
	latency.Record(c.hist[2], tFirst.Sub(tWritten))
	latency.Record(c.hist[3], tDone.Sub(start))
	if !r.keepAlive || closeConn {
		c.drop()
	}
	switch {
	case status != 200:
		c.fail(fNon2xx, "status "+strconv.Itoa(status))
	case body != int64(len(r.want)):
		c.fail(fLength, fmt.Sprintf("body of %d bytes, want %d", body, len(r.want)))
	case !bytes.Equal(c.h.Sum(c.sum[:0]), r.wantSum[:]):
		c.fail(fContent, fmt.Sprintf("body of %d bytes with sha256 %x, want %x", body, c.sum, r.wantSum))
	default:
		c.n.ok++
	}
	return nil
}

var crlfcrlf = []byte("\r\n\r\n")

// parseHead reads the status and the headers that shape the body:
// Content-Length (-1: absent), Connection: close, chunked encoding.
func parseHead(h []byte) (status int, clen int64, closeConn, chunked, ok bool) {
	clen = -1
	if len(h) < 12 || !bytes.HasPrefix(h, []byte("HTTP/1.")) {
		return 0, 0, false, false, false
	}
	for _, d := range h[9:12] {
		if d < '0' || d > '9' {
			return 0, 0, false, false, false
		}
		status = status*10 + int(d-'0')
	}
	http10 := h[7] == '0'
	keep := false
	line := h[bytes.IndexByte(h, '\n')+1:]
	for len(line) > 2 {
		end := bytes.IndexByte(line, '\n')
		if end < 0 {
			break
		}
		l := line[:end]
		line = line[end+1:]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		colon := bytes.IndexByte(l, ':')
		// Only three header names matter; their lengths (14, 10, 17)
		// rule out the others before any case-folding compare.
		if colon != 14 && colon != 10 && colon != 17 {
			continue
		}
		name, val := l[:colon], bytes.TrimSpace(l[colon+1:])
		switch {
		case colon == 14 && bytes.EqualFold(name, []byte("content-length")):
			v, ok := digits(val)
			if !ok {
				return 0, 0, false, false, false
			}
			clen = v
		case colon == 10 && bytes.EqualFold(name, []byte("connection")):
			closeConn = closeConn || bytes.EqualFold(val, []byte("close"))
			keep = bytes.EqualFold(val, []byte("keep-alive"))
		case colon == 17 && bytes.EqualFold(name, []byte("transfer-encoding")):
			chunked = !bytes.EqualFold(val, []byte("identity"))
		}
	}
	if http10 && !keep {
		closeConn = true
	}
	return status, clen, closeConn, chunked, true
}

// digits parses a decimal length without allocating.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + int64(d-'0')
	}
	return v, true
}

// measureGoroutines runs the step with one goroutine per connection on
// blocking net.Conns: the path for TLS and for platforms without the
// event loops.
func (r *run) measureGoroutines(ctx context.Context, env *workload.Env, load workload.Load, conns int) ([]*tally, *results.Step, error) {
	cs := make([]*client, conns)
	tallies := make([]*tally, conns)
	for i := range cs {
		cs[i] = &client{tally: *newTally(), buf: make([]byte, 64<<10), h: sha256.New()}
		tallies[i] = &cs[i].tally
	}
	// A cancelled step must not wait out a request's timeout.
	stopWatch := context.AfterFunc(ctx, func() {
		for _, c := range cs {
			c.mu.Lock()
			if c.conn != nil {
				_ = c.conn.SetDeadline(time.Now())
			}
			c.mu.Unlock()
		}
	})
	defer stopWatch()
	defer func() {
		for _, c := range cs {
			c.drop()
		}
	}()
	res, err := workload.Measure(ctx, env, load.On(conns), func(ctx context.Context, w int, _ int64) error {
		return r.do(ctx, cs[w])
	})
	return tallies, res, err
}

func (HTTP) Execute(ctx context.Context, env *workload.Env, st workload.Step) (*results.Step, error) {
	var p Params
	if err := json.Unmarshal(st.Params, &p); err != nil {
		return nil, err
	}
	site, ok := env.Target.(Site)
	if !ok {
		return nil, fmt.Errorf("http: target %T does not serve HTTP", env.Target)
	}
	r, path, err := newRun(site, st.Phase, time.Duration(p.Timeout))
	if err != nil {
		return nil, err
	}
	conns := max(st.Concurrency, 1)
	load := loadOf(p, st)
	var (
		tallies []*tally
		res     *results.Step
		client  string
	)
	if ev := newEvents(r, conns, p.Loops); ev != nil {
		// The event-loop client (Linux, plain HTTP): a few loops own
		// the connections and read only readable sockets.
		tallies, client = ev.tallies, fmt.Sprintf("epoll, %d loops", ev.loops)
		res, err = workload.Measure(ctx, env, load.Driven(ev.loops, ev.drive), nil)
	} else {
		client = "goroutines"
		tallies, res, err = r.measureGoroutines(ctx, env, load, conns)
	}
	if res == nil {
		return nil, err
	}
	n, hists, first := mergeTallies(tallies)
	failed := n.connect + n.receive + n.length + n.exceptions + n.content + n.non2xx
	res.Unit = "GET " + path
	if r.keepAlive {
		res.Unit += " (keep-alive)"
	}
	res.Metrics = map[string]float64{
		MConcurrency: float64(conns), MRequests: float64(res.Ops), MFailed: float64(failed),
		MConnect: float64(n.connect), MReceive: float64(n.receive), MLength: float64(n.length), MExceptions: float64(n.exceptions),
		MContent: float64(n.content), MNon2xx: float64(n.non2xx), MTotalBytes: float64(n.total), MHTMLBytes: float64(n.html),
		MPageBytes: float64(len(r.want)), MConns: float64(n.dials),
	}
	if res.Seconds > 0 {
		res.Metrics[MRPS] = float64(res.Ops) / res.Seconds
	}
	res.Facts = map[string]string{FactClient: client}
	for j, name := range Timings {
		res.Facts[FactHist+name], _ = latency.Encode(hists[j])
	}
	bad := n.length + n.content + n.non2xx
	res.Verify = results.Verify{Checked: n.ok + bad, Failed: bad}
	if failed > 0 {
		res.Verify.First = first
	}
	if err != nil {
		return res, err
	}
	switch {
	case bad > 0:
		return res, &workload.VerifyError{Phase: st.Phase, Key: []byte(path), What: fmt.Sprintf("%d of %d responses were not the expected page (%d length, %d content, %d non-200); first: %s", bad, res.Ops, n.length, n.content, n.non2xx, first)}
	case n.ok == 0:
		return res, fmt.Errorf("http %s: no request succeeded (%d failed); first: %s", st.Phase, failed, first)
	case failed*10 > res.Ops:
		return res, fmt.Errorf("http %s: %d of %d requests failed (connect %d, receive %d, exceptions %d); first: %s", st.Phase, failed, res.Ops, n.connect, n.receive, n.exceptions, first)
	}
	return res, nil
}

// newRun is the step's client of site: its request for the page (over
// TLS where the site serves it), kept alive in the keep-alive phase, and
// the page it must return; path is the page's.
func newRun(site Site, phase string, timeout time.Duration) (r *run, path string, err error) {
	addr, host, path, useTLS := site.HTTPEndpoint()
	want := site.ExpectedPage()
	r = &run{addr: addr, host: host, keepAlive: phase == PhaseKeepAlive, timeout: timeout, want: want, wantSum: sha256.Sum256(want), phase: phase}
	if useTLS {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, "", err
		}
		r.tls = &tls.Config{ServerName: h}
	}
	conn := "close"
	if r.keepAlive {
		conn = "keep-alive"
	}
	r.req = []byte("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: storebench\r\nAccept: */*\r\nConnection: " + conn + "\r\n\r\n")
	return r, path, nil
}

// loadOf is the step's load: the requests to send, or how long (the
// total for progress then 0); its goroutines or event loops are set
// where it runs.
func loadOf(p Params, st workload.Step) workload.Load {
	var requests int64
	if len(p.Requests) > 0 {
		requests = int64(p.Requests[0])
	}
	if v := st.Labels.Int(LRequests); v > 0 {
		requests = v
	}
	if d := time.Duration(p.Duration); d > 0 || st.Duration > 0 {
		if st.Duration > 0 {
			d = st.Duration
		}
		return workload.Closed(0, 0).For(d)
	}
	return workload.Closed(0, requests)
}

// mergeTallies merges the load goroutines' tallies: the counts, the four
// timings' histograms and the first failure seen.
func mergeTallies(tallies []*tally) (n counts, hists [4]*hdr.Histogram, first string) {
	hists = [4]*hdr.Histogram{latency.New(), latency.New(), latency.New(), latency.New()}
	for _, c := range tallies {
		n.ok += c.n.ok
		n.connect += c.n.connect
		n.receive += c.n.receive
		n.length += c.n.length
		n.exceptions += c.n.exceptions
		n.content += c.n.content
		n.non2xx += c.n.non2xx
		n.total += c.n.total
		n.html += c.n.html
		n.dials += c.n.dials
		for j := range hists {
			hists[j].Merge(c.hist[j])
		}
		if first == "" {
			first = c.first
		}
	}
	return n, hists, first
}
