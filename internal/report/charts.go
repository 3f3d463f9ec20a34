package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/chart"
	"storebench/internal/measure/latency"
	"storebench/internal/results"
)

// minHistOps is the fewest operations a latency distribution is drawn
// from: below it the upper percentiles are a handful of samples (the
// ledger's whole-chain selects: 3 per length).
const minHistOps = 100

// Charts builds the charts of a run, per workload in the order the run
// measured them: growth with data size (time or latency, disk, memory),
// latency distributions at the largest size, and time series of the
// phases that lasted a few ticks. Only results.json's content is used, so
// `storebench report DIR` draws the same charts.
func Charts(run *results.Run) []*chart.Chart {
	var out []*chart.Chart
	for _, w := range workloads(run) {
		phases := phasesOf(run, w)
		for _, ph := range phases {
			out = append(out, withNA(run, w, ph, scaling(run, w, ph)...)...)
		}
		out = append(out, footprint(run, w, phases)...)
		for _, ph := range phases {
			out = append(out, withNA(run, w, ph, percentiles(run, w, ph, false), percentiles(run, w, ph, true))...)
		}
		for _, ph := range phases {
			out = append(out, withNA(run, w, ph, timeSeries(run, w, ph))...)
		}
		out = append(out, sweepCharts(run, w)...)
	}
	out = append(out, costChart(run))
	// Builders return nil where they have nothing to draw.
	kept := out[:0]
	for _, c := range out {
		if c != nil && c.Lines() > 0 {
			kept = append(kept, c)
		}
	}
	return kept
}

// workloads lists the run's workloads in the order they were measured.
func workloads(run *results.Run) []string {
	var ws []string
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if !contains(ws, s.Workload) {
				ws = append(ws, s.Workload)
			}
		}
	}
	return ws
}

func phasesOf(run *results.Run, w string) []string {
	var ps []string
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Workload == w && !contains(ps, s.Phase) {
				ps = append(ps, s.Phase)
			}
		}
	}
	return ps
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// measured are a target's complete steps of one phase; a step cut short
// (partial) or failed would bend a curve for reasons not of the engine's
// making. The steps of a sweep (a concurrency level, a rate trial) have
// their own charts (sweeps.go): here they would draw several points at
// one size.
func measured(t *results.Target, w, phase string) []*results.Step {
	var ss []*results.Step
	for _, s := range t.Steps {
		if s.Workload == w && s.Phase == phase && !s.Partial && s.Error == "" && s.Ops > 0 && !swept(s) {
			ss = append(ss, s)
		}
	}
	return ss
}

// targetStyle gives each target of the run one colour for all charts;
// past the palette's end colours repeat dashed.
func targetStyle(run *results.Run, t *results.Target) (color int, dashed bool) {
	for i, u := range run.Targets {
		if u == t {
			return i, i >= chart.PaletteSize()
		}
	}
	return 0, false
}

