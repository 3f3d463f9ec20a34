package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/server"
	_ "storebench/internal/server/apache"
	_ "storebench/internal/server/nginx"
	_ "storebench/internal/server/node"
	"storebench/internal/server/servertest"
	"storebench/internal/server/web"
	"storebench/internal/study"
	"storebench/internal/target"
	_ "storebench/internal/target/web"
	"storebench/internal/workload"
	httpwl "storebench/internal/workload/http"
	"storebench/internal/workload/worktest/captest"
)

func open(t *testing.T, name, uri string, extra map[string]string) io.Closer {
	t.Helper()
	h := captest.Open(t, name, target.Options{URI: uri, Extra: extra})
	t.Cleanup(func() { h.Close() })
	return h
}

func step(t *testing.T, h io.Closer, phase string, conc, requests int) (*results.Step, error) {
	t.Helper()
	return stepP(t, h, phase, conc, httpwl.Params{Requests: httpwl.Requests{study.Count(requests)}, Timeout: study.Duration(10 * time.Second)})
}

func stepP(t *testing.T, h io.Closer, phase string, conc int, p httpwl.Params) (*results.Step, error) {
	t.Helper()
	raw, _ := json.Marshal(p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := workload.Step{Workload: "http", Phase: phase, N: 1, Concurrency: conc, Params: raw}
	res, err := httpwl.HTTP{}.Execute(ctx, &workload.Env{Target: h}, st)
	if res != nil {
		// What the worker fills in around a workload's result.
		res.Workload, res.Phase, res.N = st.Workload, st.Phase, st.N
	}
	return res, err
}

func hist(t *testing.T, s *results.Step, name string) int64 {
	h, err := latency.Decode(s.Facts[httpwl.FactHist+name])
	if err != nil {
		t.Fatal(err)
	}
	return h.TotalCount()
}

// Against each real server, both ways: every request completes, is
// verified, and is counted once in each of the four histograms; without
// keep-alive each request opened its own connection, with it only the C
// connections (plus any the server closed) were opened.
func TestAgainstEachServer(t *testing.T) {
	const n, c = 400, 8
	for _, name := range []string{"apache", "nginx", "node"} {
		t.Run(name, func(t *testing.T) {
			h := open(t, name, servertest.URI(t, name), nil)
			for _, phase := range []string{httpwl.PhaseClose, httpwl.PhaseKeepAlive} {
				s, err := step(t, h, phase, c, n)
				if err != nil {
					t.Fatalf("%s: %v", phase, err)
				}
				m := s.Metrics
				if s.Ops != n || m[httpwl.MRequests] != n || m[httpwl.MFailed] != 0 || s.Verify.Checked != n || s.Verify.Failed != 0 {
					t.Errorf("%s: ops %d, metrics %v, verify %+v", phase, s.Ops, m, s.Verify)
				}
				if m[httpwl.MHTMLBytes] != n*648 || m[httpwl.MTotalBytes] <= n*648 || m[httpwl.MPageBytes] != 648 {
					t.Errorf("%s: bytes %v / %v", phase, m[httpwl.MHTMLBytes], m[httpwl.MTotalBytes])
				}
				for _, tm := range httpwl.Timings {
					if got := hist(t, s, tm); got != n {
						t.Errorf("%s: %s histogram counts %d", phase, tm, got)
					}
				}
				conns := m[httpwl.MConns]
				if phase == httpwl.PhaseClose && conns != n || phase == httpwl.PhaseKeepAlive && conns > 2*c {
					t.Errorf("%s: %v connections opened for %d requests", phase, conns, n)
				}
				t.Logf("%s %s: %.0f requests/s, %v connections", name, phase, m[httpwl.MRPS], conns)
			}
		})
	}
}

// A server serving another page fails verification: a page of another
// length (nginx started with page_bytes 1000, the target expecting 648)
// counts Length failures, a page of the same length with other bytes
// counts Content failures; the step fails naming them.
func TestWrongPageFailsVerification(t *testing.T) {
	t.Run("Length", func(t *testing.T) {
		inst := servertest.StartConfig(t, "nginx", serverConfig("1000"))
		s, err := step(t, open(t, "nginx", inst.URI, nil), httpwl.PhaseClose, 4, 50)
		var ve *workload.VerifyError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "50 length") {
			t.Fatalf("error %v", err)
		}
		if s.Metrics[httpwl.MLength] != 50 || s.Metrics[httpwl.MFailed] != 50 || s.Verify.Failed != 50 || !strings.Contains(s.Verify.First, "1000 bytes, want 648") {
			t.Errorf("metrics %v verify %+v", s.Metrics, s.Verify)
		}
	})
	t.Run("Content", func(t *testing.T) {
		other := []byte(strings.Repeat("x", 648))
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(other)))
			w.Write(other)
		}))
		defer srv.Close()
		s, err := step(t, open(t, "nginx", srv.URL+web.PagePath, nil), httpwl.PhaseKeepAlive, 4, 50)
		if err == nil || !strings.Contains(err.Error(), "50 content") {
			t.Fatalf("error %v", err)
		}
		if s.Metrics[httpwl.MContent] != 50 || s.Metrics[httpwl.MLength] != 0 || !strings.Contains(s.Verify.First, "sha256") {
			t.Errorf("metrics %v verify %+v", s.Metrics, s.Verify)
		}
		// The same server as an external URL: its page is what it
		// serves, read at open, and every response matches it.
		s, err = step(t, open(t, "http", srv.URL+"/", nil), httpwl.PhaseKeepAlive, 4, 50)
		if err != nil || s.Verify.Checked != 50 || s.Metrics[httpwl.MFailed] != 0 {
			t.Errorf("external URL: %v, %+v", err, s.Verify)
		}
	})
	t.Run("ConnectRefused", func(t *testing.T) {
		inst := servertest.StartConfig(t, "nginx", serverConfig(""))
		h := open(t, "nginx", inst.URI, nil)
		inst.Stop(context.Background())
		s, err := step(t, h, httpwl.PhaseClose, 2, 20)
		if err == nil || s.Metrics[httpwl.MConnect] != 20 {
			t.Errorf("against a stopped server: %v, %v", err, s.Metrics)
		}
	})
}

