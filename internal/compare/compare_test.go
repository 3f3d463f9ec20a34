package compare

import (
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

// step builds a phase whose per-second throughput and p99 follow the
// given series (plus a final partial interval, which must be ignored).
func step(ops []float64, p99 []int64) *results.Step {
	s := &results.Step{Workload: "w", Phase: "p", N: 100}
	var total float64
	for i, o := range ops {
		s.Series = append(s.Series, results.Tick{T: float64(i + 1), Ops: int64(o), OpsPerS: o, P50: p99[i] / 2, P99: p99[i]})
		total += o
	}
	s.Series = append(s.Series, results.Tick{T: float64(len(ops)) + 0.1, Ops: 1, OpsPerS: 1e9, P99: 1e12})
	s.Ops, s.Seconds = int64(total), float64(len(ops))
	s.Latency = latency.Summary{P50: p99[0] / 2, P99: p99[0]}
	return s
}

func side(s *results.Step) Side {
	return Side{Label: "x", Target: &results.Target{Steps: []*results.Step{s}}}
}

func verdicts(rows []Row) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[r.Figure] = r.Verdict
	}
	return m
}

func TestNoiseIsNotADifference(t *testing.T) {
	a := step([]float64{1000, 1100, 950, 1050, 1000}, []int64{100, 120, 90, 110, 100})
	b := step([]float64{1040, 980, 1060, 1000, 1020}, []int64{105, 95, 115, 100, 110})
	v := verdicts(Compare(side(a), side(b)))
	if v["throughput (ops/s)"] != "no significant difference" || v["p99 service time"] != "no significant difference" {
		t.Fatalf("%v", v)
	}
}

func TestClearShiftsAreJudged(t *testing.T) {
	a := step([]float64{1000, 1010, 990, 1005, 995}, []int64{100, 101, 99, 100, 100})
	b := step([]float64{1500, 1510, 1490, 1505, 1495}, []int64{200, 201, 199, 200, 200})
	rows := Compare(side(a), side(b))
	v := verdicts(rows)
	if v["throughput (ops/s)"] != "B better" || v["p99 service time"] != "B worse" {
		t.Fatalf("%v", v)
	}
	md := Markdown(side(a), side(b), rows)
	if !strings.Contains(md, "| w p N=100 | throughput (ops/s) | 1000 | 1500 | 1.500 | B better |") {
		t.Fatalf("markdown:\n%s", md)
	}
}

func TestShortPhasesAreNotJudgedWithoutHistograms(t *testing.T) {
	a := step([]float64{1000, 1000}, []int64{100, 100})
	b := step([]float64{5000, 5000}, []int64{10, 10})
	for _, r := range Compare(side(a), side(b)) {
		if !strings.HasPrefix(r.Verdict, "too short to judge") {
			t.Fatalf("%s: %s", r.Figure, r.Verdict)
		}
	}
}

// hist encodes n latencies drawn from a spread around centre (ns).
func hist(t *testing.T, n int, centre int64, seed uint64) string {
	h := latency.New()
	x := seed | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		// centre ± 50%, with a tail: every 50th value is 5× the centre.
		v := centre/2 + int64(x%uint64(centre))
		if i%50 == 0 {
			v *= 5
		}
		h.RecordValue(v)
	}
	s, err := latency.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestShortPhasesJudgedFromHistograms(t *testing.T) {
	a := step([]float64{1000}, []int64{100})
	b := step([]float64{1000}, []int64{100})
	a.Hist, b.Hist = hist(t, 5000, 10000, 1), hist(t, 5000, 10000, 2)
	v := verdicts(Compare(side(a), side(b)))
	if v["p50 service time"] != "no significant difference (percentile confidence intervals)" ||
		v["p99 service time"] != "no significant difference (percentile confidence intervals)" ||
		!strings.HasPrefix(v["throughput (ops/s)"], "too short") {
		t.Fatalf("same distribution: %v", v)
	}
	b.Hist = hist(t, 5000, 20000, 2)
	v = verdicts(Compare(side(a), side(b)))
	if v["p50 service time"] != "B worse (percentile confidence intervals)" || v["p99 service time"] != "B worse (percentile confidence intervals)" {
		t.Fatalf("doubled latency: %v", v)
	}
}

