package http_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"storebench/internal/results"
	"storebench/internal/server/servertest"
	sweb "storebench/internal/server/web"
	"storebench/internal/study"
	"storebench/internal/workload"
	httpwl "storebench/internal/workload/http"
)

// The event-loop client counts exactly: a request count that the loops
// and connections do not divide is done exactly, each request verified
// and timed once in every histogram, spread over two loops or the
// default, and without keep-alive each request opened one connection.
func TestEventClientCountsExactly(t *testing.T) {
	h := open(t, "nginx", servertest.URI(t, "nginx"), nil)
	const n, c = 1001, 7
	for _, loops := range []int{0, 2} {
		for _, phase := range []string{httpwl.PhaseClose, httpwl.PhaseKeepAlive} {
			s, err := stepP(t, h, phase, c, httpwl.Params{Requests: httpwl.Requests{n}, Timeout: study.Duration(10 * time.Second), Loops: loops})
			if err != nil {
				t.Fatalf("loops %d %s: %v", loops, phase, err)
			}
			m := s.Metrics
			if s.Ops != n || m[httpwl.MFailed] != 0 || s.Verify.Checked != n || m[httpwl.MHTMLBytes] != n*648 {
				t.Errorf("loops %d %s: ops %d, metrics %v, verify %+v", loops, phase, s.Ops, m, s.Verify)
			}
			if !strings.HasPrefix(s.Facts[httpwl.FactClient], "epoll") || loops == 2 && s.Facts[httpwl.FactClient] != "epoll, 2 loops" {
				t.Errorf("loops %d %s: client %q", loops, phase, s.Facts[httpwl.FactClient])
			}
			for _, tm := range httpwl.Timings {
				if got := hist(t, s, tm); got != n {
					t.Errorf("loops %d %s: %s histogram counts %d", loops, phase, tm, got)
				}
			}
			var ivs int64
			for _, iv := range s.Series {
				ivs += iv.Ops
			}
			if ivs != n {
				t.Errorf("loops %d %s: time series sums to %d", loops, phase, ivs)
			}
			if conns := m[httpwl.MConns]; phase == httpwl.PhaseClose && conns != n || phase == httpwl.PhaseKeepAlive && conns != c {
				t.Errorf("loops %d %s: %v connections for %d requests", loops, phase, conns, n)
			}
		}
	}
}

// rawServer answers storebench's client with serve (req counts its
// requests from 0, over all connections; serve says whether to keep the
// connection) and anyone else (the target's probe at open) with the page.
func rawServer(t *testing.T, serve func(c net.Conn, req int64) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		reqs atomic.Int64
		mu   sync.Mutex
		open []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	page := sweb.Page(648)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					var head bytes.Buffer
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						head.WriteString(line)
						if line == "\r\n" {
							break
						}
					}
					if !strings.Contains(head.String(), "User-Agent: storebench\r\n") {
						fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(page), page)
						return
					}
					if !serve(c, reqs.Add(1)-1) {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + sweb.PagePath
}

func head(n int) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nServer: raw\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", n)
}

// Each way a server can misbehave is counted under ab's class by the
// event-loop client, with and without keep-alive, every request once.
func TestEventClientFailureClasses(t *testing.T) {
	page := sweb.Page(648)
	const n, c = 40, 4
	for _, tc := range []struct {
		name   string
		serve  func(net.Conn, int64) bool
		metric string
		first  string
	}{
		{"short body then close", func(w net.Conn, _ int64) bool {
			fmt.Fprintf(w, "%s%s", head(648), page[:600])
			return false
		}, httpwl.MReceive, "receive: EOF"},
		{"closed without a response", func(net.Conn, int64) bool { return false }, httpwl.MReceive, "connection closed before a response"},
		{"longer body", func(w net.Conn, _ int64) bool {
			fmt.Fprintf(w, "%s%s%s", head(700), page, strings.Repeat("y", 52))
			return true
		}, httpwl.MLength, "body of 700 bytes, want 648"},
		{"status 404", func(w net.Conn, _ int64) bool {
			fmt.Fprintf(w, "HTTP/1.1 404 Not Found\r\nContent-Length: 648\r\n\r\n%s", page)
			return true
		}, httpwl.MNon2xx, "status 404"},
		{"malformed head", func(w net.Conn, _ int64) bool {
			fmt.Fprintf(w, "HTTP/1.1 2x0 OK\r\nContent-Length: 648\r\n\r\n%s", page)
			return true
		}, httpwl.MExceptions, "malformed response head"},
		{"chunked", func(w net.Conn, _ int64) bool {
			fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n288\r\n%s\r\n0\r\n\r\n", page)
			return false
		}, httpwl.MExceptions, "chunked"},
	} {
		uri := rawServer(t, tc.serve)
		h := open(t, "nginx", uri, nil)
		for _, phase := range []string{httpwl.PhaseClose, httpwl.PhaseKeepAlive} {
			s, err := step(t, h, phase, c, n)
			if err == nil || s == nil {
				t.Errorf("%s, %s: no error (%v)", tc.name, phase, err)
				continue
			}
			m := s.Metrics
			if s.Ops != n || m[tc.metric] != n || m[httpwl.MFailed] != n || !strings.Contains(s.Verify.First, tc.first) || !strings.HasPrefix(s.Facts[httpwl.FactClient], "epoll") {
				t.Errorf("%s, %s: ops %d, %s %v, metrics %v, first %q, client %q", tc.name, phase, s.Ops, tc.metric, m[tc.metric], m, s.Verify.First, s.Facts[httpwl.FactClient])
			}
		}
	}
}

