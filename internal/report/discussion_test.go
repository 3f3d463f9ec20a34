package report

import (
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/sysinfo"
)

func init() {
	// A workload of the tests' own: the discussion reads only what a
	// workload registers (headline, counts of failures, byte counts).
	section.Register("discussiontest", section.Def{
		Headline: &section.Headline{Figure: "discussiontest.get", Metric: "throughput", What: "pages per second"},
		Metrics: []section.Metric{
			{Name: "failed", Agg: section.Sum, Better: section.Lower, What: "failed requests"},
			{Name: "bytes", Unit: "B", Agg: section.Sum, What: "bytes received"},
		},
	})
}

// discStep is a step of the test workload at a level (0: the phase's own
// step), with its rate, p99 and the server's and the client's CPU.
func discStep(level string, opsPerS float64, p99 int64, serverCPU, clientCPU float64, failed float64) *results.Step {
	l := results.StepLabels("discussiontest", "get", 1)
	if level != "" {
		l = l.With(results.LConcurrency, level)
	}
	return &results.Step{Workload: "discussiontest", Phase: "get", N: 1, Labels: l, Unit: "pages", Seconds: 10, Ops: int64(opsPerS * 10),
		Latency:         latency.Summary{Count: int64(opsPerS * 10), P50: p99 / 4, P99: p99},
		Metrics:         map[string]float64{"failed": failed, "bytes": opsPerS * 10 * 1024},
		Resources:       results.Resources{Timed: &results.Window{Seconds: 10, CPUPercent: clientCPU}},
		ServerResources: &results.Resources{Seconds: 10, CPUPercent: serverCPU}}
}

// The discussion is built from the figures: each step's bottleneck (the
// load generator named when it out-used the server), the failures its
// workload counted, the ratio between concurrency levels (the phase's own
// step at the workload's own concurrency, then the sweep), and the leader
// at each level with the runner-up as a ratio, a change of leader named.
func TestDiscussionFromMeasurements(t *testing.T) {
	a := &results.Target{Name: "a", Title: "Alpha", Status: "ok", Steps: []*results.Step{
		discStep("", 1000, 10e6, 150, 40, 0), discStep("500", 600, 100e6, 160, 30, 12)}}
	b := &results.Target{Name: "b", Title: "Beta", Status: "ok", Steps: []*results.Step{
		discStep("", 800, 20e6, 50, 95, 0), discStep("500", 900, 40e6, 60, 100, 0)}}
	c := &results.Target{Name: "c", Title: "Gamma", Status: "ok",
		NA: []results.NA{{Workload: "discussiontest", Phase: "get", N: 1, Reason: "no pages"}}}
	run := &results.Run{Study: "t", Host: sysinfo.Host{LogicalCPUs: 2, MemTotalBytes: 64 << 30}, Concurrency: 8,
		WorkloadConcurrency: map[string]int{"discussiontest": 100}, Ladder: []int64{1}, Targets: []*results.Target{a, b, c}}
	md := document(run)
	i := strings.Index(md, "## Discussion")
	if i < 0 {
		t.Fatalf("no discussion:\n%s", md)
	}
	d := md[i:]
	for _, want := range []string{
		"| Alpha | get | 100 | 1000/s | 10.00 ms | CPU: all 2 cores busy (server 150% + client 40% CPU) |",
		"| Alpha | get | 500 | 600/s | 100.00 ms |",
		"12 failed requests (0.2% of operations)",
		"600.0 KiB/s bytes received",
		"CPU: one core busy (server 50% + client 95% CPU), a single-threaded path; the load generator took more CPU than the server (95% against 50%)",
		"Beta: CPU-bound below all cores in 2 of 2 steps long enough to tell; its load generator took more CPU than the server in 2 of 2",
		"Not applicable: Gamma (no pages)",
		"| discussiontest get N=1 | Alpha | lost | 100 → 500 | 1000/s → 600/s | ×0.60 | 10.00 ms → 100.00 ms | ×10.00 |",
		"| discussiontest get N=1 | Beta | gained | 100 → 500 | 800/s → 900/s | ×1.12 | 20.00 ms → 40.00 ms | ×2.00 |",
		"from concurrency 100 to 500: Beta gained ×1.12 (p99 ×2.00), Alpha lost ×0.60 (p99 ×10.00); Beta coped best with more concurrency, Alpha worst",
		"| get | 100 | Alpha: 1000/s, p99 10.00 ms | Beta: 800/s, p99 20.00 ms | ×0.80 |",
		"| get | 500 | Beta: 900/s, p99 40.00 ms | Alpha: 600/s, p99 100.00 ms | ×0.67 |",
		"For get (pages per second, the workload's headline figure): at 100 Alpha leads (Beta reaches ×0.80 of it); at 500 Beta takes the lead (Alpha at ×0.67 of it).",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("discussion lacks %q:\n%s", want, d)
		}
	}

	for r, want := range map[float64]string{0.5: "×0.50", 0.0000657: "×0.000066", 0.0042: "×0.0042", 12.5: "×12.50"} {
		if got := ratioText(r); got != want {
			t.Errorf("ratio %g: %s, want %s", r, got, want)
		}
	}

	// Another run where Beta is faster at every level: its lead is kept.
	b.Steps[0] = discStep("", 2000, 5e6, 50, 95, 0)
	b.Steps[1] = discStep("500", 1800, 8e6, 60, 100, 0)
	d = document(run)
	if !strings.Contains(d, "at 100 Beta leads (Alpha reaches ×0.50 of it); at 500 still Beta (Alpha at ×0.33 of it)") {
		t.Errorf("a lead kept:\n%s", d[strings.Index(d, "## Discussion"):])
	}
}
