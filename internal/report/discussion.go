package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
)

// The discussion closes the report: what a study's authors write by eye
// after their tables, built here from what was measured alone. For each
// workload: what limited each target at each concurrency (Classify, per
// step, sweep levels included, with the figures that show it and the
// errors its workload counted); how throughput and p99 moved from one
// concurrency level to the next (the concurrency sweeps, each level
// against the phase's own step); and which target to pick for each phase,
// with the runner-up's cost as a ratio of the same run. Nothing here knows
// a workload: phases, figures and error counts come from the steps'
// labels and the metrics each workload registered (package section).

// Thresholds of the verdicts on a change of concurrency.
const (
	// A throughput ratio within this of 1 "held"; beyond, it gained or
	// lost.
	heldBand = 0.05
)

// discussion writes the closing discussion of run.
func discussion(b *strings.Builder, run *results.Run) {
	ws := discussedWorkloads(run)
	if len(ws) == 0 {
		return
	}
	b.WriteString("## Discussion\n\n")
	fmt.Fprintf(b, "Built from this run's figures alone: each step's bottleneck as classified above (%d cores here, shared by the load generator and any server), the changes between concurrency levels as ratios of figures measured in this run, and for each phase the target with the best figure and what the runner-up costs against it.\n\n", run.Host.LogicalCPUs)
	for _, w := range ws {
		fmt.Fprintf(b, "### %s\n\n", w)
		saturation(b, run, w)
		reaction(b, run, w)
		pick(b, run, w)
	}
}

// discussedWorkloads are the workloads with a measured step, in the order
// they ran.
func discussedWorkloads(run *results.Run) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if !seen[s.Workload] && s.Error == "" && s.Ops > 0 {
				seen[s.Workload] = true
				out = append(out, s.Workload)
			}
		}
	}
	return out
}

// levelOf is the concurrency a step ran at: its sweep level, else its
// workload's own concurrency, else the study's.
func levelOf(run *results.Run, s *results.Step) int64 {
	s.Name()
	if v, ok := s.Labels[results.LConcurrency]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	if c, ok := run.WorkloadConcurrency[s.Workload]; ok {
		return int64(c)
	}
	return int64(run.Concurrency)
}

func throughput(s *results.Step) float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Seconds
}

// rateText prints operations per second (a workload's unit names one
// operation in words, too long for a rate).
func rateText(v float64, _ *results.Step) string {
	if v < 10 {
		return fmt.Sprintf("%.2f/s", v)
	}
	return fmt.Sprintf("%.0f/s", v)
}