// sizes are the distinct data sizes of steps, ascending.
func sizes(ss []*results.Step) []int64 {
	var ns []int64
	for _, s := range ss {
		found := false
		for _, n := range ns {
			found = found || n == s.N
		}
		if !found {
			ns = append(ns, s.N)
		}
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	return ns
}

// growth is the legend's summary of a curve: "~N^0.93 (to 1e5)".
func growth(sym string, xs, ys []float64) string {
	top := 0.0
	for _, x := range xs {
		top = math.Max(top, x)
	}
	b, ok := chart.Slope(xs, ys)
	if !ok {
		return fmt.Sprintf("(%s=%s only)", sym, chart.Format(chart.Number, top))
	}
	return fmt.Sprintf("~%s^%.2f (to %s)", sym, b, chart.Format(chart.Number, top))
}

const scalingNote = "Log-log axes: a straight line is a power law, and the legend gives its exponent b (y ~ N^b, least squares over the sizes measured) and the largest size reached. b = 1: ten times the data takes ten times as long; b = 0: size does not matter."

// scaling draws how a phase grows with data size. A phase whose
// operation count grows with N (inserting N records) is drawn as its
// total time; one with a fixed number of operations (1000 selects at
// each size) as latency per operation, p50 and p99. A phase run at one
// size for several values of a workload's size label (the ledger's
// chain lengths) is drawn against that label instead.
func scaling(run *results.Run, w, phase string) []*chart.Chart {
	byTarget := map[*results.Target][]*results.Step{}
	var all []*results.Step
	for _, t := range run.Targets {
		ss := measured(t, w, phase)
		byTarget[t] = ss
		all = append(all, ss...)
	}
	if len(all) == 0 {
		return nil
	}
	for _, sl := range results.SizeLabels() {
		if bySizeLabel(all, sl.Key) {
			return []*chart.Chart{labelScaling(run, w, phase, sl, byTarget)}
		}
	}
	if len(sizes(all)) < 2 {
		return nil
	}
	c := &chart.Chart{
		ID: chart.SafeID(w, phase, "scaling"), Group: w, Kind: "scaling", Key: true,
		X:     chart.Axis{Label: "data size N", Unit: chart.Number, Log: true},
		Notes: []string{scalingNote},
	}
	unit := all[0].Unit
	if opsGrow(all) {
		c.Title = fmt.Sprintf("%s %s: time for the whole phase vs data size", w, phase)
		pn := chart.Panel{Y: chart.Axis{Label: "time", Unit: chart.Seconds, Log: true}}
		for _, t := range run.Targets {
			ss := byTarget[t]
			if len(ss) == 0 {
				continue
			}
			col, dash := targetStyle(run, t)
			s := chart.Series{Color: col, Dashed: dash, Marks: true}
			for _, st := range ss {
				s.X = append(s.X, float64(st.N))
				s.Y = append(s.Y, st.Seconds)
			}
			s.Legend = t.Title + " " + growth("N", s.X, s.Y)
			pn.Series = append(pn.Series, s)
		}
		c.Panels = []chart.Panel{pn}
		if unit != "" {
			c.Notes = append(c.Notes, fmt.Sprintf("One operation of this phase: %s; their number grows with N.", unit))
		}
		return []*chart.Chart{c}
	}
	c.ID = chart.SafeID(w, phase, "latency", "scaling")
	c.Title = fmt.Sprintf("%s %s: service time per operation vs data size, p50 (solid) and p99 (dashed)", w, phase)
	c.Panels = []chart.Panel{latencyScalingPanel(run, byTarget)}
	if unit != "" {
		c.Notes = append(c.Notes, fmt.Sprintf("One operation: %s; the same number of them at every size.", unit))
	}
	return []*chart.Chart{c}
}

// latencyScalingPanel draws, for a phase of a fixed number of operations,
// each target's p50 (solid) and p99 (dashed) service time against N, in
// the order of run.Targets so colours and legend match the other charts;
// the legend names how each percentile grows, or one growth when p50's is
// not flat.
func latencyScalingPanel(run *results.Run, byTarget map[*results.Target][]*results.Step) chart.Panel {
	pn := chart.Panel{Y: chart.Axis{Label: "service time", Unit: chart.Seconds, Log: true}}
	for _, t := range run.Targets {
		ss := byTarget[t]
		if len(ss) == 0 {
			continue
		}
		col, _ := targetStyle(run, t)
		p50 := chart.Series{Color: col, Marks: true}
		p99 := chart.Series{Color: col, Dashed: true}
		for _, st := range ss {
			if st.Latency.Count == 0 {
				continue
			}
			p50.X = append(p50.X, float64(st.N))
			p50.Y = append(p50.Y, float64(st.Latency.P50)/1e9)
			p99.X = append(p99.X, float64(st.N))
			p99.Y = append(p99.Y, float64(st.Latency.P99)/1e9)
		}
		g50, g99 := growth("N", p50.X, p50.Y), growth("N", p99.X, p99.Y)
		p50.Legend = fmt.Sprintf("%s p50 %s, p99 %s", t.Title, strings.Fields(g50)[0], g99)
		if !strings.HasPrefix(g50, "~") {
			p50.Legend = t.Title + " " + g50
		}
		pn.Series = append(pn.Series, p50, p99)
	}
	return pn
}

// opsGrow says whether a phase's operation count grows with N, comparing
// the smallest and largest sizes: a phase of a fixed number of operations
// has the same count at every size, one that loads N records has several
// times more at the top (even with batches of 100 on a small ladder: 1
// batch at N=10, 3 at N=300).
func opsGrow(all []*results.Step) bool {
	var lo, hi *results.Step
	for _, s := range all {
		if lo == nil || s.N < lo.N {
			lo = s
		}
		if hi == nil || s.N > hi.N {
			hi = s
		}
	}
	return hi.Ops >= 2*lo.Ops
}

// bySizeLabel says whether the steps are one phase at several values of
// the size label key.
func bySizeLabel(all []*results.Step, key string) bool {
	var ls []float64
	for _, s := range all {
		if l, ok := labelSize(s, key); ok {
			found := false
			for _, x := range ls {
				found = found || x == l
			}
			if !found {
				ls = append(ls, l)
			}
		}
	}
	return len(ls) >= 2
}

// labelScaling draws a phase's time per operation against a size label
// (the ledger's chain length L), at the largest data size each target
// reached.
func labelScaling(run *results.Run, w, phase string, sl results.SizeLabel, byTarget map[*results.Target][]*results.Step) *chart.Chart {
	c := &chart.Chart{
		ID: chart.SafeID(w, phase, sl.Key, "scaling"), Group: w, Kind: "scaling", Key: true,
		X:     chart.Axis{Label: sl.Key + " " + sl.Symbol, Unit: chart.Number, Log: true},
		Notes: []string{strings.ReplaceAll(scalingNote, "N", sl.Symbol) + " Each point is the mean time of one operation at that " + sl.Key + ", at the largest data size."},
	}
	var top int64
	pn := chart.Panel{Y: chart.Axis{Label: "time per operation", Unit: chart.Seconds, Log: true}}
	for _, t := range run.Targets {
		ss := byTarget[t]
		if len(ss) == 0 {
			continue
		}
		// The largest data size this target reached, where the lengths ran.
		n := ss[len(ss)-1].N
		for _, st := range ss {
			n = max(n, st.N)
		}
		top = max(top, n)
		col, dash := targetStyle(run, t)
		s := chart.Series{Color: col, Dashed: dash, Marks: true}
		var pts [][2]float64
		for _, st := range ss {
			if l, ok := labelSize(st, sl.Key); ok && st.N == n && st.Latency.Count > 0 {
				pts = append(pts, [2]float64{l, st.Latency.Mean / 1e9})
			}
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i][0] < pts[j][0] })
		for _, p := range pts {
			s.X, s.Y = append(s.X, p[0]), append(s.Y, p[1])
		}
		s.Legend = t.Title + " " + growth(sl.Symbol, s.X, s.Y)
		pn.Series = append(pn.Series, s)
	}
	c.Title = fmt.Sprintf("%s %s: time per operation vs %s (data size %s)", w, phase, sl.Key, Count(top))
	c.Panels = []chart.Panel{pn}
	return c
}

