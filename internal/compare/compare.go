// Package compare puts two measurements side by side — two runs, or two
// targets of one run — figure by figure, with a verdict that respects
// noise: the per-second intervals of each phase give a spread, and a
// difference inside it is reported as no significant difference.
package compare

import (
	"errors"
	"fmt"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/gonum/stat/distuv"

	"storebench/internal/measure/latency"
	"storebench/internal/report"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

// Side is one of the two things compared: a target, and optionally the
// same target in repeated runs of the same study. With two or more runs
// on both sides the verdict comes from the spread between runs, which
// includes everything that changes from one run to the next (placement
// on disk, caches, background work), not only the noise within a phase.
type Side struct {
	Label  string
	Target *results.Target
	// Repeats are the same target in other runs (Target excluded).
	Repeats []*results.Target
}

func (s Side) runs() []*results.Target { return append([]*results.Target{s.Target}, s.Repeats...) }

// Row is one figure of one step.
type Row struct {
	Step    string
	Figure  string
	A, B    float64
	Ratio   float64 // B/A
	Verdict string
	Format  func(float64) string
}

// minIntervals is the fewest per-second intervals a phase needs on each
// side before a spread means anything.
const minIntervals = 3

// Compare lists, for every step both sides ran, throughput and median and
// p99 service time with a verdict.
func Compare(a, b Side) []Row {
	var rows []Row
	for _, sa := range a.Target.Steps {
		sa.Name() // labels derived for steps of older files
		if sa.Labels[results.LTrial] != "" {
			// A rate search's trials are planned from each side's own
			// results: they compare as the search's found rate, below.
			continue
		}
		sb := find(b.Target, sa)
		if sb == nil || sa.Ops == 0 || sb.Ops == 0 {
			continue
		}
		name := fmt.Sprintf("%s %s N=%s", sa.Workload, sa.Phase, report.Count(sa.N))
		if x := sa.Labels.Extra(); x != "" {
			name += " (" + x + ")"
		}
		thrA, thrB := float64(sa.Ops)/sa.Seconds, float64(sb.Ops)/sb.Seconds
		if ra, rb := repeats(a, sa), repeats(b, sa); len(ra) >= 2 && len(rb) >= 2 {
			thr := func(s *results.Step) float64 { return float64(s.Ops) / s.Seconds }
			p50 := func(s *results.Step) float64 { return float64(s.Latency.P50) }
			p99 := func(s *results.Step) float64 { return float64(s.Latency.P99) }
			rows = append(rows,
				acrossRuns(figureOf{name, "throughput (ops/s)", true, opsPerS}, ra, rb, thr),
				acrossRuns(figureOf{name, "p50 service time", false, lat}, ra, rb, p50),
				acrossRuns(figureOf{name, "p99 service time", false, lat}, ra, rb, p99))
			rows = append(rows, metricRows(name, sa, sb, ra, rb)...)
			continue
		}
		rows = append(rows,
			row(figureOf{name, "throughput (ops/s)", true, opsPerS}, thrA, thrB, series(sa, func(t results.Tick) float64 { return t.OpsPerS }), series(sb, func(t results.Tick) float64 { return t.OpsPerS })),
			withHist(row(figureOf{name, "p50 service time", false, lat}, float64(sa.Latency.P50), float64(sb.Latency.P50), series(sa, func(t results.Tick) float64 { return float64(t.P50) }), series(sb, func(t results.Tick) float64 { return float64(t.P50) })), sa, sb, 50),
			withHist(row(figureOf{name, "p99 service time", false, lat}, float64(sa.Latency.P99), float64(sb.Latency.P99), series(sa, func(t results.Tick) float64 { return float64(t.P99) }), series(sb, func(t results.Tick) float64 { return float64(t.P99) })), sa, sb, 99),
		)
		rows = append(rows, metricRows(name, sa, sb, nil, nil)...)
	}
	return append(rows, searches(a.Target, b.Target)...)
}

// metricRows compares the typed metrics the step's workload registered
// with a direction (package report/section), each printed in its unit.
// With repeated runs on both sides the spread between runs judges; a
// single value per side has no spread, and says so.
func metricRows(name string, sa, sb *results.Step, ra, rb []*results.Step) []Row {
	var rows []Row
	for _, m := range section.Metrics(sa.Workload, sa.Phase) {
		va, okA := sa.Metrics[m.Name]
		vb, okB := sb.Metrics[m.Name]
		if m.Better == section.Neither || !okA || !okB {
			continue
		}
		figure := m.Name
		if m.Unit != "" {
			figure += " (" + m.Unit + ")"
		}
		f := func(s *results.Step) float64 { return s.Metrics[m.Name] }
		if len(ra) >= 2 && len(rb) >= 2 {
			rows = append(rows, acrossRuns(figureOf{name, figure, m.Better == section.Higher, m.Format}, ra, rb, f))
			continue
		}
		r := Row{Step: name, Figure: figure, A: va, B: vb, Format: m.Format,
			Verdict: "one value per side: repeat the runs to judge (RUN_A1,RUN_A2 RUN_B1,RUN_B2)"}
		if va != 0 {
			r.Ratio = vb / va
		}
		rows = append(rows, r)
	}
	return rows
}

// searches compares the sustainable rates two targets' searches of the
// same step found. A search's own precision is its noise: rates within
// the wider bracket of the two are no significant difference.
func searches(a, b *results.Target) []Row {
	var rows []Row
	for _, ra := range a.Searches {
		for _, rb := range b.Searches {
			if !ra.Labels.Equal(rb.Labels) {
				continue
			}
			name := fmt.Sprintf("%s %s N=%s", ra.Workload, ra.Phase, report.Count(ra.N))
			if x := ra.Labels.Extra(); x != "" {
				name += " (" + x + ")"
			}
			r := Row{Step: name, Figure: "sustainable rate (ops/s)", A: ra.Sustainable, B: rb.Sustainable,
				Format: func(v float64) string { return fmt.Sprintf("%.0f", v) }}
			if ra.Sustainable > 0 {
				r.Ratio = rb.Sustainable / ra.Sustainable
			}
			la, ha := bracket(ra)
			lb, hb := bracket(rb)
			switch {
			case !ra.Done || !rb.Done:
				r.Verdict = "a search was cut short"
			case hb > 0 && hb <= la:
				// Every rate B could sustain is below what A sustained.
				r.Verdict = "B worse"
			case ha > 0 && ha <= lb:
				r.Verdict = "B better"
			default:
				r.Verdict = "no significant difference (within the searches' brackets)"
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// bracket is what a search knows of the sustainable rate: at least the
// highest sustained offer, below the lowest failed one above it (0: none).
func bracket(rs results.RateSearch) (lo, hi float64) {
	lo = rs.Sustainable
	for _, t := range rs.Trials {
		if !t.Sustained && t.Offered > lo && (hi == 0 || t.Offered < hi) {
			hi = t.Offered
		}
	}
	return lo, hi
}

// repeats returns the step like s in every run of a side.
func repeats(side Side, s *results.Step) []*results.Step {
	var out []*results.Step
	for _, t := range side.runs() {
		if o := find(t, s); o != nil && o.Ops > 0 && o.Seconds > 0 {
			out = append(out, o)
		}
	}
	return out
}

// figureOf names what a row judges: the step, the figure, which way is
// better (higherIsBetter orients "better"/"worse") and how its values
// print.
type figureOf struct {
	step, figure   string
	higherIsBetter bool
	format         func(float64) string
}

// row is the figure's row, with its values and no verdict yet.
func (g figureOf) row(a, b float64) Row {
	r := Row{Step: g.step, Figure: g.figure, A: a, B: b, Format: g.format}
	if a > 0 {
		r.Ratio = b / a
	}
	return r
}

// acrossRuns judges a figure from its values in repeated runs (f of
// each): Welch's t-test at 95% (Student's t critical value for the Welch
// degrees of freedom), the figure shown being the mean of the runs.
func acrossRuns(g figureOf, sa, sb []*results.Step, f func(*results.Step) float64) Row {
	var xa, xb []float64
	for _, s := range sa {
		xa = append(xa, f(s))
	}
	for _, s := range sb {
		xb = append(xb, f(s))
	}
	ma, da := meanSD(xa)
	mb, db := meanSD(xb)
	r := g.row(ma, mb)
	se, df := welch(da, db, len(xa), len(xb))
	runs := fmt.Sprintf(" (%d and %d runs)", len(xa), len(xb))
	if math.Abs(mb-ma) <= tCritical(df)*se {
		r.Verdict = "no significant difference" + runs
		return r
	}
	if (mb > ma) == g.higherIsBetter {
		r.Verdict = "B better" + runs
	} else {
		r.Verdict = "B worse" + runs
	}
	return r
}

// welch is the standard error of the difference of two means and its
// Welch–Satterthwaite degrees of freedom, from each sample's standard
// deviation and size (each at least 2). The degrees of freedom are
// fractional in general and are used as they are.
func welch(sdA, sdB float64, nA, nB int) (se, df float64) {
	va, vb := sdA*sdA/float64(nA), sdB*sdB/float64(nB)
	se = math.Sqrt(va + vb)
	if va+vb == 0 {
		// No spread on either side: the smaller sample's degrees of
		// freedom (any difference is then beyond the noise anyway).
		return 0, float64(min(nA, nB) - 1)
	}
	df = (va + vb) * (va + vb) / (va*va/float64(nA-1) + vb*vb/float64(nB-1))
	return se, df
}

// confidence is the two-sided level of every test here.
const confidence = 0.95

// tCritical is the two-sided 95% critical value of Student's t with df
// degrees of freedom, fractional df included (gonum's quantile, not a
// table: between a table's rows the next row's value is too small).
func tCritical(df float64) float64 {
	if !(df > 0) {
		return math.Inf(1)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
}

// zCritical is the two-sided 95% critical value of the standard normal
// (1.96).
var zCritical = distuv.UnitNormal.Quantile(1 - (1-confidence)/2)

func lat(v float64) string { return report.Latency(int64(v)) }

func opsPerS(v float64) string { return fmt.Sprintf("%.0f", v) }

// find is the step of t with s's labels: its identity.
func find(t *results.Target, s *results.Step) *results.Step {
	s.Name() // labels derived for steps of older files
	return t.FindLabels(s.Labels)
}

// series takes a figure from every full interval of a step (the last,
// partial one is left out: it covers less than a tick).
func series(s *results.Step, f func(results.Tick) float64) []float64 {
	var out []float64
	for i, t := range s.Series {
		if i == len(s.Series)-1 && len(s.Series) > 1 {
			break
		}
		if t.Ops > 0 {
			out = append(out, f(t))
		}
	}
	return out
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	if len(x) > 1 {
		sd = math.Sqrt(sd / float64(len(x)-1))
	}
	return mean, sd
}

// row judges one figure. The difference of the interval means is
// significant when it exceeds its standard error times Student's t for
// the Welch degrees of freedom: Welch's t-test at 95% (a flat twice the
// standard error claims more than 95% with the few intervals of a short
// phase). a and b are the figure's values, sa and sb its values in
// each interval.
func row(g figureOf, a, b float64, sa, sb []float64) Row {
	r := g.row(a, b)
	if len(sa) < minIntervals || len(sb) < minIntervals {
		r.Verdict = fmt.Sprintf("too short to judge (%d and %d one-second intervals; %d needed)", len(sa), len(sb), minIntervals)
		return r
	}
	ma, da := meanSD(sa)
	mb, db := meanSD(sb)
	se, df := welch(da, db, len(sa), len(sb))
	if math.Abs(mb-ma) <= tCritical(df)*se {
		r.Verdict = "no significant difference"
		return r
	}
	if (mb > ma) == g.higherIsBetter {
		r.Verdict = "B better"
	} else {
		r.Verdict = "B worse"
	}
	return r
}

// withHist judges a percentile of a phase too short for interval
// statistics from the phase's whole HdrHistograms: a 95% confidence
// interval of the percentile from order statistics (the rank n·p ± 1.96
// √(n·p·(1−p))). Disjoint intervals are a difference. This treats
// operations as independent, which consecutive latencies are not quite;
// the verdict says which method it used.
func withHist(r Row, sa, sb *results.Step, q float64) Row {
	if !strings.HasPrefix(r.Verdict, "too short") {
		return r
	}
	// Decode reads both the standard encoding and the doubly encoded one
	// of results.json files from older storebench versions.
	ha, errA := latency.Decode(sa.Hist)
	hb, errB := latency.Decode(sb.Hist)
	if err := errors.Join(errA, errB); err != nil {
		r.Verdict += fmt.Sprintf("; histogram unreadable: %v", err)
		return r
	}
	if ha.TotalCount() < 100 || hb.TotalCount() < 100 {
		return r
	}
	loA, hiA := quantileCI(ha, q)
	loB, hiB := quantileCI(hb, q)
	switch {
	case hiB < loA:
		r.Verdict = "B better (percentile confidence intervals)"
	case hiA < loB:
		r.Verdict = "B worse (percentile confidence intervals)"
	default:
		r.Verdict = "no significant difference (percentile confidence intervals)"
	}
	return r
}

func quantileCI(h *hdr.Histogram, q float64) (lo, hi int64) {
	n := float64(h.TotalCount())
	p := q / 100
	d := zCritical * math.Sqrt(n*p*(1-p))
	loQ := math.Max(0, (n*p-d)/n*100)
	hiQ := math.Min(100, (n*p+d)/n*100)
	return h.ValueAtQuantile(loQ), h.ValueAtQuantile(hiQ)
}

// Markdown renders the comparison.
func Markdown(a, b Side, rows []Row) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Comparison\n\nA: %s\nB: %s\n%s\n", a.Label, b.Label, machineLine(a, b))
	s.WriteString("A difference counts only when it exceeds its noise; otherwise it is reported as no significant difference. With repeated runs on both sides (RUN_A1,RUN_A2 RUN_B1,RUN_B2) the noise is the spread between runs (Welch's t-test, 95%) and A and B are the means of the runs. Otherwise it is the spread of the per-second intervals within each phase (Welch's t-test, 95%), and percentiles of phases shorter than 3 s are judged from their whole histograms (95% confidence intervals of the percentile by order statistics).\n\n")
	s.WriteString("| step | figure | A | B | B/A | verdict |\n|---|---|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&s, "| %s | %s | %s | %s | %.3f | %s |\n", r.Step, r.Figure, r.Format(r.A), r.Format(r.B), r.Ratio, r.Verdict)
	}
	if len(rows) == 0 {
		s.WriteString("| — | the two sides share no step | | | | |\n")
	}
	return s.String()
}