// Responses split anywhere (inside the head's blank line, inside the
// body) are put together; a body that differs only in its last byte is a
// content failure reported with the SHA-256 of what was received; a
// kept-alive connection the server closed after each response is
// reopened and the request sent again, not counted as a failure.
func TestEventClientSplitResponsesAndReconnects(t *testing.T) {
	page := sweb.Page(648)
	bad := bytes.Clone(page)
	bad[len(bad)-1] ^= 1
	uri := rawServer(t, func(w net.Conn, req int64) bool {
		body := page
		if req%2 == 1 {
			body = bad
		}
		msg := []byte(head(648) + string(body))
		i := strings.Index(string(msg), "\r\n\r\n") + 3
		for _, part := range [][]byte{msg[:i], msg[i : i+100], msg[i+100:]} {
			w.Write(part)
			time.Sleep(time.Millisecond)
		}
		return true
	})
	const n, c = 40, 4
	h := open(t, "nginx", uri, nil)
	for _, phase := range []string{httpwl.PhaseClose, httpwl.PhaseKeepAlive} {
		s, err := step(t, h, phase, c, n)
		var ve *workload.VerifyError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "20 content") {
			t.Fatalf("%s: error %v", phase, err)
		}
		sum := sha256.Sum256(bad)
		if s.Ops != n || s.Metrics[httpwl.MContent] != n/2 || s.Verify.Checked != n || s.Verify.Failed != n/2 || !strings.Contains(s.Verify.First, fmt.Sprintf("sha256 %x", sum)) {
			t.Errorf("%s: ops %d metrics %v verify %+v", phase, s.Ops, s.Metrics, s.Verify)
		}
	}

	once := rawServer(t, func(w net.Conn, _ int64) bool {
		fmt.Fprintf(w, "%s%s", head(648), page)
		return false // closes a kept-alive connection after one response
	})
	s, err := step(t, open(t, "nginx", once, nil), httpwl.PhaseKeepAlive, c, n)
	if err != nil || s.Ops != n || s.Metrics[httpwl.MFailed] != 0 || s.Verify.Checked != n || s.Metrics[httpwl.MConns] != n {
		t.Errorf("server closing kept-alive connections: %v, ops %d, metrics %v", err, s.Ops, stepMetrics(s))
	}
}

// A server that never answers: each request fails as a receive failure
// after the timeout, from the loop's deadline scan, and the step ends.
func TestEventClientTimeout(t *testing.T) {
	uri := rawServer(t, func(net.Conn, int64) bool { return true })
	h := open(t, "nginx", uri, nil)
	t0 := time.Now()
	s, err := stepP(t, h, httpwl.PhaseKeepAlive, 3, httpwl.Params{Requests: httpwl.Requests{6}, Timeout: study.Duration(200 * time.Millisecond)})
	if err == nil || s.Ops != 6 || s.Metrics[httpwl.MReceive] != 6 || !strings.Contains(s.Verify.First, "timed out after 200ms") {
		t.Fatalf("error %v, ops %d, metrics %v, first %q", err, s.Ops, stepMetrics(s), s.Verify.First)
	}
	if d := time.Since(t0); d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("two rounds of 200ms timeouts took %v", d)
	}
}

func stepMetrics(s *results.Step) map[string]float64 {
	if s == nil {
		return nil
	}
	return s.Metrics
}