// footprint draws disk and memory against data size, each from one
// phase measured at every size: disk after the first (the load), memory
// after the last (after the reads, as the seed's RAM table).
func footprint(run *results.Run, w string, phases []string) []*chart.Chart {
	var ladder []string
	for _, ph := range phases {
		var all []*results.Step
		for _, t := range run.Targets {
			all = append(all, measured(t, w, ph)...)
		}
		if len(sizes(all)) >= 2 && !bySomeSizeLabel(all) {
			ladder = append(ladder, ph)
		}
	}
	if len(ladder) == 0 {
		return nil
	}
	build := func(id, title, phase, ylabel string, value func(*results.Step) float64, note string) *chart.Chart {
		c := &chart.Chart{
			ID: chart.SafeID(w, id, "scaling"), Group: w, Kind: "scaling", Key: true,
			Title: title,
			X:     chart.Axis{Label: "data size N", Unit: chart.Number, Log: true},
			Notes: []string{note, scalingNote},
		}
		pn := chart.Panel{Y: chart.Axis{Label: ylabel, Unit: chart.Bytes, Log: true}}
		for _, t := range run.Targets {
			ss := measured(t, w, phase)
			if len(ss) == 0 {
				continue
			}
			col, dash := targetStyle(run, t)
			s := chart.Series{Color: col, Dashed: dash, Marks: true}
			for _, st := range ss {
				if v := value(st); v > 0 {
					s.X, s.Y = append(s.X, float64(st.N)), append(s.Y, v)
				}
			}
			s.Legend = t.Title + " " + growth("N", s.X, s.Y)
			pn.Series = append(pn.Series, s)
		}
		c.Panels = []chart.Panel{pn}
		return c
	}
	first, last := ladder[0], ladder[len(ladder)-1]
	return []*chart.Chart{
		build("disk", fmt.Sprintf("%s: disk used vs data size", w), first, "disk used",
			func(s *results.Step) float64 { return float64(s.Footprint().DiskAllocated) },
			fmt.Sprintf("Blocks allocated to the data directory (what du reports) after the %s phase at each size; for a server started by storebench, its own data directory.", first)),
		build("memory", fmt.Sprintf("%s: memory vs data size", w), last, "memory",
			func(s *results.Step) float64 { return float64(Mem(s.Footprint().After)) },
			fmt.Sprintf("Resident memory of the target after the %s phase at each size: the engine's process for an embedded engine, the server's process tree (PSS) for a server started by storebench.", last)),
	}
}

