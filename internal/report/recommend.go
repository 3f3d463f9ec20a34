package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/study"
)

// Verdict is one target judged against the study's constraints.
type Verdict struct {
	Target *results.Target
	// Meets is true when the target meets every constraint.
	Meets bool
	// Broken is the first constraint the target breaks, with the measured
	// figure ("p99 of ledger.select 3.2 ms > 2 ms").
	Broken string
	// Score is the ranking figure (NaN when not measured) and ScoreText
	// its printed form.
	Score     float64
	ScoreText string
	// Peak memory and disk over the run, for the ranking table.
	PeakMem, PeakDisk int64
}

// Recommendation is the opening judgement of a report.
type Recommendation struct {
	// Basis says what the ranking is by and whether constraints applied.
	Basis string
	// Ranked are the targets that meet the constraints, best first;
	// Rejected those that do not (or were not measured), in study order.
	Ranked, Rejected []Verdict
	// Workload is the workload ranked on, when the report ranks each of
	// a multi-workload study's workloads on its own headline; NA then
	// holds the targets that cannot run it, with the reason.
	Workload string
	NA       []Verdict
}

// figure is a resolved "workload.phase[.OP]:metric".
type figure struct {
	workload, phase, op, metric string
	// sel selects steps by their labels (a sweep's level,
	// "[concurrency=8]"); without it the figure reads the phase's own
	// steps, not its sweep's.
	sel results.Labels
}

func parseFigure(fig, metric string) figure {
	base, sel := study.SplitSelector(fig)
	parts := strings.SplitN(base, ".", 3)
	f := figure{workload: parts[0], metric: metric, sel: sel}
	if len(parts) > 1 {
		f.phase = parts[1]
	}
	if len(parts) > 2 {
		f.op = parts[2]
	}
	return f
}

func (f figure) name() string {
	s := f.workload + "." + f.phase
	if f.op != "" {
		s += "." + f.op
	}
	if len(f.sel) > 0 {
		var parts []string
		for _, k := range f.sel.Keys() {
			parts = append(parts, k+"="+f.sel[k])
		}
		s += "[" + strings.Join(parts, ",") + "]"
	}
	return s
}

// reads says whether the figure reads step s: the steps with its labels,
// or without a selector the phase's own steps.
func (f figure) reads(s *results.Step) bool {
	if len(f.sel) > 0 {
		s.Name() // labels derived for steps of older files
		return s.Labels.Match(f.sel)
	}
	return !swept(s)
}

// higherIsBetter reports the direction of a metric.
func (f figure) higherIsBetter() bool { return f.metric == "throughput" }

// largestN is the largest size at which any target measured the phase:
// figures are compared there, and a target that stopped short of it has
// no figure.
func largestN(run *results.Run, f figure) int64 {
	var n int64 = -1
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Workload == f.workload && s.Phase == f.phase && s.N > n && f.reads(s) {
				n = s.N
			}
		}
	}
	return n
}

// measure returns the figure on one target at size n, and whether the
// target has it. Phases with several steps at one size (the ledger's
// chains of several lengths) are combined: seconds add up, throughput is
// total operations over total time, latency percentiles take the worst.
// Open-loop phases are judged by latency from the intended start time,
// which is what a client queueing behind a stall sees.
func (f figure) measure(t *results.Target, n int64) (float64, string, bool) {
	var secs float64
	var ops int64
	var worst int64 = -1
	intended := false
	found := false
	for _, s := range t.Steps {
		// A sweep's steps (concurrency levels, rate trials) are not the
		// phase's figure: the phase's own step is.
		if s.Workload != f.workload || s.Phase != f.phase || s.N != n || s.Error != "" || s.Partial || !f.reads(s) {
			continue
		}
		found = true
		secs += s.Seconds
		ops += s.Ops
		sum := s.Latency
		if f.op != "" {
			var ok bool
			if sum, ok = s.ByOp[f.op]; !ok {
				return 0, "", false
			}
		} else if s.Intended != nil {
			sum, intended = *s.Intended, true
		}
		var v int64
		switch f.metric {
		case "p50":
			v = sum.P50
		case "p99":
			v = sum.P99
		case "max":
			v = sum.Max
		}
		if sum.Count == 0 && f.metric != "seconds" && f.metric != "throughput" {
			return 0, "", false
		}
		if v > worst {
			worst = v
		}
	}
	if !found {
		return 0, "", false
	}
	switch f.metric {
	case "seconds":
		return secs, Seconds(secs), true
	case "throughput":
		if secs <= 0 {
			return 0, "", false
		}
		r := float64(ops) / secs
		return r, fmt.Sprintf("%.0f ops/s", r), true
	default:
		txt := Latency(worst)
		if intended {
			txt += " (from intended start)"
		}
		return float64(worst), txt, true
	}
}

