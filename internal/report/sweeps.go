package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"storebench/internal/chart"
	"storebench/internal/results"
)

// The generic sweeps (package sweep) any workload gets: a concurrency
// sweep, whose steps are labelled concurrency=…, and a search for the
// highest sustainable rate, whose trials are labelled rate=… trial=… and
// whose verdicts and found rate are in each target's rate_searches. Both
// are drawn from labels and results alone, for every workload alike.

// swept says whether a step is a sweep's: a concurrency level or a rate
// trial. The phase's own step (the study's figure) is not.
func swept(s *results.Step) bool {
	s.Name() // labels derived for steps of older files
	_, c := s.Labels[results.LConcurrency]
	_, r := s.Labels[results.LTrial]
	return c || r
}

// labelSize is the value of a step's size label key (the ledger's chain
// length).
func labelSize(s *results.Step, key string) (float64, bool) {
	s.Name()
	v, ok := s.Labels[key]
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// sweepGroup is the steps of one concurrency sweep: one phase at one
// size with the same other labels, across targets and levels.
type sweepGroup struct {
	key    string // the labels' name without concurrency
	base   results.Labels
	steps  map[*results.Target][]*results.Step
	levels []int64
}

// concurrencySweeps lists the concurrency sweeps of workload w in the
// order they ran.
func concurrencySweeps(run *results.Run, w string) []*sweepGroup {
	var out []*sweepGroup
	by := map[string]*sweepGroup{}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Workload != w || !swept(s) {
				continue
			}
			if _, ok := s.Labels[results.LConcurrency]; !ok || s.Labels[results.LTrial] != "" {
				continue
			}
			base := results.Labels{}
			for k, v := range s.Labels {
				if k != results.LConcurrency {
					base[k] = v
				}
			}
			key := base.Name()
			g := by[key]
			if g == nil {
				g = &sweepGroup{key: key, base: base, steps: map[*results.Target][]*results.Step{}}
				by[key] = g
				out = append(out, g)
			}
			g.steps[t] = append(g.steps[t], s)
			lv := s.Labels.Int(results.LConcurrency)
			found := false
			for _, x := range g.levels {
				found = found || x == lv
			}
			if !found {
				g.levels = append(g.levels, lv)
			}
		}
	}
	for _, g := range out {
		sort.Slice(g.levels, func(i, j int) bool { return g.levels[i] < g.levels[j] })
		for _, ss := range g.steps {
			sort.SliceStable(ss, func(i, j int) bool {
				return ss[i].Labels.Int(results.LConcurrency) < ss[j].Labels.Int(results.LConcurrency)
			})
		}
	}
	return out
}

func (g *sweepGroup) title() string {
	s := fmt.Sprintf("%s %s N=%s", g.base[results.LWorkload], g.base[results.LPhase], Count(g.base.Int(results.LN)))
	if x := g.base.Extra(); x != "" {
		s += " (" + x + ")"
	}
	return s
}

// rateSearches lists the searches of workload w across targets, grouped
// by the searched step's labels, in the order they ran.
func rateSearches(run *results.Run, w string) (keys []string, by map[string]map[*results.Target]*results.RateSearch) {
	by = map[string]map[*results.Target]*results.RateSearch{}
	for _, t := range run.Targets {
		for i := range t.Searches {
			rs := &t.Searches[i]
			if rs.Workload != w {
				continue
			}
			k := rs.Labels.Name()
			if by[k] == nil {
				by[k] = map[*results.Target]*results.RateSearch{}
				keys = append(keys, k)
			}
			by[k][t] = rs
		}
	}
	return keys, by
}

func searchTitle(rs *results.RateSearch) string {
	s := fmt.Sprintf("%s %s N=%s", rs.Workload, rs.Phase, Count(rs.N))
	if x := rs.Labels.Extra(); x != "" {
		s += " (" + x + ")"
	}
	return s
}

func perSecond(v float64) string { return fmt.Sprintf("%.0f/s", v) }

