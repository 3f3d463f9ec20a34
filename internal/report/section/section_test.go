package section_test

import (
	"fmt"
	"strings"
	"testing"

	"storebench/internal/compare"
	"storebench/internal/report"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

// A workload registered from outside internal/report (this test package)
// gets its own section in the report, the recommendation ranks by its
// headline, and compare and the report print its typed metrics in their
// units: nothing in internal/report names it.
func init() {
	section.Register("toy", section.Def{
		Render: func(b *strings.Builder, run *results.Run) {
			b.WriteString("## Toy spins\n\n")
			tab := section.Table{Head: []string{"Target", "Spins"}}
			for _, t := range section.Participants(run, "toy") {
				s := t.Find("toy", "spin", -1)
				if s == nil {
					tab.Rows = append(tab.Rows, []string{t.Title, section.Missing(t, "toy", "spin", -1)})
					continue
				}
				tab.Rows = append(tab.Rows, []string{t.Title, fmt.Sprintf("%.0f spins", s.Metrics["spins"])})
			}
			tab.Write(b)
		},
		Headline: &section.Headline{Figure: "toy.spin", Metric: "throughput", What: "spins per second of the toy"},
		Metrics:  []section.Metric{{Name: "spins", Unit: "spins", Agg: section.Sum, Better: section.Higher, What: "spins made"}},
	})
	section.Register("toy-plain", section.Def{
		Metrics: []section.Metric{{Name: "wobble_seconds", Unit: "s", Agg: section.Sum, Better: section.Lower, What: "time wobbling"}},
	})
}

func toyRun() *results.Run {
	step := func(ops int64, secs, spins float64) *results.Step {
		return &results.Step{Workload: "toy", Phase: "spin", N: 10, Ops: ops, Seconds: secs, Metrics: map[string]float64{"spins": spins}}
	}
	return &results.Run{Study: "toy", Ladder: []int64{10}, Targets: []*results.Target{
		{Name: "slow", Title: "Slow", Status: "ok", Steps: []*results.Step{step(100, 10, 7),
			{Workload: "toy-plain", Phase: "wobble", N: 10, Ops: 5, Seconds: 1, Metrics: map[string]float64{"wobble_seconds": 2.5}}}},
		{Name: "fast", Title: "Fast", Status: "ok", Steps: []*results.Step{step(1000, 10, 9)}},
		{Name: "none", Title: "Nothing", Status: "ok", NA: []results.NA{{Workload: "toy", Phase: "spin", N: 10, Status: "n/a", Reason: "cannot spin"}}},
	}}
}

func TestAWorkloadOwnsItsSectionHeadlineAndMetrics(t *testing.T) {
	run := toyRun()
	md := report.Markdown(run)
	for _, want := range []string{
		"## Toy spins", "| Slow | 7 spins |", "| Fast | 9 spins |", "| Nothing | n/a: cannot spin |",
		"ranked by spins per second of the toy (the study's headline figure) at 10",
		"**Best on this figure: Fast** (100 ops/s)",
		// The workload with metrics and no tables: the generic table,
		// its metric in its unit.
		"## toy-plain: wobble", "time wobbling", "| 2.50 s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	rec := report.Recommend(run)
	if rec == nil || len(rec.Ranked) != 2 || rec.Ranked[0].Target.Name != "fast" || rec.Ranked[1].Target.Name != "slow" {
		t.Fatalf("ranking by the toy's headline: %+v", rec)
	}
	if len(rec.Rejected) != 1 || !strings.Contains(rec.Rejected[0].Broken, "n/a (cannot spin)") {
		t.Fatalf("the target that cannot spin: %+v", rec.Rejected)
	}

	// compare prints the typed metric in its unit; with repeated runs the
	// spread between them judges it in its direction.
	a := compare.Side{Label: "slow", Target: run.Targets[0]}
	b := compare.Side{Label: "fast", Target: run.Targets[1]}
	out := compare.Markdown(a, b, compare.Compare(a, b))
	if !strings.Contains(out, "| spins (spins) | 7 spins | 9 spins | 1.286 | one value per side") {
		t.Fatalf("compare lacks the typed metric:\n%s", out)
	}
	rep := func(t *results.Target, spins ...float64) compare.Side {
		s := compare.Side{Label: t.Name, Target: t}
		for _, x := range spins {
			s.Repeats = append(s.Repeats, &results.Target{Steps: []*results.Step{{Workload: "toy", Phase: "spin", N: 10, Ops: 100, Seconds: 10, Metrics: map[string]float64{"spins": x}}}})
		}
		return s
	}
	a, b = rep(run.Targets[0], 7.1, 6.9), rep(run.Targets[1], 9.1, 8.9)
	judged := false
	for _, r := range compare.Compare(a, b) {
		if r.Figure == "spins (spins)" {
			judged = true
			if !strings.HasPrefix(r.Verdict, "B better") {
				t.Fatalf("spins across runs: %+v", r)
			}
		}
	}
	if !judged {
		t.Fatal("no row for the typed metric across runs")
	}
}

func TestMetricFormatAndCombine(t *testing.T) {
	for _, c := range []struct {
		m    section.Metric
		vals []float64
		want string
	}{
		{section.Metric{Unit: "s", Agg: section.Sum}, []float64{1, 2.5}, "3.50 s"},
		{section.Metric{Unit: "ns", Agg: section.Max}, []float64{1500, 900}, "1.5 µs"},
		{section.Metric{Unit: "B", Agg: section.Mean}, []float64{1024, 3072}, "2.0 KiB"},
		{section.Metric{Unit: "ops/s", Agg: section.Rate}, []float64{100, 250}, "350 ops/s"},
		{section.Metric{Agg: section.Histogram}, []float64{3, 9, 4}, "9"},
	} {
		if got := c.m.Format(c.m.Combine(c.vals)); got != c.want {
			t.Errorf("%s of %v in %q: %q, want %q", c.m.Agg, c.vals, c.m.Unit, got, c.want)
		}
	}
}