// The report prints ab's figures, each recomputed here from the step's
// histograms and counts as they come back from results.json.
func TestReportRecomputedFromHistograms(t *testing.T) {
	h := open(t, "nginx", servertest.URI(t, "nginx"), nil)
	st, err := step(t, h, httpwl.PhaseClose, 10, 300)
	if err != nil {
		t.Fatal(err)
	}
	run := &results.Run{Study: "http", Ladder: []int64{1}, Targets: []*results.Target{{Name: "nginx", Title: "nginx", Status: "ok", Steps: []*results.Step{st}}}}
	b, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	var back results.Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	s := back.Targets[0].Steps[0]
	md := report.Markdown(&back)
	msr := func(ns float64) int64 { return int64(math.Round(ns / 1e6)) }
	var want []string
	for i, label := range []string{"Connect:", "Processing:", "Waiting:", "Total:"} {
		hh, err := latency.Decode(s.Facts[httpwl.FactHist+httpwl.Timings[i]])
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%-12s%5d %4d %5.1f %6d %7d", label, msr(float64(hh.Min())), msr(hh.Mean()), hh.StdDev()/1e6, msr(float64(hh.ValueAtQuantile(50))), msr(float64(hh.Max()))))
		if label == "Total:" {
			want = append(want, fmt.Sprintf("  90%%  %5d", msr(float64(hh.ValueAtQuantile(90)))), fmt.Sprintf(" 100%%  %5d (longest request)", msr(float64(hh.Max()))))
		}
	}
	want = append(want,
		"Concurrency Level:      10",
		fmt.Sprintf("Time taken for tests:   %.3f seconds", s.Seconds),
		"Complete requests:      300", "Failed requests:        0",
		fmt.Sprintf("Total transferred:      %.0f bytes", s.Metrics[httpwl.MTotalBytes]),
		"HTML transferred:       194400 bytes",
		fmt.Sprintf("Requests per second:    %.2f [#/sec] (mean)", 300/s.Seconds),
		fmt.Sprintf("Time per request:       %.3f [ms] (mean)", 10*s.Seconds*1000/300),
		fmt.Sprintf("Time per request:       %.3f [ms] (mean, across all concurrent requests)", s.Seconds*1000/300),
		fmt.Sprintf("Transfer rate:          %.2f [Kbytes/sec] received", s.Metrics[httpwl.MTotalBytes]/1024/s.Seconds),
		"### nginx, a new connection per request (ab without -k), concurrency 10",
	)
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
}

func serverConfig(pageBytes string) server.Config {
	if pageBytes == "" {
		return server.Config{}
	}
	return server.Config{Options: map[string]string{web.OptionPageBytes: pageBytes}}
}