// sweepTables writes the tables of workload w's sweeps.
func sweepTables(b *strings.Builder, run *results.Run, w string) {
	for _, g := range concurrencySweeps(run, w) {
		fmt.Fprintf(b, "### Concurrency sweep: %s\n\n", g.title())
		b.WriteString("Each level is a step of its own, labelled concurrency=…, after the phase's own step. Latency is the service time; in open loop also from the intended start.\n\n")
		tab := Table{Head: []string{"target", "concurrency", "throughput", "p50", "p99", "p99 from intended start"}}
		for _, t := range run.Targets {
			ss := g.steps[t]
			if len(ss) == 0 {
				if why := t.NotApplicable(w, g.base[results.LPhase], g.base.Int(results.LN)); why != "" {
					tab.Rows = append(tab.Rows, []string{t.Title, "all", "n/a: " + cell(why), "", "", ""})
				}
				continue
			}
			for _, s := range ss {
				thr := 0.0
				if s.Seconds > 0 {
					thr = float64(s.Ops) / s.Seconds
				}
				intended := "–"
				if s.Intended != nil {
					intended = Latency(s.Intended.P99)
				}
				tab.Rows = append(tab.Rows, []string{t.Title, s.Labels[results.LConcurrency], perSecond(thr),
					Latency(s.Latency.P50), Latency(s.Latency.P99), intended})
			}
		}
		tab.Write(b)
	}
	keys, by := rateSearches(run, w)
	for _, k := range keys {
		var first *results.RateSearch
		for _, t := range run.Targets {
			if rs := by[k][t]; rs != nil && first == nil {
				first = rs
			}
		}
		fmt.Fprintf(b, "### Sustainable rate: %s\n\n", searchTitle(first))
		fmt.Fprintf(b, "The open-loop rate stepped up, then bisected; a rate that fails is tried once more, and its second trial decides (one stall on a shared machine must not end the search). A rate is sustained when at least %.0f%% of it is achieved, the p99 latency from the intended start stays under %s, and late operations do not keep growing from tick to tick.\n\n",
			first.MinAchieved*100, time.Duration(first.SLONs))
		tab := Table{Head: []string{"target", "trial", "offered", "achieved", "p99 from intended start", "late", "verdict"}}
		sum := Table{Head: []string{"target", "sustainable rate", "trials", "search"}}
		for _, t := range run.Targets {
			rs := by[k][t]
			if rs == nil {
				if why := t.NotApplicable(w, first.Phase, first.N); why != "" {
					sum.Rows = append(sum.Rows, []string{t.Title, "n/a: " + cell(why), "", ""})
				}
				continue
			}
			for i, tr := range rs.Trials {
				verdict := "sustained"
				if !tr.Sustained {
					verdict = "not sustained: " + tr.Why
				}
				tab.Rows = append(tab.Rows, []string{t.Title, strconv.Itoa(i + 1), perSecond(tr.Offered), perSecond(tr.Achieved),
					Latency(tr.P99IntendedNs), strconv.FormatInt(tr.Late, 10), cell(verdict)})
			}
			found := "none held"
			if rs.Sustainable > 0 {
				found = perSecond(rs.Sustainable)
			}
			status := "converged"
			switch {
			case !rs.Done:
				status = "cut short"
			case !rs.Converged && rs.FailedAbove > 0:
				status = fmt.Sprintf("trials spent: between %s and %s", perSecond(rs.Sustainable), perSecond(rs.FailedAbove))
			case !rs.Converged:
				status = "trials spent: still rising"
			}
			sum.Rows = append(sum.Rows, []string{t.Title, found, strconv.Itoa(len(rs.Trials)), status})
		}
		tab.Write(b)
		sum.Write(b)
	}
}

// sweepCharts draws workload w's sweeps: throughput and p99 against
// concurrency; achieved against offered rate, and p99 from intended
// start against offered rate.
func sweepCharts(run *results.Run, w string) []*chart.Chart {
	var out []*chart.Chart
	for _, g := range concurrencySweeps(run, w) {
		out = append(out, concurrencyChart(run, w, g))
	}
	keys, by := rateSearches(run, w)
	for _, k := range keys {
		curve, lat := rateCharts(run, w, k, by[k])
		out = append(out, curve, lat)
	}
	return out
}

// concurrencyChart draws one concurrency sweep: throughput and p99
// against concurrency, each target a line (or its n/a in the legend).
func concurrencyChart(run *results.Run, w string, g *sweepGroup) *chart.Chart {
	c := &chart.Chart{
		ID: chart.SafeID(g.key, "concurrency", "sweep"), Group: w, Kind: "sweep", Key: true,
		Title: "Concurrency sweep: " + g.title(),
		X:     chart.Axis{Label: "concurrency", Unit: chart.Number, Log: true},
		Notes: []string{"Each point is one step at that concurrency. p99 is from the intended start in open loop (what a client queueing behind the target sees), else the service time."},
	}
	thr := chart.Panel{Y: chart.Axis{Label: "throughput", Unit: chart.PerSecond, Log: true}}
	p99 := chart.Panel{Y: chart.Axis{Label: "p99", Unit: chart.Seconds, Log: true}}
	for _, t := range run.Targets {
		col, dash := targetStyle(run, t)
		a := chart.Series{Legend: t.Title, Color: col, Dashed: dash, Marks: true}
		l := chart.Series{Color: col, Dashed: dash, Marks: true}
		for _, s := range g.steps[t] {
			if s.Partial || s.Error != "" || s.Seconds <= 0 {
				continue
			}
			lv := float64(s.Labels.Int(results.LConcurrency))
			a.X, a.Y = append(a.X, lv), append(a.Y, float64(s.Ops)/s.Seconds)
			p := s.Latency.P99
			if s.Intended != nil {
				p = s.Intended.P99
			}
			l.X, l.Y = append(l.X, lv), append(l.Y, float64(p)/1e9)
		}
		if len(a.X) == 0 {
			if why := t.NotApplicable(w, g.base[results.LPhase], -1); why != "" {
				thr.Series = append(thr.Series, chart.Series{Color: col, Dashed: dash, Legend: t.Title + ": n/a (" + why + ")"})
			}
			continue
		}
		thr.Series = append(thr.Series, a)
		p99.Series = append(p99.Series, l)
	}
	c.Panels = []chart.Panel{thr, p99}
	return c
}

