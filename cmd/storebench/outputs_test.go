package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"storebench/internal/results"
)

// lockedBuffer is a stderr the test reads while the run writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pebbleStudy is the tiny ledger study on pebble alone, its stress phase
// lasting dur.
func pebbleStudy(t *testing.T, dur string) string {
	p := filepath.Join(t.TempDir(), "tiny.yaml")
	s := strings.ReplaceAll(strings.ReplaceAll(tinyStudy, "%DUR%", dur), "targets: [pebble, bbolt]", "targets: [pebble]")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// series finds the value of family name's series whose labels include
// want; ok false when there is none.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// --metrics serves the run's figures live: scraped while the stress step
// runs, the endpoint (parsed by Prometheus's own text parser) has the
// running step's live operations and every finished step's throughput,
// latency quantiles, verified reads and the target's RSS, labelled by
// study, target, workload, phase, n and labels; it is gone once the run
// ends.
func TestMetricsEndpointServesTheRunLive(t *testing.T) {
	out := t.TempDir()
	cmd := storebench(t, "run", pebbleStudy(t, "60s"), "--out", out, "--quiet", "--metrics", "127.0.0.1:0")
	var e lockedBuffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	re := regexp.MustCompile(`metrics: (http://127\.0\.0\.1:\d+/metrics)`)
	var url string
	for deadline := time.Now().Add(60 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(e.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no metrics address on the console:\n%s", e.String())
		}
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	scrape := func() (map[string]*dto.MetricFamily, error) {
		resp, err := client.Get(url)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("status %s", resp.Status)
		}
		var p expfmt.TextParser
		return p.TextToMetricFamilies(resp.Body)
	}
	stress := map[string]string{"study": "tiny", "target": "pebble", "workload": "ledger", "phase": "stress", "n": "300", "labels": ""}
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		fams, err = scrape()
		if err != nil {
			t.Fatalf("scraping %s: %v\n%s", url, err, e.String())
		}
		running, _ := series(fams, "storebench_step_running", stress)
		ops, _ := series(fams, "storebench_step_ops", stress)
		if running == 1 && ops > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stress step never showed running with operations:\n%s", e.String())
		}
	}
	if cmd.ProcessState != nil {
		t.Fatal("the run ended before the scrape")
	}
	insert := map[string]string{"study": "tiny", "target": "pebble", "workload": "ledger", "phase": "insert", "n": "300", "labels": ""}
	var qs []float64
	for _, q := range []string{"0.5", "0.9", "0.99", "0.999", "1"} {
		v, ok := series(fams, "storebench_step_latency_seconds", with(insert, "quantile", q))
		if !ok || v <= 0 || v > 60 {
			t.Errorf("insert N=300 latency at %s: %v (present %v)", q, v, ok)
		}
		if len(qs) > 0 && v < qs[len(qs)-1] {
			t.Errorf("insert N=300 latency at %s (%v) below the quantile before (%v)", q, v, qs[len(qs)-1])
		}
		qs = append(qs, v)
	}
	for name, check := range map[string]func(float64) bool{
		"storebench_step_ops":                       func(v float64) bool { return v == 3 }, // 300 entries, 100 a batch
		"storebench_step_throughput_ops_per_second": func(v float64) bool { return v > 0 },
		"storebench_step_running":                   func(v float64) bool { return v == 0 },
		"storebench_step_failed":                    func(v float64) bool { return v == 0 },
		"storebench_step_errors":                    func(v float64) bool { return v == 0 },
		"storebench_target_rss_bytes":               func(v float64) bool { return v > 1<<20 },
		"storebench_target_cpu_percent":             func(v float64) bool { return v >= 0 },
	} {
		if v, ok := series(fams, name, insert); !ok || !check(v) {
			t.Errorf("%s of insert N=300: %v (present %v)", name, v, ok)
		}
	}
	sel := with(insert, "phase", "select")
	if v, ok := series(fams, "storebench_step_verified_reads", sel); !ok || v != 50 {
		t.Errorf("verified reads of select N=300: %v (present %v), want the study's 50", v, ok)
	}
	chain := with(with(insert, "phase", "chain"), "labels", "length=100")
	if v, ok := series(fams, "storebench_step_verified_reads", chain); !ok || v != 100 {
		t.Errorf("verified reads of chain length=100: %v (present %v)", v, ok)
	}

	// Ctrl-C ends the run as ever; the endpoint goes with it.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130:\n%s", code, err, e.String())
	}
	if _, err := scrape(); err == nil {
		t.Error("the metrics endpoint still answers after the run ended")
	}
}

func with(l map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range l {
		if a != k {
			out[a] = b
		}
	}
	return out
}