// largest is a target's step of a phase at the largest size it reached.
func largest(t *results.Target, w, phase string) *results.Step {
	var best *results.Step
	for _, s := range measured(t, w, phase) {
		if best == nil || s.N > best.N {
			best = s
		}
	}
	return best
}

// percentiles draws HDR-style latency distributions at the largest size:
// latency against percentile, the percentile axis stretched so that 90%,
// 99%, 99.9% sit one decade apart, where the tail shows.
func percentiles(run *results.Run, w, phase string, intended bool) *chart.Chart {
	if bySizeLabelPhase(run, w, phase) {
		return nil
	}
	c := &chart.Chart{
		ID: chart.SafeID(w, phase, "percentiles"), Group: w, Kind: "percentiles", Key: true,
		X: chart.Axis{Label: "percentile", Unit: chart.Percentile, Log: true},
		Notes: []string{"Latency at each percentile of the phase's operations (HdrHistogram, 3 significant digits), at the largest data size each target reached. " +
			"The percentile axis is logarithmic in 1/(1-p): 90%, 99%, 99.9% are evenly spaced, so the tail is visible; each curve ends where its samples run out."},
	}
	what := "service time"
	if intended {
		c.ID = chart.SafeID(w, phase, "percentiles", "intended")
		what = "latency from intended start"
		c.Notes = append(c.Notes, "Measured from each operation's intended start in the open-loop schedule, so a stall counts for every operation queued behind it (coordinated omission corrected).")
	}
	pn := chart.Panel{Y: chart.Axis{Label: "latency", Unit: chart.Seconds, Log: true}}
	var top int64
	for _, t := range run.Targets {
		st := largest(t, w, phase)
		if st == nil {
			continue
		}
		enc, sum := st.Hist, st.Latency
		if intended {
			if st.Intended == nil {
				continue
			}
			enc, sum = st.HistIntended, *st.Intended
		}
		if enc == "" || sum.Count < minHistOps {
			continue
		}
		// Decode reads the standard encoding and the doubly encoded one of
		// older results.json files; anything else is said, not dropped.
		h, err := latency.Decode(enc)
		if err != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: histogram unreadable (%v).", t.Title, err))
			continue
		}
		if h.TotalCount() == 0 {
			continue
		}
		top = max(top, st.N)
		col, dash := targetStyle(run, t)
		s := chart.Series{Color: col, Dashed: dash}
		// 20 points per decade of 1/(1-p), up to the percentile the
		// sample count can resolve.
		total := float64(h.TotalCount())
		for k := 0; ; k++ {
			x := math.Pow(10, float64(k)/20)
			if x > total {
				break
			}
			q := 100 * (1 - 1/x)
			s.X = append(s.X, x)
			s.Y = append(s.Y, float64(h.ValueAtQuantile(q))/1e9)
		}
		s.Legend = fmt.Sprintf("%s: p99 %s, max %s", t.Title, Latency(sum.P99), Latency(sum.Max))
		if sizesDiffer(run, w, phase) {
			s.Legend += fmt.Sprintf(" (N=%s)", Count(st.N))
		}
		pn.Series = append(pn.Series, s)
	}
	if len(pn.Series) == 0 {
		return nil
	}
	c.Title = fmt.Sprintf("%s %s: %s distribution (data size %s)", w, phase, what, Count(top))
	c.Panels = []chart.Panel{pn}
	return c
}

