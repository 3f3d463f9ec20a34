package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"storebench/internal/cli"
	"storebench/internal/report"
	"storebench/internal/results"
	_ "storebench/internal/target/goleveldb"
	_ "storebench/internal/target/pebble"
	_ "storebench/internal/workload/ledger"
)

// The test binary doubles as storebench (STOREBENCH_AS_MAIN=1), so the
// run starts real worker processes, as `storebench run` does.
func TestMain(m *testing.M) {
	if os.Getenv("STOREBENCH_AS_MAIN") == "1" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// A study small enough for a test that still yields every kind of chart:
// three sizes (growth), enough operations for percentile curves, a
// stress phase of several ticks (time series), and the generic sweeps on
// it (throughput and p99 against concurrency, the rate search's curves).
const study = `name: browsertest
title: "Report in a browser: ledger on Pebble and GoLevelDB"
ladder: [10, 100, 1000]
concurrency: 2
targets: [pebble, goleveldb]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 200
      chains: {lengths: [10, 100], samples: 1}
      stress: {duration: 4s, rate: 300}
      balance: {addresses: 2000, reads: 200}
    sweep:
      concurrency: [1, 2]
      phases: [stress]
      rate: {phases: [stress], start: 150, factor: 4, max_trials: 3, duration: 1s}
`

func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: run scripts/install-browser.sh (make test does)")
	return ""
}

// artifacts is where the screenshot goes: $STOREBENCH_ARTIFACTS, or
// results/artifacts at the top of the repository (git-ignored).
func artifacts(t *testing.T) string {
	dir := os.Getenv("STOREBENCH_ARTIFACTS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(wd, "..", "..", "..", "results", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(dir)
}

func runStudy(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "browsertest.yaml")
	if err := os.WriteFile(p, []byte(study), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", p, "--out", out, "--quiet")
	cmd.Env = append(os.Environ(), "STOREBENCH_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("storebench run: %v\n%s", err, stderr.String())
	}
	ents, err := os.ReadDir(out)
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one run directory in %s: %v %v", out, ents, err)
	}
	return filepath.Join(out, ents[0].Name())
}

