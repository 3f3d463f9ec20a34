package http

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

func init() {
	section.Register("http", section.Def{
		Render:   render,
		Headline: &section.Headline{Figure: "http.close", Metric: "throughput", What: "requests per second, a new connection per request (ab without -k)"},
		Metrics: []section.Metric{
			{Name: MConcurrency, Agg: section.Max, What: "concurrent requests (ab -c)"},
			{Name: MRequests, Agg: section.Sum, What: "complete requests"},
			{Name: MFailed, Agg: section.Sum, Better: section.Lower, What: "failed requests (connect, receive, length, exceptions, content, non-200)"},
			{Name: MConnect, Agg: section.Sum, Better: section.Lower, What: "requests whose connection failed"},
			{Name: MReceive, Agg: section.Sum, Better: section.Lower, What: "requests whose response was cut off"},
			{Name: MLength, Agg: section.Sum, Better: section.Lower, What: "responses whose body had the wrong length"},
			{Name: MExceptions, Agg: section.Sum, Better: section.Lower, What: "requests that failed otherwise (write error, malformed response)"},
			{Name: MContent, Agg: section.Sum, Better: section.Lower, What: "responses of the right length whose body hash was wrong"},
			{Name: MNon2xx, Agg: section.Sum, Better: section.Lower, What: "responses with a status other than 200"},
			{Name: MTotalBytes, Unit: "B", Agg: section.Sum, What: "bytes received, headers and bodies (ab's Total transferred)"},
			{Name: MHTMLBytes, Unit: "B", Agg: section.Sum, What: "body bytes received (ab's HTML transferred)"},
			{Name: MRPS, Unit: "requests/s", Agg: section.Rate, Better: section.Higher, What: "requests per second (ab's figure)"},
			{Name: MPageBytes, Unit: "B", Agg: section.Max, What: "size of the page"},
			{Name: MConns, Agg: section.Sum, What: "TCP connections opened"},
		},
	})
}

// AB is one step's figures as ab prints them.
type AB struct {
	Concurrency                                          int
	Seconds                                              float64
	Complete, Failed                                     int64
	Connect, Receive, Length, Exceptions, Content, Non2x int64
	Total, HTML                                          int64
	RPS, TimePerRequest, TimePerRequestAll, KBps         float64
	// Rows are Connect, Processing, Waiting, Total: min, mean, sd,
	// median, max in ms (sd unrounded, the others rounded as ab does).
	Rows [4]Row
	// Within are the total times (ms) within which 50, 66, ... 100% of
	// the requests were served.
	Within [9]int64
	// P50 and P99 of the total time, ns.
	P50, P99 int64
}

// Row is one line of ab's Connection Times table.
type Row struct {
	Min, Mean, Median, Max int64
	SD                     float64
}

// Percents are ab's.
var Percents = [9]float64{50, 66, 75, 80, 90, 95, 98, 99, 100}

// ms rounds a nanosecond value to milliseconds as ab does.
func ms(ns float64) int64 { return int64(math.Floor(ns/1e6 + 0.5)) }

// FromStep computes ab's figures from a step: counts from its metrics,
// times from its four HdrHistograms.
func FromStep(s *results.Step) (AB, error) {
	m := s.Metrics
	a := AB{Concurrency: int(m[MConcurrency]), Seconds: s.Seconds, Complete: s.Ops, Failed: int64(m[MFailed]),
		Connect: int64(m[MConnect]), Receive: int64(m[MReceive]), Length: int64(m[MLength]), Exceptions: int64(m[MExceptions]),
		Content: int64(m[MContent]), Non2x: int64(m[MNon2xx]), Total: int64(m[MTotalBytes]), HTML: int64(m[MHTMLBytes])}
	if a.Seconds > 0 {
		a.RPS = float64(a.Complete) / a.Seconds
		a.KBps = float64(a.Total) / 1024 / a.Seconds
	}
	if a.Complete > 0 {
		a.TimePerRequest = float64(a.Concurrency) * a.Seconds * 1000 / float64(a.Complete)
		a.TimePerRequestAll = a.Seconds * 1000 / float64(a.Complete)
	}
	var total *hdr.Histogram
	for i, name := range Timings {
		enc, ok := s.Facts[FactHist+name]
		if !ok {
			return a, fmt.Errorf("no %s histogram", name)
		}
		h, err := latency.Decode(enc)
		if err != nil {
			return a, err
		}
		if h.TotalCount() > 0 {
			a.Rows[i] = Row{Min: ms(float64(h.Min())), Mean: ms(h.Mean()), SD: h.StdDev() / 1e6, Median: ms(float64(h.ValueAtQuantile(50))), Max: ms(float64(h.Max()))}
		}
		total = h
	}
	if total.TotalCount() > 0 {
		for i, p := range Percents {
			a.Within[i] = ms(float64(total.ValueAtQuantile(p)))
		}
		a.Within[8] = ms(float64(total.Max()))
		a.P50, a.P99 = total.ValueAtQuantile(50), total.ValueAtQuantile(99)
	}
	return a, nil
}

