package seedcmp

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

// byOpValue reads a figure of one operation type of a step (value
// by_op.OP.STAT: READ.mean, WRITE.p99): its summary's, or a percentile
// of its histogram.
func byOpValue(st *results.Step, rest string) (float64, bool) {
	i := strings.LastIndex(rest, ".")
	if i <= 0 {
		return 0, false
	}
	op, stat := rest[:i], rest[i+1:]
	l, ok := st.ByOp[op]
	if !ok || l.Count == 0 {
		return 0, false
	}
	switch stat {
	case "mean":
		return l.Mean, true
	case "min":
		return float64(l.Min), true
	case "p50":
		return float64(l.P50), true
	case "p90":
		return float64(l.P90), true
	case "p99":
		return float64(l.P99), true
	case "p999":
		return float64(l.P999), true
	case "max":
		return float64(l.Max), true
	}
	q, ok := strings.CutPrefix(stat, "p")
	if !ok || st.ByOpHist[op] == "" {
		return 0, false
	}
	p, err := strconv.ParseFloat(q, 64)
	if err != nil {
		return 0, false
	}
	h, err := latency.Decode(st.ByOpHist[op])
	if err != nil || h.TotalCount() == 0 {
		return 0, false
	}
	return float64(h.ValueAtQuantile(p)), true
}

// memGrowth is what a process's memory grew by between two snapshots:
// PSS where both have it, resident memory otherwise (never one against
// the other).
func memGrowth(r results.Resources) (float64, bool) {
	if r.Before.PSSBytes > 0 && r.After.PSSBytes > 0 {
		return float64(r.After.PSSBytes - r.Before.PSSBytes), true
	}
	return float64(r.After.RSSBytes - r.Before.RSSBytes), r.Before.RSSBytes > 0 && r.After.RSSBytes > 0
}

// unlike reports whether a target ran the phase a figure is read from,
// but none of its steps carries the labels the figure needs (o.Where):
// it ran another variant than the seed's.
func unlike(t *results.Target, o *Ours) bool {
	if len(o.Where) == 0 {
		return false
	}
	ran := false
	for _, st := range t.Steps {
		if st.Workload != o.Workload || (o.Phase != "" && st.Phase != o.Phase) || st.Error != "" {
			continue
		}
		if where(st, o.Where) {
			return false
		}
		ran = true
	}
	return ran
}