// A --metrics address that would serve every interface, or is no
// address, is the command line's error: exit 2, nothing run.
func TestMetricsAddressIsChecked(t *testing.T) {
	for _, addr := range []string{":9464", "0.0.0.0:9464", "[::]:9464", "[::%lo]:0", "[::%1]:0", "[0::0%eth0]:0", "localhost", ""} {
		out := t.TempDir()
		_, stderr, code := runCLI(t, "run", pebbleStudy(t, "1s"), "--out", out, "--metrics", addr)
		if code != 2 || !strings.Contains(stderr, "--metrics") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--metrics %q: exit %d, want 2 with one line:\n%s", addr, code, stderr)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("--metrics %q: a run directory was made", addr)
		}
	}
	if _, stderr, code := runCLI(t, "run", pebbleStudy(t, "1s"), "--out", t.TempDir(), "--export", "xls=/tmp/x"); code != 2 || !strings.Contains(stderr, "--export") {
		t.Errorf("--export xls=: exit %d:\n%s", code, stderr)
	}
}

// stepRow is one exported step, keyed by phase, n and labels.
type exported struct {
	steps map[string]map[string]string
	// ticks of each step, in order.
	ticks map[string][]map[string]string
}

func key(phase, n, labels string) string { return phase + " " + n + " " + labels }

func readCSV(t *testing.T, path string) []map[string]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%s: %v (%d records)", path, err, len(recs))
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		row := map[string]string{}
		for i, c := range recs[0] {
			row[c] = r[i]
		}
		rows = append(rows, row)
	}
	return rows
}

func readJSONL(t *testing.T, path string) []map[string]string {
	b := mustRead(t, path)
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		row := map[string]string{}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			row[k] = s
		}
		rows = append(rows, row)
	}
	return rows
}

func collect(steps, ticks []map[string]string) exported {
	x := exported{steps: map[string]map[string]string{}, ticks: map[string][]map[string]string{}}
	for _, r := range steps {
		x.steps[key(r["phase"], r["n"], r["labels"])] = r
	}
	for _, r := range ticks {
		k := key(r["phase"], r["n"], r["labels"])
		x.ticks[k] = append(x.ticks[k], r)
	}
	return x
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// --export csv=DIR and jsonl=DIR write every step and every second of
// it as flat files; read back, they hold what results.json holds.
func TestExportMatchesResults(t *testing.T) {
	out, csvDir, jsonDir := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "new")
	_, stderr, code := runCLI(t, "run", pebbleStudy(t, "3s"), "--out", out, "--quiet", "--export", "csv="+csvDir, "--export", "jsonl="+jsonDir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Decode(mustRead(t, filepath.Join(dir, "results.json")))
	if err != nil {
		t.Fatal(err)
	}
	steps := run.Targets[0].Steps
	for _, x := range []exported{
		collect(readCSV(t, filepath.Join(csvDir, "steps.csv")), readCSV(t, filepath.Join(csvDir, "ticks.csv"))),
		collect(readJSONL(t, filepath.Join(jsonDir, "steps.jsonl")), readJSONL(t, filepath.Join(jsonDir, "ticks.jsonl"))),
	} {
		if len(x.steps) != len(steps) || len(steps) < 8 {
			t.Fatalf("%d steps exported, results.json has %d", len(x.steps), len(steps))
		}
		sawTicks := false
		for _, st := range steps {
			k := key(st.Phase, strconv.FormatInt(st.N, 10), st.Labels.Extra())
			r := x.steps[k]
			if r == nil {
				t.Fatalf("step %s not exported", k)
			}
			if r["run"] != filepath.Base(dir) || r["study"] != "tiny" || r["target"] != "pebble" || r["workload"] != "ledger" || r["outcome"] != "ok" {
				t.Errorf("%s: identity %v", k, r)
			}
			for col, want := range map[string]float64{
				"ops": float64(st.Ops), "seconds": st.Seconds, "ops_per_s": float64(st.Ops) / st.Seconds,
				"p50_ns": float64(st.Latency.P50), "p99_ns": float64(st.Latency.P99), "max_ns": float64(st.Latency.Max),
				"verified": float64(st.Verify.Checked), "verify_failed": float64(st.Verify.Failed),
			} {
				if got := num(t, r[col]); got != want {
					t.Errorf("%s %s: exported %v, results.json %v", k, col, got, want)
				}
			}
			ticks := x.ticks[k]
			if len(ticks) != len(st.Series) {
				t.Fatalf("%s: %d ticks exported, results.json has %d", k, len(ticks), len(st.Series))
			}
			var sum, sumResults int64
			for i, tk := range ticks {
				if got := num(t, tk["ops"]); got != float64(st.Series[i].Ops) || num(t, tk["p99_ns"]) != float64(st.Series[i].P99) || num(t, tk["t_s"]) != st.Series[i].T {
					t.Errorf("%s tick %d: exported %v, results.json %+v", k, i, tk, st.Series[i])
				}
				sum += int64(num(t, tk["ops"]))
				sumResults += st.Series[i].Ops
			}
			if sumResults == st.Ops && sum != st.Ops {
				t.Errorf("%s: exported seconds sum to %d ops, the step did %d", k, sum, st.Ops)
			}
			if st.Phase == "stress" {
				sawTicks = len(ticks) >= 2 && sum == st.Ops
			}
		}
		if !sawTicks {
			t.Error("the stress step's seconds were not exported whole")
		}
	}
}