// repeated builds n runs of one phase whose throughput is base plus the
// given per-run offsets.
func repeated(base float64, offsets ...float64) Side {
	var sd Side
	for i, o := range offsets {
		st := step([]float64{base + o, base + o}, []int64{100, 100})
		st.Series = nil // a short phase: only the runs give a spread
		t := &results.Target{Steps: []*results.Step{st}}
		if i == 0 {
			sd = Side{Label: "x", Target: t}
		} else {
			sd.Repeats = append(sd.Repeats, t)
		}
	}
	return sd
}

func TestRepeatedRunsGiveTheSpread(t *testing.T) {
	// Means 1000 and 1030, runs spread by ±50: not a difference.
	v := verdicts(Compare(repeated(1000, -50, 0, 50), repeated(1030, -50, 0, 50)))
	if v["throughput (ops/s)"] != "no significant difference (3 and 3 runs)" {
		t.Fatalf("%v", v)
	}
	// Means 1000 and 1300 with the same spread: B better.
	rows := Compare(repeated(1000, -50, 0, 50), repeated(1300, -50, 0, 50))
	v = verdicts(rows)
	if v["throughput (ops/s)"] != "B better (3 and 3 runs)" || rows[0].A != 1000 || rows[0].B != 1300 {
		t.Fatalf("%v %+v", v, rows[0])
	}
}

// Steps match by their labels: a sweep's level with the same level, and
// a rate search compares as the sustainable rate it found, judged by the
// searches' brackets, never trial by trial.
func TestStepsMatchByLabelsAndSearchesByRate(t *testing.T) {
	level := func(c string, ops []float64) *results.Step {
		s := step(ops, []int64{100, 100, 100, 100, 100})
		s.Labels = results.StepLabels("w", "p", 100).With(results.LConcurrency, c)
		return s
	}
	trial := func(rate string) *results.Step {
		s := step([]float64{10, 10, 10, 10}, []int64{1, 1, 1, 1})
		s.Labels = results.StepLabels("w", "p", 100).With(results.LRate, rate).With(results.LTrial, "1")
		return s
	}
	search := func(sust float64, failed float64) []results.RateSearch {
		return []results.RateSearch{{Workload: "w", Phase: "p", N: 100, Labels: results.StepLabels("w", "p", 100), Done: true, Sustainable: sust,
			Trials: []results.RateTrial{{Offered: sust, Sustained: true}, {Offered: failed}}}}
	}
	a := &results.Target{Steps: []*results.Step{level("1", []float64{100, 100, 100, 100, 100}), level("8", []float64{800, 800, 800, 800, 800}), trial("500")},
		Searches: search(1000, 1100)}
	b := &results.Target{Steps: []*results.Step{level("8", []float64{790, 810, 800, 800, 800}), level("1", []float64{50, 50, 50, 50, 50}), trial("500")},
		Searches: search(2000, 2200)}
	rows := Compare(Side{Label: "a", Target: a}, Side{Label: "b", Target: b})
	got := map[string]string{}
	for _, r := range rows {
		got[r.Step+" / "+r.Figure] = r.Verdict
		if strings.Contains(r.Step, "trial") {
			t.Errorf("a trial was compared step by step: %s", r.Step)
		}
	}
	if v := got["w p N=100 (concurrency=1) / throughput (ops/s)"]; v != "B worse" {
		t.Errorf("level 1 throughput: %q (rows %v)", v, got)
	}
	if v := got["w p N=100 (concurrency=8) / throughput (ops/s)"]; v != "no significant difference" {
		t.Errorf("level 8 throughput: %q", v)
	}
	if v := got["w p N=100 / sustainable rate (ops/s)"]; v != "B better" {
		t.Errorf("sustainable rate: %q", v)
	}
	b.Searches = search(1050, 1150)
	rows = Compare(Side{Label: "a", Target: a}, Side{Label: "b", Target: b})
	if v := verdicts(rows)["sustainable rate (ops/s)"]; !strings.HasPrefix(v, "no significant difference") {
		t.Errorf("overlapping brackets: %q", v)
	}
}