// discussedSteps are a target's steps of workload w worth discussing: the
// phases' own steps and their concurrency levels at the largest size each
// phase reached, not rate-search trials; in the order they ran.
func discussedSteps(t *results.Target, w string) []*results.Step {
	largest := map[string]int64{}
	for _, s := range t.Steps {
		if s.Workload == w && s.N > largest[s.Phase] {
			largest[s.Phase] = s.N
		}
	}
	var out []*results.Step
	for _, s := range t.Steps {
		s.Name()
		if s.Workload != w || s.N != largest[s.Phase] || s.Labels[results.LTrial] != "" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// counted are the figures of a step its workload registered as counts of
// things that went wrong (a count, lower is better: failed requests,
// retried deadlocks, reconnects), the non-zero ones, the requests the
// client retried after a server timeout (Retried), and the traffic of
// byte counts as a rate over the step.
func counted(s *results.Step) (errs, traffic []string) {
	if s.Retried > 0 {
		errs = append(errs, fmt.Sprintf("%s requests retried after a server timeout", number(float64(s.Retried))))
	}
	for _, m := range section.Metrics(s.Workload, s.Phase) {
		v, ok := s.Metrics[m.Name]
		if !ok {
			continue
		}
		switch {
		case m.Agg == section.Sum && m.Better == section.Lower && m.Unit == "" && v > 0:
			errs = append(errs, fmt.Sprintf("%s %s (%.2g%% of operations)", number(v), m.What, 100*v/math.Max(float64(s.Ops), 1)))
		case m.Agg == section.Sum && m.Unit == "B" && v > 0 && s.Seconds > 0:
			traffic = append(traffic, fmt.Sprintf("%s/s %s", Bytes(int64(v/s.Seconds)), m.What))
		}
	}
	return errs, traffic
}

func number(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return fmt.Sprintf("%.3g", v)
}

// cpuSides is the CPU of the server and of the client (the worker: the
// load generator) over a step; ok false for an embedded engine.
func cpuSides(s *results.Step) (server, client float64, ok bool) {
	if s.ServerResources == nil {
		return 0, 0, false
	}
	return windowOf(s.ServerResources).cpu, windowOf(&s.Resources).cpu, true
}

// saturation writes, per target and step, what limited it.
func saturation(b *strings.Builder, run *results.Run, w string) {
	tab := Table{Head: []string{"target", "phase", "concurrency", "throughput", "p99", "limited by", "errors, traffic"}, Left: 2}
	var notes []string
	var na []string
	for _, t := range run.Targets {
		ss := discussedSteps(t, w)
		if len(ss) == 0 {
			if why := t.NotApplicable(w, "", -1); why != "" {
				na = append(na, fmt.Sprintf("%s (%s)", t.Title, why))
			}
			continue
		}
		count := map[string]int{}
		clientHeavier, withServer, told := 0, 0, 0
		for _, s := range ss {
			lv := strconv.FormatInt(levelOf(run, s), 10)
			if s.Error != "" {
				tab.Rows = append(tab.Rows, []string{t.Title, s.Phase, lv, "failed", "", cell(s.Error), ""})
				continue
			}
			bn := Classify(run, s)
			text := bn.Text
			if srv, cli, ok := cpuSides(s); ok && bn.Resource != "short" {
				withServer++
				if cli > srv {
					clientHeavier++
					if bn.Resource == "cpu" || bn.Resource == "core" {
						text += fmt.Sprintf("; the load generator took more CPU than the server (%.0f%% against %.0f%%)", cli, srv)
					}
				}
			}
			if bn.Resource != "short" {
				count[bn.Resource]++
				told++
			}
			errs, traffic := counted(s)
			tab.Rows = append(tab.Rows, []string{t.Title, s.Phase, lv, rateText(throughput(s), s), Latency(s.Latency.P99),
				cell(text), cell(strings.Join(append(errs, traffic...), "; "))})
		}
		if told > 0 {
			var res []string
			for r := range count {
				res = append(res, r)
			}
			sort.Slice(res, func(i, j int) bool {
				return count[res[i]] > count[res[j]] || count[res[i]] == count[res[j]] && res[i] < res[j]
			})
			parts := make([]string, len(res))
			for i, r := range res {
				parts[i] = fmt.Sprintf("%s in %d", resourceWords[r], count[r])
			}
			note := fmt.Sprintf("%s: %s of %d steps long enough to tell", t.Title, strings.Join(parts, ", "), told)
			if withServer > 0 {
				note += fmt.Sprintf("; its load generator took more CPU than the server in %d of %d", clientHeavier, withServer)
			}
			notes = append(notes, note)
		}
	}
	if len(tab.Rows) == 0 {
		return
	}
	b.WriteString("What limited each target, step by step (the phase's own step and each concurrency level at the largest size; throughput in the workload's operations per second):\n\n")
	tab.Write(b)
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, ". ") + ".\n\n")
	}
	if len(na) > 0 {
		fmt.Fprintf(b, "Not applicable: %s.\n\n", strings.Join(na, "; "))
	}
}

// ladderOf is one target's steps of a concurrency sweep with the phase's
// own step, by level (a sweep level equal to the own step's replaces it).
func ladderOf(run *results.Run, t *results.Target, g *sweepGroup) []*results.Step {
	by := map[int64]*results.Step{}
	if own := t.FindLabels(g.base); own != nil && own.Error == "" && own.Ops > 0 {
		by[levelOf(run, own)] = own
	}
	for _, s := range g.steps[t] {
		if s.Error == "" && s.Ops > 0 {
			by[levelOf(run, s)] = s
		}
	}
	levels := make([]int64, 0, len(by))
	for l := range by {
		levels = append(levels, l)
	}
	sort.Slice(levels, func(i, j int) bool { return levels[i] < levels[j] })
	out := make([]*results.Step, len(levels))
	for i, l := range levels {
		out[i] = by[l]
	}
	return out
}