// peaks returns the most memory and disk the target took at any step.
func peaks(t *results.Target) (mem, disk int64) {
	for _, s := range t.Steps {
		r := s.Footprint()
		mem = max(mem, Mem(r.Before), Mem(r.After))
		disk = max(disk, r.DiskAllocated)
		if s.ServerResources == nil {
			for _, tk := range s.Series {
				mem = max(mem, tk.RSSBytes)
			}
		}
	}
	return mem, disk
}

// targetDurability is the class a target's writes actually had: none for
// a target that keeps nothing (memcached says so in its settings),
// otherwise the run's class, which every target honours or refuses.
func targetDurability(run *results.Run, t *results.Target) string {
	d := t.Settings["durability"]
	if t.Server != nil && t.Server.Settings["durability"] != "" {
		d = t.Server.Settings["durability"]
	}
	if strings.HasPrefix(d, "none") {
		return "none"
	}
	// A server with no setting that fsyncs each write (Aerospike
	// Community Edition) runs a sync study with its best setting and says
	// its writes were async.
	if strings.HasPrefix(d, "async") {
		return "async"
	}
	// Under durability "default", the class of the engine's own default.
	if c := t.Settings["durability_class"]; c != "" {
		return c
	}
	return run.Durability
}

// verifiedLoss says how t, declaring sync, lost acknowledged writes in
// the run's crash trials (the durability workload's steps: their facts
// durability and crash, their metrics lost, trials and lost_trials), or
// "" when none did. A server that keeps nothing across a restart
// (memcached: fact persistence) is judged by its settings instead.
func verifiedLoss(t *results.Target) string {
	var parts []string
	for _, s := range t.Steps {
		if s.Workload != "durability" || s.Facts["durability"] != "sync" || s.Facts["persistence"] != "" || s.Metrics["lost"] <= 0 {
			continue
		}
		crash := s.Facts["crash"]
		if crash == "power-loss" {
			crash = "power failure"
		}
		parts = append(parts, fmt.Sprintf("%.0f acknowledged writes lost after %s in %.0f of %.0f trials", s.Metrics["lost"], crash, s.Metrics["lost_trials"], s.Metrics["trials"]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "**declared sync, verified: " + strings.Join(parts, "; ") + "**"
}

// weakerDurability says which ranked or rejected targets wrote with a
// weaker durability than the study asked for, and what they did instead.
func weakerDurability(b *strings.Builder, run *results.Run, vs ...[]Verdict) {
	if run.Durability != "sync" {
		return
	}
	for _, list := range vs {
		for _, v := range list {
			t := v.Target
			if targetDurability(run, t) != "async" {
				continue
			}
			how := t.Settings["durability"]
			if t.Server != nil && t.Server.Settings["durability_mapping"] != "" {
				how = t.Server.Settings["durability_mapping"]
			}
			fmt.Fprintf(b, "Durability: %s's writes were async although the study asks for sync (%s).\n\n", t.Title, how)
		}
	}
}

// rankFigure is the figure the ranking uses and the words for it.
func rankFigure(run *results.Run) (figure, string, bool) {
	if c := run.Constraints; c != nil && c.RankBy != "" {
		fig, metric, _ := strings.Cut(c.RankBy, ":")
		f := parseFigure(fig, metric)
		return f, fmt.Sprintf("%s of %s (the study's rank_by)", metric, f.name()), true
	}
	// The headline of the study's first workload that registered one.
	if hs := headlines(run); len(hs) > 0 {
		return hs[0].f, hs[0].what + " (the study's headline figure)", true
	}
	return figure{}, "", false
}

type headline struct {
	f    figure
	what string
}

// headlines are the headline figures of the run's workloads that
// registered one, in the order the run measured them.
func headlines(run *results.Run) []headline {
	var hs []headline
	seen := map[string]bool{}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if seen[s.Workload] {
				continue
			}
			seen[s.Workload] = true
			if d, ok := section.Lookup(s.Workload); ok && d.Headline != nil {
				hs = append(hs, headline{parseFigure(d.Headline.Figure, d.Headline.Metric), d.Headline.What})
			}
		}
	}
	return hs
}

// Recommend judges every measured target against the run's constraints
// and ranks those that meet them.
func Recommend(run *results.Run) *Recommendation {
	rf, what, ok := rankFigure(run)
	if !ok {
		return nil
	}
	return recommendBy(run, rf, what, false)
}

// RecommendEach is the report's opening judgement: one ranking when the
// study names its figure (rank_by) or has one workload with a headline,
// else one per workload, each on its own headline among the targets that
// can run it. A study of web servers and databases (web-oltp) asks which
// web server and which database, not which of all of them is fastest on
// the first workload.
func RecommendEach(run *results.Run) []*Recommendation {
	hs := headlines(run)
	if (run.Constraints != nil && run.Constraints.RankBy != "") || len(hs) < 2 {
		if r := Recommend(run); r != nil {
			return []*Recommendation{r}
		}
		return nil
	}
	var recs []*Recommendation
	for _, h := range hs {
		r := recommendBy(run, h.f, h.what+" (the workload's headline figure)", true)
		r.Workload = h.f.workload
		recs = append(recs, r)
	}
	return recs
}

// recommendBy ranks on rf; with splitNA, targets that cannot run rf's
// workload at all go to NA instead of Rejected.
func recommendBy(run *results.Run, rf figure, what string, splitNA bool) *Recommendation {
	rec := &Recommendation{}
	c := run.Constraints
	rn := largestN(run, rf)
	for _, t := range run.Targets {
		if t.Status == "unavailable" || t.Status == "skipped" {
			continue
		}
		v := Verdict{Target: t, Meets: true, Score: math.NaN()}
		v.PeakMem, v.PeakDisk = peaks(t)
		if x, txt, ok := rf.measure(t, rn); ok {
			v.Score, v.ScoreText = x, txt
		}
		if c.Any() {
			v.Broken = firstBroken(run, c, t, v)
		}
		if math.IsNaN(v.Score) {
			if why := t.NotApplicable(rf.workload, rf.phase, rn); why != "" {
				v.ScoreText = "n/a: " + why
			}
		}
		if v.Broken == "" && math.IsNaN(v.Score) {
			v.Broken = fmt.Sprintf("no figure for %s%s", rf.name(), atSize(rn))
			if why := t.NotApplicable(rf.workload, rf.phase, rn); why != "" {
				v.Broken = fmt.Sprintf("%s: n/a (%s)", rf.name(), why)
			} else if t.Status != "ok" && t.Reason != "" {
				v.Broken += " (" + t.Status + ": " + t.Reason + ")"
			}
		}
		v.Meets = v.Broken == ""
		if why := t.NotApplicable(rf.workload, rf.phase, rn); splitNA && math.IsNaN(v.Score) && why != "" {
			v.Broken = why
			rec.NA = append(rec.NA, v)
			continue
		}
		if v.Meets {
			rec.Ranked = append(rec.Ranked, v)
		} else {
			rec.Rejected = append(rec.Rejected, v)
		}
	}
	sort.SliceStable(rec.Ranked, func(i, j int) bool {
		if rf.higherIsBetter() {
			return rec.Ranked[i].Score > rec.Ranked[j].Score
		}
		return rec.Ranked[i].Score < rec.Ranked[j].Score
	})
	at := atSize(rn)
	if c.Any() {
		rec.Basis = fmt.Sprintf("Targets that meet every constraint of the study, ranked by %s%s.", what, at)
	} else {
		rec.Basis = fmt.Sprintf("The study states no constraints: targets ranked by %s%s. Add a `constraints:` section (RAM, disk, durability, p99, throughput) to rank against what your system can afford.", what, at)
	}
	return rec
}

// firstBroken returns the first constraint t breaks, with the figure.
func firstBroken(run *results.Run, c *study.Constraints, t *results.Target, v Verdict) string {
	if c.Durability == "sync" {
		// What a crash showed beats what the settings declare.
		if why := verifiedLoss(t); why != "" {
			return "durability: " + why
		}
		if d := targetDurability(run, t); d != "sync" {
			return fmt.Sprintf("durability: writes were %s, sync is required", d)
		}
	}
	if c.RAM > 0 && v.PeakMem > int64(c.RAM) {
		return fmt.Sprintf("RAM: peak %s > %s", Bytes(v.PeakMem), Bytes(int64(c.RAM)))
	}
	if c.Disk > 0 && v.PeakDisk > int64(c.Disk) {
		return fmt.Sprintf("disk: %s > %s", Bytes(v.PeakDisk), Bytes(int64(c.Disk)))
	}
	for _, b := range c.P99 {
		f := parseFigure(b.Figure, "p99")
		n := largestN(run, f)
		x, txt, ok := f.measure(t, n)
		if !ok {
			if why := t.NotApplicable(f.workload, f.phase, n); why != "" {
				return fmt.Sprintf("p99 of %s: n/a (%s)", f.name(), why)
			}
			return fmt.Sprintf("p99 of %s: not measured%s%s", f.name(), atSize(n), statusNote(t))
		}
		if x > b.Value {
			return fmt.Sprintf("p99 of %s at %s: %s > %s", f.name(), Count(n), txt, Latency(int64(b.Value)))
		}
	}
	for _, b := range c.Throughput {
		f := parseFigure(b.Figure, "throughput")
		n := largestN(run, f)
		x, txt, ok := f.measure(t, n)
		if !ok {
			if why := t.NotApplicable(f.workload, f.phase, n); why != "" {
				return fmt.Sprintf("throughput of %s: n/a (%s)", f.name(), why)
			}
			return fmt.Sprintf("throughput of %s: not measured%s%s", f.name(), atSize(n), statusNote(t))
		}
		if x < b.Value {
			return fmt.Sprintf("throughput of %s at %s: %s < %.0f ops/s", f.name(), Count(n), txt, b.Value)
		}
	}
	return ""
}

// atSize says at which size a figure is taken; nothing when no target
// measured the phase at all (an interrupted run).
func atSize(n int64) string {
	if n < 0 {
		return ""
	}
	return " at " + Count(n)
}

func statusNote(t *results.Target) string {
	if t.Status != "ok" && t.Reason != "" {
		return " (" + t.Status + ": " + t.Reason + ")"
	}
	return ""
}

// constraintsText lists the constraints in words.
func constraintsText(c *study.Constraints) string {
	var parts []string
	if c.Durability != "" {
		parts = append(parts, "durability "+c.Durability)
	}
	if c.RAM > 0 {
		parts = append(parts, "RAM ≤ "+Bytes(int64(c.RAM)))
	}
	if c.Disk > 0 {
		parts = append(parts, "disk ≤ "+Bytes(int64(c.Disk)))
	}
	for _, b := range c.P99 {
		parts = append(parts, fmt.Sprintf("p99 of %s ≤ %s", b.Figure, Latency(int64(b.Value))))
	}
	for _, b := range c.Throughput {
		parts = append(parts, fmt.Sprintf("%s ≥ %.0f ops/s", b.Figure, b.Value))
	}
	return strings.Join(parts, ", ")
}

// recommendation renders the opening section of the report.
func recommendation(b *strings.Builder, run *results.Run) {
	recs := RecommendEach(run)
	if len(recs) == 0 {
		return
	}
	b.WriteString("## Recommendation\n\n")
	if run.Constraints.Any() {
		fmt.Fprintf(b, "Constraints: %s.\n\n", constraintsText(run.Constraints))
	}
	if len(recs) > 1 {
		b.WriteString("Each workload is ranked on its own headline figure among the targets that can run it.\n\n")
	}
	for _, rec := range recs {
		if rec.Workload != "" {
			fmt.Fprintf(b, "### %s\n\n", rec.Workload)
		}
		recommendationOne(b, run, rec)
	}
}

func recommendationOne(b *strings.Builder, run *results.Run, rec *Recommendation) {
	b.WriteString(rec.Basis + "\n\n")
	switch {
	case len(rec.Ranked) == 0:
		b.WriteString("**No target meets them.**\n\n")
	case run.Constraints.Any():
		fmt.Fprintf(b, "**Recommended: %s** (%s).\n\n", rec.Ranked[0].Target.Title, rec.Ranked[0].ScoreText)
	default:
		fmt.Fprintf(b, "**Best on this figure: %s** (%s).\n\n", rec.Ranked[0].Target.Title, rec.Ranked[0].ScoreText)
	}
	if len(rec.Ranked) > 0 {
		tab := Table{Head: []string{"Rank", "Target", "Figure", "Peak RAM", "Peak disk"}, Left: 2}
		for i, v := range rec.Ranked {
			tab.Rows = append(tab.Rows, []string{fmt.Sprint(i + 1), v.Target.Title, v.ScoreText, Bytes(v.PeakMem), Bytes(v.PeakDisk)})
		}
		tab.Write(b)
	}
	if len(rec.Rejected) > 0 {
		tab := Table{Head: []string{"Target", "First constraint broken", "Figure"}, Left: 2}
		for _, v := range rec.Rejected {
			score := v.ScoreText
			if score == "" {
				score = "—"
			}
			tab.Rows = append(tab.Rows, []string{v.Target.Title, cell(v.Broken), score})
		}
		if run.Constraints.Any() {
			b.WriteString("Not recommended:\n\n")
		} else {
			b.WriteString("Not ranked:\n\n")
		}
		tab.Write(b)
	}
	weakerDurability(b, run, rec.Ranked, rec.Rejected)
	if len(rec.NA) > 0 {
		var parts []string
		for _, v := range rec.NA {
			parts = append(parts, fmt.Sprintf("%s (%s)", v.Target.Title, v.Broken))
		}
		fmt.Fprintf(b, "Not applicable: %s.\n\n", strings.Join(parts, ", "))
	}
}
