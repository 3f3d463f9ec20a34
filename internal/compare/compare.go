// Package compare puts two measurements side by side — two runs, or two
// targets of one run — figure by figure, with a verdict that respects
// noise: the per-second intervals of each phase give a spread, and a
// difference inside it is reported as no significant difference.
package compare

import (
	"fmt"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"storebench/internal/measure/latency"
	"storebench/internal/report"
	"storebench/internal/results"
)

// Side is one of the two things compared.
type Side struct {
	Label  string
	Target *results.Target
}

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
		sb := find(b.Target, sa)
		if sb == nil || sa.Ops == 0 || sb.Ops == 0 {
			continue
		}
		name := fmt.Sprintf("%s %s N=%s", sa.Workload, sa.Phase, report.Count(sa.N))
		if l, ok := sa.Metrics["length"]; ok {
			name += fmt.Sprintf(" (chains of %s)", report.Count(int64(l)))
		}
		thrA, thrB := float64(sa.Ops)/sa.Seconds, float64(sb.Ops)/sb.Seconds
		rows = append(rows,
			row(name, "throughput (ops/s)", thrA, thrB, series(sa, func(t results.Tick) float64 { return t.OpsPerS }), series(sb, func(t results.Tick) float64 { return t.OpsPerS }), true, func(v float64) string { return fmt.Sprintf("%.0f", v) }),
			withHist(row(name, "p50 service time", float64(sa.Latency.P50), float64(sb.Latency.P50), series(sa, func(t results.Tick) float64 { return float64(t.P50) }), series(sb, func(t results.Tick) float64 { return float64(t.P50) }), false, lat), sa, sb, 50),
			withHist(row(name, "p99 service time", float64(sa.Latency.P99), float64(sb.Latency.P99), series(sa, func(t results.Tick) float64 { return float64(t.P99) }), series(sb, func(t results.Tick) float64 { return float64(t.P99) }), false, lat), sa, sb, 99),
		)
	}
	return rows
}

func lat(v float64) string { return report.Latency(int64(v)) }

func find(t *results.Target, s *results.Step) *results.Step {
	for _, o := range t.Steps {
		if o.Workload == s.Workload && o.Phase == s.Phase && o.N == s.N && o.Metrics["length"] == s.Metrics["length"] {
			return o
		}
	}
	return nil
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
// significant when it exceeds twice its standard error (Welch), roughly a
// 95% test; higherIsBetter orients "better"/"worse".
func row(step, figure string, a, b float64, sa, sb []float64, higherIsBetter bool, format func(float64) string) Row {
	r := Row{Step: step, Figure: figure, A: a, B: b, Format: format}
	if a > 0 {
		r.Ratio = b / a
	}
	if len(sa) < minIntervals || len(sb) < minIntervals {
		r.Verdict = fmt.Sprintf("too short to judge (%d and %d one-second intervals; %d needed)", len(sa), len(sb), minIntervals)
		return r
	}
	ma, da := meanSD(sa)
	mb, db := meanSD(sb)
	se := math.Sqrt(da*da/float64(len(sa)) + db*db/float64(len(sb)))
	if math.Abs(mb-ma) <= 2*se {
		r.Verdict = "no significant difference"
		return r
	}
	if (mb > ma) == higherIsBetter {
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
	ha, errA := latency.Decode(sa.Hist)
	hb, errB := latency.Decode(sb.Hist)
	if errA != nil || errB != nil || ha.TotalCount() < 100 || hb.TotalCount() < 100 {
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
	d := 1.96 * math.Sqrt(n*p*(1-p))
	loQ := math.Max(0, (n*p-d)/n*100)
	hiQ := math.Min(100, (n*p+d)/n*100)
	return h.ValueAtQuantile(loQ), h.ValueAtQuantile(hiQ)
}

// Markdown renders the comparison.
func Markdown(a, b Side, rows []Row) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Comparison\n\nA: %s\nB: %s\n\n", a.Label, b.Label)
	s.WriteString("A difference counts only when it exceeds twice the standard error of the per-second intervals of both phases; otherwise it is reported as no significant difference. Percentiles of phases shorter than 3 s are judged from their whole histograms instead (95% confidence intervals of the percentile by order statistics).\n\n")
	s.WriteString("| step | figure | A | B | B/A | verdict |\n|---|---|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&s, "| %s | %s | %s | %s | %.3f | %s |\n", r.Step, r.Figure, r.Format(r.A), r.Format(r.B), r.Ratio, r.Verdict)
	}
	if len(rows) == 0 {
		s.WriteString("| — | the two sides share no step | | | | |\n")
	}
	return s.String()
}