func ratioText(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	if r > 0 && r < 0.005 {
		// Two decimals would read ×0.00: keep two significant digits.
		return "×" + strconv.FormatFloat(r, 'f', 1-int(math.Floor(math.Log10(r))), 64)
	}
	return fmt.Sprintf("×%.2f", r)
}

func verdict(r float64) string {
	switch {
	case r >= 1+heldBand:
		return "gained"
	case r <= 1-heldBand:
		return "lost"
	}
	return "held"
}

// reaction writes how each target's throughput and p99 moved across the
// levels of each concurrency sweep of w.
func reaction(b *strings.Builder, run *results.Run, w string) {
	groups := concurrencySweeps(run, w)
	if len(groups) == 0 {
		return
	}
	tab := Table{Head: []string{"phase", "target", "verdict", "concurrency", "throughput", "change", "p99", "change"}, Left: 3}
	var sentences []string
	for _, g := range groups {
		type moved struct {
			title string
			r, p  float64
		}
		var ms []moved
		var from, to int64
		for _, t := range run.Targets {
			ss := ladderOf(run, t, g)
			if len(ss) < 2 {
				continue
			}
			first, last := ss[0], ss[len(ss)-1]
			var lv, thr, p99 []string
			for _, s := range ss {
				lv = append(lv, strconv.FormatInt(levelOf(run, s), 10))
				thr = append(thr, rateText(throughput(s), s))
				p99 = append(p99, Latency(s.Latency.P99))
			}
			r := throughput(last) / throughput(first)
			p := float64(last.Latency.P99) / float64(first.Latency.P99)
			tab.Rows = append(tab.Rows, []string{g.title(), t.Title, verdict(r), strings.Join(lv, " → "), strings.Join(thr, " → "), ratioText(r),
				strings.Join(p99, " → "), ratioText(p)})
			ms = append(ms, moved{t.Title, r, p})
			from, to = levelOf(run, first), levelOf(run, last)
		}
		if len(ms) == 0 {
			continue
		}
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].r > ms[j].r })
		parts := make([]string, len(ms))
		for i, m := range ms {
			parts[i] = fmt.Sprintf("%s %s %s (p99 %s)", m.title, verdict(m.r), ratioText(m.r), ratioText(m.p))
		}
		s := fmt.Sprintf("%s, from concurrency %d to %d: %s", g.title(), from, to, strings.Join(parts, ", "))
		if len(ms) > 1 {
			s += fmt.Sprintf("; %s coped best with more concurrency, %s worst", ms[0].title, ms[len(ms)-1].title)
		}
		sentences = append(sentences, s)
	}
	if len(tab.Rows) == 0 {
		return
	}
	fmt.Fprintf(b, "How throughput and p99 reacted to more concurrency (the phase's own step, then each sweep level; a change within %.0f%% held):\n\n", heldBand*100)
	tab.Write(b)
	b.WriteString(strings.Join(sentences, ". ") + ".\n\n")
}

