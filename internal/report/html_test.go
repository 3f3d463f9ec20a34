package report

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/measure/procstat"
	"storebench/internal/results"
)

// histOf encodes a histogram of n latencies spread log-uniformly from lo
// to hi nanoseconds, with a tail.
func histOf(t testing.TB, n int, lo, hi float64) (string, latency.Summary) {
	h := latency.New()
	for i := 0; i < n; i++ {
		f := float64(i) / float64(n)
		v := lo * math.Pow(hi/lo, f*f*f)
		latency.Record(h, time.Duration(v))
	}
	enc, err := latency.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return enc, latency.Summarize(h)
}

// syntheticRun is a ledger run of k targets over the default ladder,
// shaped like a real one: inserts and selects at every size, chains,
// stress (open loop, with a time series) and balance at the largest.
func syntheticRun(t testing.TB, k int) *results.Run {
	ladder := []int64{10, 100, 1000, 10000, 100000}
	run := &results.Run{SchemaVersion: results.SchemaVersion, Study: "ledger", Title: "Ledger <synthetic> & co",
		Status: "complete", Durability: "sync", Seed: 1, Concurrency: 8, Ladder: ladder,
		Started: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)}
	for i := 0; i < k; i++ {
		f := 1 + float64(i)/4
		tg := &results.Target{Name: "t" + string(rune('a'+i)), Title: "Engine" + string(rune('A'+i)), Version: "v1", Status: "ok",
			Settings: map[string]string{"durability": "fsync per write batch", "cache": "64 MiB"}}
		res := func(n int64) results.Resources {
			return results.Resources{After: procstat.Snapshot{RSSBytes: 60<<20 + n*int64(100*f)}, CPUPercent: 50,
				DiskAllocated: 4<<20 + n*int64(1100*f)}
		}
		for _, n := range ladder {
			ins, insSum := histOf(t, int(max(1, n/100)), 5e5*f, 2e7*f)
			sel, selSum := histOf(t, 1000, 1e3*f*math.Pow(float64(n), 0.2), 5e5*f)
			tg.Steps = append(tg.Steps,
				&results.Step{Workload: "ledger", Phase: "insert", N: n, Seconds: 1e-4 * f * math.Pow(float64(n), 0.95), Ops: max(1, n/100),
					Unit: "write batch of 100 txns", Hist: ins, Latency: insSum, Resources: res(n),
					Series: []results.Tick{{T: 1, Ops: 10, OpsPerS: 10, RSSBytes: 1 << 26}}},
				&results.Step{Workload: "ledger", Phase: "select", N: n, Seconds: 0.01, Ops: 1000, Unit: "select one txn by address",
					Hist: sel, Latency: selSum, Resources: res(n), Verify: results.Verify{Checked: 1000}})
		}
		top := ladder[len(ladder)-1]
		for _, l := range []float64{10, 100, 1000, 10000} {
			tg.Steps = append(tg.Steps, &results.Step{Workload: "ledger", Phase: "chain", N: top, Ops: 3, Seconds: 3e-5 * l * f,
				Latency: latency.Summary{Count: 3, Mean: 1e4 * l * f, Max: int64(2e4 * l * f)}, Metrics: map[string]float64{"length": l},
				Verify: results.Verify{Checked: 3 * int64(l)}})
		}
		svc, svcSum := histOf(t, 20000, 1e5*f, 3e7*f)
		itd, itdSum := histOf(t, 20000, 1.5e5*f, 6e7*f)
		stress := &results.Step{Workload: "ledger", Phase: "stress", N: top, Seconds: 10, Ops: 20000, Rate: 2000,
			Hist: svc, Latency: svcSum, HistIntended: itd, Intended: &itdSum, Resources: res(top),
			Metrics: map[string]float64{"reads": 10000, "writes": 10000}, Verify: results.Verify{Checked: 10000}}
		for s := 1; s <= 10; s++ {
			stress.Series = append(stress.Series, results.Tick{T: float64(s), Ops: 2000, OpsPerS: 2000 - 30*f*float64(s%3),
				P99: int64(2e6 * f * (1 + float64(s%4))), IntendedP99: int64(3e6 * f * (1 + float64(s%4))), RSSBytes: int64(150<<20) + int64(s)<<20, CPU: 40 + 3*f + float64(s%5)})
		}
		stress.Series = append(stress.Series, results.Tick{T: 10.002}) // the sliver after the last tick
		bal, balSum := histOf(t, 10000, 2e4*f, 1e7)
		tg.Steps = append(tg.Steps, stress, &results.Step{Workload: "ledger", Phase: "balance", N: top, Seconds: 0.4, Ops: 10000,
			Hist: bal, Latency: balSum, Metrics: map[string]float64{"view_addresses": 1e6, "build_seconds": 3}, Resources: res(top),
			Verify: results.Verify{Checked: 10000}})
		run.Targets = append(run.Targets, tg)
	}
	return run
}