// whereText says a finding's labels: "rule backtracer".
func whereText(w map[string]string) string {
	var out []string
	for k, v := range w {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// GCNotOneFigure is why a GC finding (value gc_passes) has no verdict:
// ours is how the passes went, not one duration to set against the
// seed's.
const GCNotOneFigure = "ours is how the GC passes went (kept up, fell behind, the insert rate while they ran), not one duration: no ratio to the seed's figure stands for it"

// GCPasses is how the GC passes during one ingest step went, from its
// facts gc_passes (each pass's start and end, seconds into the step, to
// 0.1 s) and gc_pass_outcomes, and its metrics.
type GCPasses struct {
	// Passes ran during the ingest (the final pass after it is not one).
	Passes              int
	KeptUp, Behind, Cut int
	// Empty are the passes that deleted nothing; -1: not known (deletes
	// not counted, or a run before the per-pass record).
	Empty int
	// KeptUpMax is the longest pass that kept up; BehindMin and
	// BehindMax the shortest and longest that fell behind; CutSoFar
	// what the cut passes had run when the ingest ended (seconds).
	KeptUpMax, BehindMin, BehindMax, CutSoFar float64
	// During and Outside are the insert rates (points/s) in the seconds
	// a pass ran and in the others; -1: no such second.
	During, Outside float64
	// Inferred: the step predates the per-pass record (fact
	// gc_pass_outcomes); a pass fell behind when the next pass began as
	// it ended (within BehindGap: the next was already due), and the
	// cut passes are the last gc_passes_cut.
	Inferred bool
}

// BehindGap is the most seconds between a pass's end and the next
// pass's start, as fact gc_passes records them (to 0.1 s), for which
// the next pass was already due when the pass ended: the GC task looks
// every 100 ms, and a ticker's missed tick fires at once.
const BehindGap = 0.2

// GCPassesOf reads how the GC passes of an ingest step went; false when
// the step records no passes.
func GCPassesOf(st *results.Step) (GCPasses, bool) {
	m := st.Metrics
	n, ok := m["gc_passes"]
	if !ok {
		return GCPasses{}, false
	}
	g := GCPasses{Passes: int(n), Empty: -1, During: -1, Outside: -1}
	if v, ok := m["qps_during_gc"]; ok {
		g.During = v
	}
	if v, ok := m["qps_outside_gc"]; ok {
		g.Outside = v
	}
	if v, ok := m["gc_passes_empty"]; ok {
		g.Empty = int(v)
	}
	type span struct{ start, end float64 }
	var spans []span
	for _, f := range strings.Fields(st.Facts["gc_passes"]) {
		a, b, ok := strings.Cut(f, "-")
		s, err1 := strconv.ParseFloat(a, 64)
		e, err2 := strconv.ParseFloat(b, 64)
		if !ok || err1 != nil || err2 != nil {
			return GCPasses{}, false
		}
		spans = append(spans, span{s, e})
	}
	if len(spans) < g.Passes {
		return GCPasses{}, false
	}
	outcomes := strings.Fields(st.Facts["gc_pass_outcomes"])
	if len(outcomes) != len(spans) {
		// The per-pass record is missing: infer it.
		g.Inferred, outcomes = true, make([]string, len(spans))
		cut := int(m["gc_passes_cut"])
		for i := 0; i < g.Passes; i++ {
			switch {
			case i >= g.Passes-cut:
				outcomes[i] = "cut"
			case i+1 < g.Passes && spans[i+1].start-spans[i].end <= BehindGap:
				outcomes[i] = "behind"
			default:
				outcomes[i] = "kept_up"
			}
		}
	}
	seen := 0
	for i, o := range outcomes {
		d := spans[i].end - spans[i].start
		switch o {
		case "kept_up":
			g.KeptUp++
			g.KeptUpMax = max(g.KeptUpMax, d)
		case "behind":
			if g.Behind == 0 || d < g.BehindMin {
				g.BehindMin = d
			}
			g.Behind++
			g.BehindMax = max(g.BehindMax, d)
		case "cut":
			g.Cut++
			g.CutSoFar += d
		default:
			continue
		}
		seen++
	}
	if seen != g.Passes {
		return GCPasses{}, false
	}
	return g, true
}

// Text says it, durations in unit: "29 passes during the ingest: 24 kept
// up (...), 4 fell behind (...), 1 cut short by its end (...); insert
// rate while a pass ran 49629 points/s, outside 63576 (0.781×)".
func (g GCPasses) Text(unit string) string {
	dur := func(s float64) string {
		v, err := convert(s, "s", unit)
		if err != nil {
			v, unit = s, "s"
		}
		return strconv.FormatFloat(v, 'g', 3, 64) + " " + unit
	}
	var parts []string
	if g.KeptUp > 0 {
		x := fmt.Sprintf("%d kept up (each done before the next pass was due", g.KeptUp)
		if g.KeptUpMax < 0.05 {
			x += ", each within 0.1 s)"
		} else {
			x += ", the longest " + dur(g.KeptUpMax) + ")"
		}
		parts = append(parts, x)
	} else {
		parts = append(parts, "none kept up")
	}
	if g.Behind > 0 {
		x := fmt.Sprintf("%d fell behind (the next pass due before each ended: ", g.Behind)
		if g.Behind == 1 {
			x = "1 fell behind (the next pass due before it ended: " + dur(g.BehindMax) + ")"
		} else {
			x += dur(g.BehindMin) + " to " + dur(g.BehindMax) + ")"
		}
		parts = append(parts, x)
	} else {
		parts = append(parts, "none fell behind")
	}
	if g.Cut > 0 {
		parts = append(parts, fmt.Sprintf("%d cut short by the end of the ingest (%s run by then)", g.Cut, dur(g.CutSoFar)))
	}
	s := fmt.Sprintf("%d GC passes during the ingest: %s", g.Passes, strings.Join(parts, ", "))
	if g.Empty >= 0 {
		s += fmt.Sprintf("; %d of them deleted nothing", g.Empty)
	}
	switch {
	case g.During >= 0 && g.Outside > 0:
		s += fmt.Sprintf("; insert rate while a pass ran %.0f points/s, outside the passes %.0f (%s×)", g.During, g.Outside, strconv.FormatFloat(g.During/g.Outside, 'g', 3, 64))
	case g.Outside >= 0:
		s += fmt.Sprintf("; insert rate outside the passes %.0f points/s (no second was mostly inside a pass)", g.Outside)
	}
	if g.Inferred {
		s += fmt.Sprintf(" (this run predates the per-pass record: a pass fell behind where the next began within %g s of its end; what each pass deleted is not recorded)", BehindGap)
	}
	return s
}

// gcDetail is how the GC passes of a target's ingest steps went (value
// gc_passes), "" when none records passes.
func gcDetail(t *results.Target, o *Ours, unit string) string {
	var steps []*results.Step
	for _, st := range t.Steps {
		if st.Workload != o.Workload || (o.Phase != "" && st.Phase != o.Phase) || st.Error != "" || st.Partial || !where(st, o.Where) {
			continue
		}
		steps = append(steps, st)
	}
	var out []string
	for _, st := range steps {
		g, ok := GCPassesOf(st)
		if !ok {
			continue
		}
		x := g.Text(unit)
		if len(steps) > 1 {
			x = "at " + strconv.FormatInt(st.N, 10) + ": " + x
		}
		out = append(out, x)
	}
	return strings.Join(out, "; ")
}