// Text is the step in ab's words and layout.
func (a AB) Text() string {
	var b strings.Builder
	f := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-24s"+format+"\n", append([]any{label}, args...)...)
	}
	f("Concurrency Level:", "%d", a.Concurrency)
	f("Time taken for tests:", "%.3f seconds", a.Seconds)
	f("Complete requests:", "%d", a.Complete)
	f("Failed requests:", "%d", a.Failed)
	if a.Failed > 0 {
		fmt.Fprintf(&b, "   (Connect: %d, Receive: %d, Length: %d, Exceptions: %d, Content: %d)\n", a.Connect, a.Receive, a.Length, a.Exceptions, a.Content)
	}
	if a.Non2x > 0 {
		f("Non-2xx responses:", "%d", a.Non2x)
	}
	f("Total transferred:", "%d bytes", a.Total)
	f("HTML transferred:", "%d bytes", a.HTML)
	f("Requests per second:", "%.2f [#/sec] (mean)", a.RPS)
	f("Time per request:", "%.3f [ms] (mean)", a.TimePerRequest)
	f("Time per request:", "%.3f [ms] (mean, across all concurrent requests)", a.TimePerRequestAll)
	f("Transfer rate:", "%.2f [Kbytes/sec] received", a.KBps)
	b.WriteString("\nConnection Times (ms)\n              min  mean[+/-sd] median   max\n")
	for i, label := range []string{"Connect:", "Processing:", "Waiting:", "Total:"} {
		r := a.Rows[i]
		fmt.Fprintf(&b, "%-12s%5d %4d %5.1f %6d %7d\n", label, r.Min, r.Mean, r.SD, r.Median, r.Max)
	}
	b.WriteString("\nPercentage of the requests served within a certain time (ms)\n")
	for i, p := range Percents {
		if p == 100 {
			fmt.Fprintf(&b, " 100%%  %5d (longest request)\n", a.Within[i])
		} else {
			fmt.Fprintf(&b, "  %d%%  %5d\n", int(p), a.Within[i])
		}
	}
	return b.String()
}

var phaseTitle = map[string]string{
	PhaseClose:     "a new connection per request (ab without -k)",
	PhaseKeepAlive: "keep-alive (ab -k)",
}

// render writes a summary table (per target, phase and concurrency), then
// each step in ab's layout.
func render(b *strings.Builder, run *results.Run) {
	ts := section.Participants(run, "http")
	if len(ts) == 0 {
		return
	}
	b.WriteString("## HTTP (ab shaped)\n\nGETs of one page; every response is checked (status 200, length, SHA-256 of the body). Times are from HdrHistograms: connect, processing (connected to last byte), waiting (request written to first byte) and total are separate timings.\n\n")
	tab := section.Table{Head: []string{"Target", "Connections", "Concurrency", "Requests", "Requests/s", "Time per request (mean)", "Failed", "Total p50", "Total p99", "Page"}}
	type block struct {
		title string
		ab    AB
	}
	var blocks []block
	for _, t := range ts {
		any := false
		for _, s := range t.Steps {
			if s.Workload != "http" {
				continue
			}
			any = true
			a, err := FromStep(s)
			if err != nil || s.Ops == 0 {
				why := "—"
				if s.Error != "" {
					why = "failed: " + s.Error
				}
				tab.Rows = append(tab.Rows, []string{t.Title, phaseTitle[s.Phase], strconv.Itoa(int(s.Metrics[MConcurrency])), s.Labels[LRequests], why, "", "", "", "", ""})
				continue
			}
			page := section.Bytes(int64(s.Metrics[MPageBytes]))
			failed := strconv.FormatInt(a.Failed, 10)
			if s.Error != "" {
				failed += " (step failed: " + section.Cell(s.Error) + ")"
			}
			tab.Rows = append(tab.Rows, []string{t.Title, phaseTitle[s.Phase], strconv.Itoa(a.Concurrency), strconv.FormatInt(a.Complete, 10), fmt.Sprintf("%.2f", a.RPS),
				fmt.Sprintf("%.3f ms", a.TimePerRequest), failed, section.Latency(a.P50), section.Latency(a.P99), page})
			title := fmt.Sprintf("%s, %s, concurrency %d", t.Title, phaseTitle[s.Phase], a.Concurrency)
			if n := s.Labels[LRequests]; n != "" {
				title += ", " + n + " requests"
			}
			blocks = append(blocks, block{title, a})
		}
		if !any {
			tab.Rows = append(tab.Rows, section.NARow(t.Title, t.NotApplicable("http", "", -1), len(tab.Head)-1))
		}
	}
	tab.Write(b)
	for _, bl := range blocks {
		fmt.Fprintf(b, "\n### %s\n\n```\n%s```\n", bl.title, bl.ab.Text())
	}
	b.WriteString("\n")
}