// figure is what the page says about one chart.
type figure struct {
	ID     string  `json:"id"`
	Error  bool    `json:"error"`
	SVG    bool    `json:"svg"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Lines  int     `json:"lines"` // series the report drew as lines
	Drawn  int     `json:"drawn"` // coloured paths longer than a legend swatch
	Texts  int     `json:"texts"`
}

// inspect measures every chart as the browser laid it out. A data line is
// a path stroked in a colour (axes are black, the grid grey) and longer
// than a legend's 22-point swatch.
const inspect = `[...document.querySelectorAll('figure.chart')].map(f => {
  const svg = f.querySelector('svg.chart-svg');
  const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  let drawn = 0;
  if (svg) for (const p of svg.querySelectorAll('path')) {
    const m = /rgba?\((\d+), (\d+), (\d+)/.exec(getComputedStyle(p).stroke);
    if (!m || (m[1] === m[2] && m[2] === m[3])) continue;
    if (p.getTotalLength() > 30) drawn++;
  }
  return {id: f.id.replace(/^chart-/, ''), error: f.classList.contains('chart-error'), svg: !!svg,
    width: r.width, height: r.height, lines: +(f.dataset.lines || 0), drawn,
    texts: svg ? svg.querySelectorAll('text').length : 0};
})`

// visit is what the browser saw of a page.
type visit struct {
	figs     []figure
	problems []string // console errors, exceptions, failed or foreign requests
	requests []string
	shot     []byte // full-page PNG
}

// open loads a file in headless chromium and inspects it.
func open(t *testing.T, exe, file string) visit {
	t.Helper()
	var mu sync.Mutex
	var v visit
	problem := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		v.problems = append(v.problems, fmt.Sprintf(format, a...))
	}
	// The listener runs in the tab's event loop from its first event on:
	// nothing the page does while loading is missed.
	listen := func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			problem("uncaught exception: %s", text)
		case *log.EventEntryAdded:
			// CSP violations and failed loads are reported here.
			if ev.Entry.Level == log.EntryLevelError {
				problem("browser log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			mu.Lock()
			v.requests = append(v.requests, u)
			mu.Unlock()
			if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				problem("request to %s: the report must load nothing", u)
			}
		case *network.EventLoadingFailed:
			problem("failed request %s: %s %s", ev.RequestID, ev.ErrorText, ev.BlockedReason)
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root in a container
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx, chromedp.WithListener(listen))
	defer cancelTab()

	page := "file://" + file
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("open %s in chromium: %v", page, err)
	}
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]figure](inspect))
	if err != nil {
		t.Fatalf("inspect charts: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Events of the load that are still in flight when the screenshot is
	// taken have arrived by the time the tab is closed.
	cancelTab()
	mu.Lock()
	defer mu.Unlock()
	v.figs, v.shot = figs, shot
	return v
}

// STOREBENCH_REPORT_DIR=results/ledger-… checks that run's report instead
// of a fresh small one (e.g. after `make run`).
func TestReportOpensOfflineWithEveryChart(t *testing.T) {
	exe := chromium(t)
	dir := os.Getenv("STOREBENCH_REPORT_DIR")
	if dir == "" {
		dir = runStudy(t)
	} else if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range report.Charts(run) {
		want = append(want, c.ID)
	}

	file := filepath.Join(dir, "report.html")
	v := open(t, exe, file)
	png := filepath.Join(artifacts(t), "report-screenshot.png")
	if err := os.WriteFile(png, v.shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s (%d KiB)", file, png, len(v.shot)>>10)

	var got []string
	for _, f := range v.figs {
		got = append(got, f.ID)
		if err := f.check(); err != nil {
			t.Error(err)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("charts in the page:\n %v\nthe report built:\n %v", got, want)
	}
	for _, kind := range []string{"-scaling", "-percentiles", "-timeseries", "-concurrency-sweep", "-rate-achieved", "-rate-p99"} {
		if !strings.Contains(strings.Join(got, " "), kind) {
			t.Errorf("no %s chart in the page: %v", strings.TrimPrefix(kind, "-"), got)
		}
	}
	for _, p := range v.problems {
		t.Error(p)
	}
	if len(v.requests) != 1 {
		t.Errorf("the page made %d requests, want only itself: %v", len(v.requests), v.requests)
	}
	t.Logf("%d charts rendered with data; requests: %v; console errors, exceptions, failed requests: %d", len(v.figs), v.requests, len(v.problems))
}

// check says what is wrong with a chart as the browser drew it.
func (f figure) check() error {
	switch {
	case f.Error:
		return fmt.Errorf("chart %s: the report could not draw it", f.ID)
	case !f.SVG || f.Width < 200 || f.Height < 100:
		return fmt.Errorf("chart %s: no SVG laid out (svg %v, %.0f×%.0f px)", f.ID, f.SVG, f.Width, f.Height)
	case f.Lines == 0 || f.Drawn < f.Lines:
		return fmt.Errorf("chart %s: %d data lines drawn, the report drew %d", f.ID, f.Drawn, f.Lines)
	case f.Texts < 5:
		return fmt.Errorf("chart %s: %d text elements (title, axes, legend missing?)", f.ID, f.Texts)
	}
	return nil
}

// The checks above catch what they claim: a page that requests something
// from the network, logs an error, throws, breaks the report's own
// Content-Security-Policy, or has a chart without data fails them.
func TestBrowserChecksCatchBrokenPages(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	empty := `<figure class="chart" id="chart-empty" data-lines="2"><svg class="chart-svg" width="600" height="300" viewBox="0 0 600 300">` +
		`<path d="M0,0L600,0" style="stroke:#000000"/><text x="5" y="20">t</text></svg></figure>`
	pages := map[string]string{
		// No CSP here, so the script runs and the image is fetched.
		"noisy.html": `<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">` +
			`<script>console.error("boom"); throw new Error("uncaught")</script>` + empty + `</body></html>`,
		// The report's CSP blocks the image: a violation, logged as an error.
		"csp.html": string(report.HTMLPage("csp", "# csp\n\n![x](https://example.org/x.png)\n")),
	}
	for name, body := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := open(t, exe, filepath.Join(dir, "noisy.html"))
	all := strings.Join(v.problems, "\n")
	for _, want := range []string{`console.error: "boom"`, "uncaught exception", "request to http://127.0.0.1:9/x.png", "failed request"} {
		if !strings.Contains(all, want) {
			t.Errorf("noisy page: %q not caught; caught:\n%s", want, all)
		}
	}
	if len(v.figs) != 1 || v.figs[0].check() == nil {
		t.Errorf("a chart without data lines passed the check: %+v", v.figs)
	}
	v = open(t, exe, filepath.Join(dir, "csp.html"))
	if len(v.problems) == 0 {
		t.Errorf("a CSP violation went unnoticed")
	}
	t.Logf("caught in csp.html: %v", v.problems)
}