// rateCharts draws one step's rate searches (by target): achieved
// against offered rate (curve), and p99 from intended start against
// offered rate (lat).
func rateCharts(run *results.Run, w, k string, by map[*results.Target]*results.RateSearch) (curve, lat *chart.Chart) {
	var title string
	for _, t := range run.Targets {
		if rs := by[t]; rs != nil && title == "" {
			title = searchTitle(rs)
		}
	}
	curve = &chart.Chart{
		ID: chart.SafeID(k, "rate", "achieved"), Group: w, Kind: "sweep", Key: true,
		Title: "Offered vs achieved rate: " + title,
		X:     chart.Axis{Label: "offered rate", Unit: chart.PerSecond, Log: true},
		Notes: []string{"Each point is one trial of the search; on the dashed diagonal every offered operation was done. The legend gives the sustainable rate found."},
	}
	ach := chart.Panel{Y: chart.Axis{Label: "achieved rate", Unit: chart.PerSecond, Log: true}}
	lat = &chart.Chart{
		ID: chart.SafeID(k, "rate", "p99"), Group: w, Kind: "sweep", Key: true,
		Title: "p99 from intended start vs offered rate: " + title,
		X:     chart.Axis{Label: "offered rate", Unit: chart.PerSecond, Log: true},
		Notes: []string{"Latency from each operation's intended start includes the time it queued behind a target that fell behind; above the SLO a rate is not sustained."},
	}
	p99 := chart.Panel{Y: chart.Axis{Label: "p99 from intended start", Unit: chart.Seconds, Log: true}}
	var lo, hi float64
	var slo int64
	for _, t := range run.Targets {
		rs := by[t]
		if rs == nil {
			continue
		}
		slo = rs.SLONs
		a, l := rateSeries(run, t, rs)
		for _, x := range a.X {
			if lo == 0 || x < lo {
				lo = x
			}
			hi = max(hi, x)
		}
		ach.Series = append(ach.Series, a)
		p99.Series = append(p99.Series, l)
	}
	if hi > lo && lo > 0 {
		ref := chart.PaletteSize() - 1
		ach.Series = append(ach.Series, chart.Series{Legend: "achieved = offered", Color: ref, Dashed: true, X: []float64{lo, hi}, Y: []float64{lo, hi}})
		if slo > 0 {
			p99.Series = append(p99.Series, chart.Series{Legend: "SLO " + time.Duration(slo).String(), Color: ref, Dashed: true, X: []float64{lo, hi}, Y: []float64{float64(slo) / 1e9, float64(slo) / 1e9}})
		}
	}
	curve.Panels = []chart.Panel{ach}
	lat.Panels = []chart.Panel{p99}
	return curve, lat
}

// rateSeries is target t's search as two lines over the offered rates
// of its trials: the rate achieved (its legend the sustainable rate
// found), and p99 from intended start.
func rateSeries(run *results.Run, t *results.Target, rs *results.RateSearch) (achieved, p99 chart.Series) {
	trials := append([]results.RateTrial(nil), rs.Trials...)
	sort.Slice(trials, func(i, j int) bool { return trials[i].Offered < trials[j].Offered })
	col, dash := targetStyle(run, t)
	found := "none held"
	if rs.Sustainable > 0 {
		found = "sustains " + perSecond(rs.Sustainable)
	}
	if !rs.Done {
		found += ", search cut short"
	}
	a := chart.Series{Legend: t.Title + " (" + found + ")", Color: col, Dashed: dash, Marks: true}
	l := chart.Series{Legend: t.Title, Color: col, Dashed: dash, Marks: true}
	for _, tr := range trials {
		a.X, a.Y = append(a.X, tr.Offered), append(a.Y, tr.Achieved)
		l.X, l.Y = append(l.X, tr.Offered), append(l.Y, float64(tr.P99IntendedNs)/1e9)
	}
	return a, l
}