// bySizeLabelPhase says whether a phase ran at several values of a
// workload's size label (bySomeSizeLabel).
func bySizeLabelPhase(run *results.Run, w, phase string) bool {
	var all []*results.Step
	for _, t := range run.Targets {
		all = append(all, measured(t, w, phase)...)
	}
	return bySomeSizeLabel(all)
}

// bySomeSizeLabel says whether the steps are one phase at several values
// of any registered size label.
func bySomeSizeLabel(all []*results.Step) bool {
	for _, sl := range results.SizeLabels() {
		if bySizeLabel(all, sl.Key) {
			return true
		}
	}
	return false
}

// sizesDiffer says whether targets reached different largest sizes in a
// phase (a slow target cut short), so legends must say which.
func sizesDiffer(run *results.Run, w, phase string) bool {
	var n int64 = -1
	for _, t := range run.Targets {
		if st := largest(t, w, phase); st != nil {
			if n >= 0 && st.N != n {
				return true
			}
			n = st.N
		}
	}
	return false
}

// The names of the per-tick p99 series, in charts and wherever else a
// per-second series is named.
const (
	ServiceP99Label  = "service time p99"
	IntendedP99Label = "latency from intended start p99"
)

// minTicks is the fewest time-series points worth a chart: a phase shorter
// than a few ticks has its whole story in the tables.
const minTicks = 3