// pick writes, for each phase of w that has a throughput figure at each
// level (its headline first), the best target and the runner-up's cost.
func pick(b *strings.Builder, run *results.Run, w string) {
	// The phases: the headline's first, then every phase that was swept,
	// then the others with operations, in the order they ran.
	var phases []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			phases = append(phases, p)
		}
	}
	headline := ""
	what := map[string]string{}
	if d, ok := section.Lookup(w); ok && d.Headline != nil && d.Headline.Metric == "throughput" {
		f := parseFigure(d.Headline.Figure, d.Headline.Metric)
		headline = f.phase
		what[f.phase] = d.Headline.What
		add(f.phase)
	}
	for _, g := range concurrencySweeps(run, w) {
		add(g.base[results.LPhase])
	}
	tab := Table{Head: []string{"phase", "concurrency", "best", "runner-up", "runner-up / best", "others"}, Left: 4}
	var sentences []string
	for _, ph := range phases {
		// By level: each target's step of the phase at its largest size.
		byLevel := map[int64][]pickCand{}
		for _, t := range run.Targets {
			for _, s := range discussedSteps(t, w) {
				if s.Phase != ph || s.Error != "" || s.Partial || s.Ops == 0 {
					continue
				}
				lv := levelOf(run, s)
				byLevel[lv] = append(byLevel[lv], pickCand{t: t, s: s, v: throughput(s), p99: s.Latency.P99})
			}
		}
		var levels []int64
		for l := range byLevel {
			levels = append(levels, l)
		}
		sort.Slice(levels, func(i, j int) bool { return levels[i] < levels[j] })
		for _, l := range levels {
			cs := byLevel[l]
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].v > cs[j].v })
			tab.Rows = append(tab.Rows, pickRow(ph, l, cs))
		}
		if len(levels) == 0 {
			continue
		}
		s := pickSentence(ph, what[ph], ph == headline, levels, func(l int64) (string, string, float64, bool) {
			cs := byLevel[l]
			if len(cs) < 2 {
				return cs[0].t.Title, "", 0, false
			}
			return cs[0].t.Title, cs[1].t.Title, cs[1].v / cs[0].v, true
		})
		sentences = append(sentences, s)
	}
	if len(tab.Rows) == 0 {
		return
	}
	b.WriteString("Which to pick: for each phase and concurrency, the target with the highest throughput, and the runner-up's throughput as a ratio of it (same run, same machine):\n\n")
	tab.Write(b)
	b.WriteString(strings.Join(sentences, " ") + "\n\n")
}

// pickCand is one target's step of a phase at a concurrency level, with
// its throughput and p99, as pick ranks them.
type pickCand struct {
	t   *results.Target
	s   *results.Step
	v   float64
	p99 int64
}

// pickRow is the table row of phase ph at level l, cs sorted best first:
// the best target's figures, the runner-up's and its ratio to the best,
// and the others' ratios, so the reader sees the margin and not only the
// winner; with one candidate the runner-up columns read "–".
func pickRow(ph string, l int64, cs []pickCand) []string {
	best := cs[0]
	row := []string{ph, strconv.FormatInt(l, 10), fmt.Sprintf("%s: %s, p99 %s", best.t.Title, rateText(best.v, best.s), Latency(best.p99)), "–", "–", ""}
	if len(cs) > 1 {
		ru := cs[1]
		row[3] = fmt.Sprintf("%s: %s, p99 %s", ru.t.Title, rateText(ru.v, ru.s), Latency(ru.p99))
		row[4] = ratioText(ru.v / best.v)
		var others []string
		for _, o := range cs[2:] {
			others = append(others, fmt.Sprintf("%s %s", o.t.Title, ratioText(o.v/best.v)))
		}
		row[5] = strings.Join(others, ", ")
	}
	return row
}

// pickSentence says which target leads phase ph at each level, naming a
// change of leader between levels.
func pickSentence(ph, what string, headline bool, levels []int64, at func(int64) (best, runnerUp string, ratio float64, ok bool)) string {
	name := ph
	if what != "" {
		name = fmt.Sprintf("%s (%s", ph, what)
		if headline {
			name += ", the workload's headline figure"
		}
		name += ")"
	}
	var parts []string
	prev := ""
	for _, l := range levels {
		best, ru, r, ok := at(l)
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("at %d only %s ran", l, best))
		case best == prev:
			parts = append(parts, fmt.Sprintf("at %d still %s (%s at %s of it)", l, best, ru, ratioText(r)))
		case prev == "":
			parts = append(parts, fmt.Sprintf("at %d %s leads (%s reaches %s of it)", l, best, ru, ratioText(r)))
		default:
			parts = append(parts, fmt.Sprintf("at %d %s takes the lead (%s at %s of it)", l, best, ru, ratioText(r)))
		}
		prev = best
	}
	return fmt.Sprintf("For %s: %s.", name, strings.Join(parts, "; "))
}