func TestChartsOfALedgerRun(t *testing.T) {
	cs := Charts(syntheticRun(t, 3))
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	want := []string{
		"ledger-insert-scaling", "ledger-select-latency-scaling", "ledger-chain-length-scaling",
		"ledger-disk-scaling", "ledger-memory-scaling",
		"ledger-insert-percentiles", "ledger-select-percentiles", "ledger-stress-percentiles",
		"ledger-stress-percentiles-intended", "ledger-balance-percentiles",
		"ledger-stress-timeseries",
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("charts\n got %v\nwant %v", ids, want)
	}
	ins := cs[0]
	if l := ins.Panels[0].Series[0].Legend; !strings.Contains(l, "EngineA ~N^0.95 (to 1e5)") {
		t.Errorf("insert legend %q lacks the fitted exponent and the largest size", l)
	}
	ts := cs[len(cs)-1]
	if len(ts.Panels) != 5 || len(ts.Panels[0].Series[0].X) != 10 {
		t.Errorf("time series: %d panels, %d points (want 5 panels, 10 full ticks)", len(ts.Panels), len(ts.Panels[0].Series[0].X))
	}
	// An open-loop phase's per-tick p99 is shown twice, each named for
	// what it measures: never "latency" for the service time.
	var labels []string
	for _, p := range ts.Panels {
		labels = append(labels, p.Y.Label)
	}
	if got, want := strings.Join(labels, "|"), "ops/s|service time p99|latency from intended start p99|RSS|CPU"; got != want {
		t.Errorf("time series panels %q, want %q", got, want)
	}
	if len(ts.Panels) == 5 {
		itd := ts.Panels[2].Series[0]
		if len(itd.Y) != 10 || itd.Y[0] != 3e-3*2 {
			t.Errorf("intended p99 series %v, want the ticks' intended_p99_ns", itd.Y)
		}
	}
}

func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("STOREBENCH_REPORT_OUT"); d != "" {
		dir = d // to look at the result
	}
	run := syntheticRun(t, 8)
	// A stale chart of an earlier rendering (listed in its manifest) must go.
	os.MkdirAll(filepath.Join(dir, ChartsDir), 0o755)
	os.WriteFile(filepath.Join(dir, ChartsDir, "old.png"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, ChartsDir, ChartsManifest), []byte("old.png\n"), 0o644)
	start := time.Now()
	if err := WriteAll(dir, run); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("WriteAll, 8 targets: %v", took)
	if took > 10*time.Second {
		t.Errorf("rendering took %v", took)
	}

	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	imgs := regexp.MustCompile(`!\[[^\]]*\]\((charts/[^)]+\.png)\)`).FindAllStringSubmatch(string(md), -1)
	if len(imgs) != 10 {
		t.Errorf("report.md references %d PNGs, want 10 (scaling and percentiles)", len(imgs))
	}
	for _, m := range imgs {
		if fi, err := os.Stat(filepath.Join(dir, m[1])); err != nil || fi.Size() < 1000 {
			t.Errorf("%s: %v", m[1], err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ChartsDir, "old.png")); err == nil {
		t.Error("stale PNG left behind")
	}
	if strings.Contains(string(md), "storebench:charts") {
		t.Error("chart marks left in report.md")
	}

	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	h := string(page)
	if n := strings.Count(h, `<svg class="chart-svg"`); n != 11 {
		t.Errorf("%d inline charts, want 11", n)
	}
	// Every heading of the Markdown report is in the page.
	for _, m := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(Markdown(run), -1) {
		// A "<" from the run is the entity "&lt;" in the Markdown
		// (mdInert): the page shows it as "<".
		title := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "").Replace(strings.ReplaceAll(m[1], "&lt;", "<"))
		if !strings.Contains(h, title) {
			t.Errorf("heading %q missing from report.html", m[1])
		}
	}
	for _, want := range []string{"Ledger &lt;synthetic&gt; &amp; co", "Verification of every phase", "Content-Security-Policy", "EngineH"} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// Nothing to load: no scripts, no external URLs in attributes or CSS.
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=\"http", "href=\"http", "url(", "@import"} {
		if strings.Contains(h, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
}

func BenchmarkWriteAll8Targets(b *testing.B) {
	run := syntheticRun(b, 8)
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		if err := WriteAll(dir, run); err != nil {
			b.Fatal(err)
		}
	}
}

func TestHTMLPage(t *testing.T) {
	p := string(HTMLPage("A <b> vs B", "# Compare\n\n| x | y |\n|---|---:|\n| 1 | 2 |\n\n## Verdicts\n\n- same\n"))
	for _, want := range []string{"<title>A &lt;b&gt; vs B</title>", `<h1 id="compare">Compare</h1>`, `<nav class="toc"><a href="#verdicts">Verdicts</a></nav>`, `<td style="text-align:right">2</td>`} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q:\n%s", want, p)
		}
	}
}