// timeSeries draws throughput, p99, memory and CPU tick by tick for a
// phase at its largest size. The per-tick p99 is service time (from each
// operation's actual start); an open-loop phase also gets the p99 of the
// latency from the intended start, which counts the time operations
// queued behind a slow target: the two are named apart, never "latency"
// alone.
func timeSeries(run *results.Run, w, phase string) *chart.Chart {
	type tgt struct {
		t  *results.Target
		st *results.Step
	}
	var ts []tgt
	var top int64
	for _, t := range run.Targets {
		if st := largest(t, w, phase); st != nil && len(fullTicks(st.Series)) >= minTicks {
			ts = append(ts, tgt{t, st})
			top = max(top, st.N)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	c := &chart.Chart{
		ID: chart.SafeID(w, phase, "timeseries"), Group: w, Kind: "timeseries",
		Title: fmt.Sprintf("%s %s over time (data size %s)", w, phase, Count(top)),
		X:     chart.Axis{Label: "time into the phase", Unit: chart.Seconds},
		Notes: []string{"One point per tick (1 s); CPU 100% = one core busy. Memory (RSS) and CPU are the worker process's: the engine itself for an embedded engine, the client for a server.",
			"Service time p99: the 99th percentile of the time from each operation's actual start to its end, in that tick."},
	}
	for _, x := range ts {
		for _, ev := range x.st.Events {
			c.Markers = append(c.Markers, chart.Marker{X: ev.OffsetS, Label: ev.Action + " node " + strconv.Itoa(ev.Node)})
		}
	}
	if len(c.Markers) > 0 {
		c.Notes = append(c.Notes, "Red dashed lines: fault actions on cluster nodes (stop, kill, pause, resume, restart), at the time each began.")
	}
	for _, x := range ts {
		if x.st.Intended != nil {
			c.Notes = append(c.Notes, "Latency from intended start p99 (open loop): from the time each operation was scheduled to start at the target rate, so time spent queued behind a slow target counts (coordinated omission corrected).")
			break
		}
	}
	// A tick without a resource sample (RSS 0) has no memory or CPU
	// figure; it is left out of those panels rather than drawn as zero.
	panels := []struct {
		axis chart.Axis
		v    func(results.Tick) (float64, bool)
	}{
		{chart.Axis{Label: "ops/s", Unit: chart.PerSecond}, func(k results.Tick) (float64, bool) { return k.OpsPerS, true }},
		{chart.Axis{Label: ServiceP99Label, Unit: chart.Seconds, Log: true}, func(k results.Tick) (float64, bool) { return float64(k.P99) / 1e9, k.Ops > 0 }},
		{chart.Axis{Label: IntendedP99Label, Unit: chart.Seconds, Log: true}, func(k results.Tick) (float64, bool) {
			return float64(k.IntendedP99) / 1e9, k.Ops > 0 && k.IntendedP99 > 0
		}},
		{chart.Axis{Label: "RSS", Unit: chart.Bytes}, func(k results.Tick) (float64, bool) { return float64(k.RSSBytes), k.RSSBytes > 0 }},
		{chart.Axis{Label: "CPU", Unit: chart.Percent}, func(k results.Tick) (float64, bool) { return k.CPU, k.RSSBytes > 0 }},
	}
	for _, p := range panels {
		pn := chart.Panel{Y: p.axis}
		any := false
		for _, x := range ts {
			col, dash := targetStyle(run, x.t)
			s := chart.Series{Legend: x.t.Title, Color: col, Dashed: dash}
			for _, k := range fullTicks(x.st.Series) {
				if v, ok := p.v(k); ok {
					any = any || v > 0
					s.X, s.Y = append(s.X, k.T), append(s.Y, v)
				}
			}
			pn.Series = append(pn.Series, s)
		}
		if any {
			c.Panels = append(c.Panels, pn)
		}
	}
	return c
}

// fullTicks drops a last tick that covers a sliver of time (the phase
// ended just after a tick): its rate is noise from a few milliseconds.
func fullTicks(ts []results.Tick) []results.Tick {
	if n := len(ts); n >= 2 {
		full := ts[0].T // the first tick covers one whole interval
		if ts[n-1].T-ts[n-2].T < full/4 {
			return ts[:n-1]
		}
	}
	return ts
}

// withNA adds to the legend of each chart of one phase the targets that
// cannot run it, "n/a" with the reason: a missing line is explained, not
// mistaken for a target that was forgotten or failed.
func withNA(run *results.Run, w, phase string, cs ...*chart.Chart) []*chart.Chart {
	for _, c := range cs {
		if c == nil || len(c.Panels) == 0 {
			continue
		}
		for _, t := range run.Targets {
			if len(measured(t, w, phase)) > 0 {
				continue
			}
			if why := t.NotApplicable(w, phase, -1); why != "" {
				col, dash := targetStyle(run, t)
				// No points: a legend entry only.
				c.Panels[0].Series = append(c.Panels[0].Series, chart.Series{Color: col, Dashed: dash, Legend: t.Title + ": n/a (" + why + ")"})
			}
		}
	}
	return cs
}
