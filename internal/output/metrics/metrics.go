// Package metrics is the output that serves a run's figures live, in the
// OpenMetrics (and Prometheus text) format, at http://ADDR/metrics
// (storebench run --metrics ADDR). A running step's operations and
// throughput move with every tick; when a step ends its series hold its
// figures: throughput, latency quantiles from its HDR histogram, verified
// reads and verification failures, whether it failed, and the target's
// RSS and CPU over the step. Every series is labelled by study, target,
// workload, phase, n and labels (the step's other labels, "concurrency=8
// rate=2000"). The endpoint lives as long as the run.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"storebench/internal/event"
	"storebench/internal/output"
	"storebench/internal/results"
)

func init() {
	output.Register(output.Def{Flag: "metrics", Check: CheckAddr, Usage: usage,
		Help: "serve the run's figures live in the OpenMetrics format at http://ADDR/metrics, e.g. 127.0.0.1:9464 (name the interface: :9464 or 0.0.0.0 is refused)",
		Open: func(addr string) (event.Output, string, error) {
			m, err := New(addr)
			if err != nil {
				return nil, "", err
			}
			return m, "metrics: " + m.URL(), nil
		}})
}

// usage is the paragraph of `storebench run --help`.
const usage = `Live metrics (--metrics 127.0.0.1:9464): while the run lasts,
http://ADDR/metrics serves each step's operations and throughput (live
while it runs) and, once it ends, its latency quantiles, verified reads,
errors and the target's RSS and CPU, in the OpenMetrics format (Prometheus
scrapes it), labelled by study, target, workload, phase, n and labels. The
address names its interface: :9464 or 0.0.0.0:9464 is refused; port 0
picks a free one (printed at the start).
`

var labelNames = []string{"study", "target", "workload", "phase", "n", "labels"}

// quantiles are the latency quantiles served, with the Summary field
// each is read from.
var quantiles = []struct {
	q   string
	get func(s *results.Step) int64
}{
	{"0.5", func(s *results.Step) int64 { return s.Latency.P50 }},
	{"0.9", func(s *results.Step) int64 { return s.Latency.P90 }},
	{"0.99", func(s *results.Step) int64 { return s.Latency.P99 }},
	{"0.999", func(s *results.Step) int64 { return s.Latency.P999 }},
	{"1", func(s *results.Step) int64 { return s.Latency.Max }},
}

// Metrics is the live endpoint.
type Metrics struct {
	addr  net.Addr
	srv   *http.Server
	study string

	running, ops, rate, seconds *prometheus.GaugeVec
	latency                     *prometheus.GaugeVec
	verified, verifyFailed      *prometheus.GaugeVec
	failed, rss, cpu            *prometheus.GaugeVec
}

// CheckAddr refuses an address that would serve every interface (no
// host, 0.0.0.0, ::): the figures are the run's, and other hosts reach
// them only when the address names an interface they can reach. A zone
// never narrows an unspecified address ([::%lo], [::%1], [0::0%eth0]
// listen on every interface all the same), nor does an IPv4-mapped form
// ([::ffff:0.0.0.0]): the host is parsed with net/netip, zone and all,
// and judged without its zone. A host name is resolved when New listens,
// which refuses it too if it binds every interface.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: give host:port, e.g. 127.0.0.1:9464", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "" {
		return everyInterface(addr, port)
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.WithZone("").Unmap().IsUnspecified() {
		return everyInterface(addr, port)
	}
	return nil
}

func everyInterface(addr, port string) error {
	return fmt.Errorf("%q would serve every interface: name the one to serve on, e.g. 127.0.0.1:%s", addr, port)
}

// checkBound refuses a listener bound to other than what addr asked: an
// unspecified address (a host name that resolves to 0.0.0.0 or ::, a
// form CheckAddr did not know), or, for an IP address, another one.
func checkBound(addr string, bound net.Addr) error {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("%q: bound %v, not a TCP address", addr, bound)
	}
	got, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return fmt.Errorf("%q: bound %v, not an IP address", addr, bound)
	}
	got = got.Unmap()
	_, port, _ := net.SplitHostPort(addr)
	if got.IsUnspecified() {
		return fmt.Errorf("%q bound %v, which serves every interface: name the one to serve on, e.g. 127.0.0.1:%s", addr, bound, port)
	}
	host, _, _ := net.SplitHostPort(addr)
	if want, err := netip.ParseAddr(host); err == nil && want.WithZone("").Unmap() != got {
		return fmt.Errorf("%q bound %v instead", addr, bound)
	}
	return nil
}

// New listens on addr (checked by CheckAddr) and serves /metrics until
// Close. The address bound is checked too (see checkBound): it must be
// the one asked and never every interface.
func New(addr string) (*Metrics, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := checkBound(addr, ln.Addr()); err != nil {
		_ = ln.Close()
		return nil, err
	}
	m := &Metrics{addr: ln.Addr()}
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "storebench", Name: name, Help: help}, append(labelNames[:len(labelNames):len(labelNames)], extra...))
		reg.MustRegister(g)
		return g
	}
	m.running = gauge("step_running", "1 while the step runs, 0 once it ended")
	m.ops = gauge("step_ops", "operations the step has done (live while it runs)")
	m.rate = gauge("step_throughput_ops_per_second", "the step's operations per second (live while it runs: so far)")
	m.seconds = gauge("step_seconds", "the step's timed duration (live while it runs: so far)")
	m.latency = gauge("step_latency_seconds", "the step's service time at a quantile, from its HDR histogram (1: the maximum)", "quantile")
	m.verified = gauge("step_verified_reads", "reads the step verified")
	m.verifyFailed = gauge("step_errors", "verifications that failed in the step")
	m.failed = gauge("step_failed", "1 when the step failed, else 0")
	m.rss = gauge("target_rss_bytes", "the target's resident memory at the step's end (its server's, else the worker's)")
	m.cpu = gauge("target_cpu_percent", "the target's CPU over the step, 100 = one core (its server's, else the worker's)")
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	// A scraper that stalls (sends half a request, reads slowly) is
	// dropped by these bounds rather than held open for the run.
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// URL is where the figures are served.
func (m *Metrics) URL() string { return "http://" + m.addr.String() + "/metrics" }

func values(study, target string, st event.Step) []string {
	return []string{study, target, st.Workload, st.Phase, strconv.FormatInt(st.N, 10), st.Labels.Extra()}
}

// Handle updates the series.
func (m *Metrics) Handle(e event.Event) error {
	switch e := e.(type) {
	case event.RunPlanned:
		m.study = e.Run.Study
	case event.StepStarted:
		l := values(m.study, e.Target, e.Step)
		m.running.WithLabelValues(l...).Set(1)
		m.ops.WithLabelValues(l...).Set(0)
	case event.Tick:
		l := values(m.study, e.Target, e.Step)
		m.ops.WithLabelValues(l...).Set(float64(e.Done))
		m.seconds.WithLabelValues(l...).Set(e.Elapsed.Seconds())
		if s := e.Elapsed.Seconds(); s > 0 {
			m.rate.WithLabelValues(l...).Set(float64(e.Done) / s)
		}
	case event.StepFinished:
		m.finished(e)
	}
	return nil
}

func (m *Metrics) finished(e event.StepFinished) {
	l := values(m.study, e.Target, e.Step)
	m.running.WithLabelValues(l...).Set(0)
	failed := 0.0
	if e.Outcome == event.StepFailed {
		failed = 1
	}
	m.failed.WithLabelValues(l...).Set(failed)
	r := e.Result
	if r == nil {
		return
	}
	m.ops.WithLabelValues(l...).Set(float64(r.Ops))
	m.seconds.WithLabelValues(l...).Set(r.Seconds)
	m.rate.WithLabelValues(l...).Set(float64(r.Ops) / max(r.Seconds, 1e-9))
	if r.Latency.Count > 0 {
		for _, q := range quantiles {
			m.latency.WithLabelValues(append(l, q.q)...).Set(float64(q.get(r)) / 1e9)
		}
	}
	m.verified.WithLabelValues(l...).Set(float64(r.Verify.Checked))
	m.verifyFailed.WithLabelValues(l...).Set(float64(r.Verify.Failed))
	res := &r.Resources
	if r.ServerResources != nil {
		res = r.ServerResources
	}
	m.rss.WithLabelValues(l...).Set(float64(res.After.RSSBytes))
	m.cpu.WithLabelValues(l...).Set(res.CPUPercent)
}

// closeGrace is how long Close lets a scrape in progress finish.
const closeGrace = 500 * time.Millisecond

// Close stops serving: idle connections close at once, a scrape in
// progress has closeGrace to finish, and one still open then (a scraper
// that sent half a request or reads slowly) is closed, which the error
// says (the run's figures are in its results all the same).
func (m *Metrics) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	_ = m.srv.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("a scrape of %s was still open at the end: closed", m.URL())
	}
	return fmt.Errorf("closing %s: %w", m.URL(), err)
}
