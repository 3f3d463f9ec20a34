package seedcmp

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/measure/latency"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

// Why a seed figure has no figure of ours beside it.
const (
	NotMeasured  = "not measured by storebench"
	EngineNotRun = "engine not run"
	SizeNotRun   = "not run at this size"
	// NoStandIn: the seed's engine has no target of ours (its note in
	// the transcription says why).
	NoStandIn = "no target of storebench stands for it"
	// NotRunAsTheSeeds: the target ran the phase, but none of its steps
	// carries the labels the finding's figure is read from (another
	// variant of it: a rule other than the seed's).
	NotRunAsTheSeeds = "not run as the seed ran it"
	// NotOnMachine: a finding that sets the seed's machines against each
	// other, and no target ran on a shape named for this one.
	NotOnMachine = "not run on a shape of"
)

// Row is one figure of the seed beside ours.
type Row struct {
	Figure Figure
	// Target is our target that stands for the figure's engine ("" when
	// none ran).
	Target string
	// Ours is our figure at the same size, in the seed figure's unit
	// (Have false: Missing says why there is none).
	Ours    float64
	Have    bool
	Missing string
	// Detail, for a finding ours is no one number of (a GC pass: value
	// gc_passes), is what our run measured of it, computed from the
	// step (Have false, Missing empty).
	Detail string
	// OurN is the size ours stands at when it is not the figure's own (a
	// ByMachine finding whose claim allows sizes apart: the seed's
	// machine scaled to this one's data); 0 when the same.
	OurN float64
	// Each, where Ours is the mean of several targets' figures at the
	// size (one engine on machine shapes of several CPU counts, a figure
	// per vCPU at no size), is each one's: "rocksdb@cpus=0.5 9120,
	// rocksdb@cpus=1 8410".
	Each string
}

// FindingResult is one finding set beside a run.
type FindingResult struct {
	Finding *Finding
	Rows    []Row
	Verdict Verdict
	// Ours are our points, in the finding's unit, by seed engine.
	Ours []Point
}

// Result is a seed set beside a run.
type Result struct {
	Seed     *Seed
	Findings []FindingResult
	// Elsewhere are the findings whose workload this run did not run
	// (another study of the same seed does).
	Elsewhere []*Finding
}

// SeedOf returns the seed a run's study names (its seed_study field),
// "" when it names none.
func SeedOf(run *results.Run) string {
	for _, line := range strings.Split(run.StudySource, "\n") {
		if rest, ok := strings.CutPrefix(line, "seed_study:"); ok {
			v := strings.TrimSpace(rest)
			if i := strings.Index(v, "#"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// Against sets the seed's findings beside a run: ours at the seed's
// sizes and engines, and each finding's computed verdict.
func Against(s *Seed, run *results.Run) Result {
	res := Result{Seed: s}
	for i := range s.Findings {
		f := &s.Findings[i]
		if w := f.WorkloadOf(); w != "" && !ranWorkload(run, w) {
			res.Elsewhere = append(res.Elsewhere, f)
			continue
		}
		res.Findings = append(res.Findings, compareFinding(s, f, run))
	}
	return res
}

func ranWorkload(run *results.Run, w string) bool {
	for _, t := range run.Targets {
		for _, st := range t.Steps {
			if st.Workload == w {
				return true
			}
		}
		for _, rs := range t.Searches {
			if rs.Workload == w {
				return true
			}
		}
	}
	return false
}

// standIns maps each seed engine to our target that stands for it: the
// first of its targets that ran a step of the workload (bestRun).
func standIns(s *Seed, run *results.Run, workload string) map[string]*results.Target {
	out := map[string]*results.Target{}
	for _, e := range s.Engines {
		for _, name := range e.Targets {
			if t := bestRun(s, run, name, workload); t != nil {
				out[e.Name] = t
				break
			}
		}
	}
	return out
}

// bestRun is the run of target name that stands for it: the one as it
// is, else of its runs on machine shapes that limit only its CPUs
// (cpuShaped) the one with the most CPUs (the seeds' machines have more
// than any here); nil when none ran the workload.
func bestRun(s *Seed, run *results.Run, name, workload string) *results.Target {
	var best *results.Target
	most := 0.0
	for _, t := range run.Targets {
		if !ranFor(t, workload) {
			continue
		}
		if t.Name == name && t.Machine == "" {
			return t
		}
		if c, _ := cpusOf(run, t, nil); BaseName(t) == name && cpuShaped(s, t) && (best == nil || c > most) {
			best, most = t, c
		}
	}
	return best
}

// ranFor says whether t ran a step of the workload without an error, or
// a rate search of it.
func ranFor(t *results.Target, workload string) bool {
	for _, rs := range t.Searches {
		if rs.Workload == workload {
			return true
		}
	}
	return ranOn(t, workload)
}

// MachineOf is the seed machine a target's machine shape stands for: its
// name, less a "-scaled" suffix ("i3en.xlarge-scaled" stands for
// i3en.xlarge, scaled to this machine's data); "" for a target run on no
// named shape.
func MachineOf(t *results.Target) string {
	if t.Machine == "" {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(t.Machine, "name="), ",")
	if !strings.HasPrefix(t.Machine, "name=") {
		return ""
	}
	return strings.TrimSuffix(name, "-scaled")
}

// BaseName is a target's name without the "@SHAPE" a machine shape adds.
func BaseName(t *results.Target) string {
	if t.Machine == "" {
		return t.Name
	}
	name, _, _ := strings.Cut(t.Name, "@")
	return name
}

// machineStandIns maps ENGINE@HARDWARE, for each of the seed's engines
// and machines, to our target that ran the workload on the shape that
// stands for that machine (a ByMachine finding).
func machineStandIns(s *Seed, run *results.Run, workload string) map[string]*results.Target {
	out := map[string]*results.Target{}
	for _, e := range s.Engines {
		for _, name := range e.Targets {
			for _, t := range run.Targets {
				hw := MachineOf(t)
				key := e.Name + "@" + hw
				if hw == "" || BaseName(t) != name || out[key] != nil || !ranOn(t, workload) {
					continue
				}
				out[key] = t
			}
		}
	}
	return out
}

func ranOn(t *results.Target, workload string) bool {
	for _, st := range t.Steps {
		if st.Workload == workload && st.Error == "" {
			return true
		}
	}
	return false
}

// standInsOf maps each of the finding's engines (ENGINE@HARDWARE in a
// ByMachine finding) to our target that stands for it. On a run of
// machine shapes, an engine whose figures in f are all on one of the
// seed's machines stands on the shape named for it.
func standInsOf(s *Seed, f *Finding, run *results.Run) map[string]*results.Target {
	onMachines := machineStandIns(s, run, f.Ours.Workload)
	if f.ByMachine {
		return onMachines
	}
	stand := standIns(s, run, f.Ours.Workload)
	for e, t := range onMachines {
		eng, hw, _ := strings.Cut(e, "@")
		if stand[eng] == nil && onlyOn(f, eng) == hw {
			stand[eng] = t
		}
	}
	return stand
}

// ourValueText names the figure a finding reads of our steps.
func ourValueText(o *Ours) string {
	what := o.Workload
	if o.Phase != "" {
		what += "." + o.Phase
	}
	if len(o.Where) > 0 {
		what += " (" + whereText(o.Where) + ")"
	}
	return what + "'s " + o.Value
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// onlyOn is the one machine all of engine's figures in f are on ("" when
// none, or several).
func onlyOn(f *Finding, engine string) string {
	hw := ""
	for _, g := range f.Figures {
		if g.Engine != engine {
			continue
		}
		if hw != "" && g.Hardware != hw {
			return ""
		}
		hw = g.Hardware
	}
	return hw
}

// engineKey is the engine a figure is set against ours as: ENGINE, or
// ENGINE@HARDWARE in a ByMachine finding.
func engineKey(f *Finding, g Figure) string {
	if f.ByMachine {
		return g.Engine + "@" + g.Hardware
	}
	return g.Engine
}

// sides are what a finding's figures of ours come from: the run, each
// engine's stand-in, and the targets its figures are read from (the
// stand-in, or its runs on machine shapes of several CPU counts: cpuGroup).
type sides struct {
	s     *Seed
	f     *Finding
	run   *results.Run
	stand map[string]*results.Target
	group map[string][]*results.Target
}

func compareFinding(s *Seed, f *Finding, run *results.Run) FindingResult {
	fr := FindingResult{Finding: f}
	c := sides{s: s, f: f, run: run, group: map[string][]*results.Target{}}
	ours := map[string]figures{}
	if f.Ours != nil {
		c.stand = standInsOf(s, f, run)
		// Ours of the finding's own engines: two of the seed's engines
		// may share a stand-in (OnvaKV and its C++ B-tree build: both
		// moeingads), and one the finding has no figure of is set against
		// nothing.
		figured := figuredEngines(f)
		for e, t := range c.stand {
			if !figured[e] {
				continue
			}
			c.group[e] = []*results.Target{t}
			if byCPUs(f) {
				c.group[e] = cpuGroup(s, run, t, f.Ours.Workload)
			}
			ours[e] = figuresOf(run, c.group[e], f)
		}
	}
	var seedPts []Point
	for _, g := range f.Figures {
		seedPts = append(seedPts, seedPoint(s, f, g))
		fr.Rows = append(fr.Rows, figureRow(c, g, ours[engineKey(f, g)]))
	}
	engines := make([]string, 0, len(ours))
	for e := range ours {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	for _, e := range engines {
		for _, n := range sortedKeys(ours[e].mean) {
			fr.Ours = append(fr.Ours, Point{Engine: e, N: n, Value: ours[e].mean[n], Spread: ours[e].spread[n]})
		}
	}
	if f.Claim.Kind == ClaimFails && f.Ours != nil {
		fr.Ours = append(fr.Ours, failures(run, c.stand, f.Ours)...)
	}
	fr.Verdict = Judge(f.Claim, seedPts, fr.Ours)
	explain(c, &fr)
	return fr
}

// figuredEngines are the engines a finding sets ours of beside the
// seed's: those of its figures, or with none (a conclusion of the
// seed's words alone) every engine its claim names.
func figuredEngines(f *Finding) map[string]bool {
	figured := map[string]bool{}
	for _, g := range f.Figures {
		figured[engineKey(f, g)] = true
	}
	for _, e := range append([]string{f.Claim.Of, f.Claim.To}, f.Claim.Engines...) {
		if e != "" && len(f.Figures) == 0 {
			figured[e] = true
		}
	}
	return figured
}

// seedPoint is a seed's figure in the finding's unit (per vCPU of its
// machine where the finding divides by CPUs).
func seedPoint(s *Seed, f *Finding, g Figure) Point {
	v, _ := convert(g.Value, g.Unit, f.FigureUnit())
	if c := s.HardwareOf(g.Hardware).CPUs; f.Per == PerCPUs && c > 0 {
		v /= float64(c)
	}
	return Point{Engine: engineKey(f, g), N: g.N, Value: v, Precision: PrecisionOf(g.Value)}
}

// figureRow sets one of the seed's figures beside ours, o being its
// engine's figures.
func figureRow(c sides, g Figure, o figures) Row {
	s, f := c.s, c.f
	key := engineKey(f, g)
	row := Row{Figure: perFigure(s, f, g)}
	switch t := c.stand[key]; {
	case f.Ours == nil:
		row.Missing = NotMeasured
	case len(s.Engine(g.Engine).Targets) == 0:
		row.Missing = NoStandIn
	case t == nil && f.ByMachine:
		row.Missing = NotOnMachine + " " + g.Hardware
	case t == nil:
		row.Missing = EngineNotRun
	case f.Ours.Value == "gc_passes":
		row.Target = t.Name
		if row.Detail = gcDetail(t, f.Ours, f.Unit); row.Detail == "" {
			row.Missing = SizeNotRun
		}
	default:
		row.Target = o.targetText(t)
		if v, ok := o.mean[g.N]; ok {
			row.Ours, _ = convert(v, f.Unit, row.Figure.Unit)
			row.Have, row.Each = true, o.each[g.N]
		} else if p := pairSizes(f.Claim, []float64{g.N}, sortedKeys(o.mean)); f.ByMachine && len(p) == 1 {
			row.Ours, _ = convert(o.mean[p[0][1]], f.Unit, row.Figure.Unit)
			row.Have, row.OurN = true, p[0][1]
		} else if unlike(t, f.Ours) {
			row.Missing = NotRunAsTheSeeds + " (" + whereText(f.Ours.Where) + ")"
		} else {
			row.Missing = SizeNotRun
		}
	}
	return row
}

// explain says why a verdict is not comparable where the finding knows
// better than the claim (no figure of ours, what a run would need, a GC
// finding), and the measured causes of one that differs.
func explain(c sides, fr *FindingResult) {
	f := c.f
	if f.Ours == nil {
		fr.Verdict.Outcome, fr.Verdict.Why = NotComparable, NotMeasured
	} else if len(fr.Ours) == 0 && len(c.stand) > 0 {
		// The stand-in ran the workload: what is missing is the figure.
		var who []string
		for _, t := range c.stand {
			who = append(who, t.Name)
		}
		sort.Strings(who)
		fr.Verdict.Why = fmt.Sprintf("%s ran %s here, but no step of it carries %s", strings.Join(dedupe(who), ", "), f.Ours.Workload, ourValueText(f.Ours))
	}
	if fr.Verdict.Outcome == NotComparable && f.Needs != "" {
		fr.Verdict.Why = f.Needs
	}
	if f.Ours != nil && f.Ours.Value == "gc_passes" && fr.Verdict.Outcome == NotComparable {
		fr.Verdict.Why = GCNotOneFigure
	}
	if fr.Verdict.Outcome == Differs {
		fr.Verdict.Reasons = reasons(c, fr.Ours, fr.Verdict)
	}
}

// values are a target's figures of a finding by size (several steps at
// one size: their mean), in unit (per vCPU, each divided by the CPUs
// its step ran on: cpusOf), and their relative spread ((max - min) /
// mean; 0 for one step).
func values(run *results.Run, t *results.Target, o *Ours, unit string, perCPU bool) (map[float64]float64, map[float64]float64) {
	sum, cnt := map[float64]float64{}, map[float64]int{}
	lo, hi := map[float64]float64{}, map[float64]float64{}
	add := func(n, v float64, st *results.Step) {
		c, err := convert(v, o.unit(), unit)
		if perCPU {
			cpus, ok := cpusOf(run, t, st)
			if !ok {
				return
			}
			c /= cpus
		}
		if err == nil && !math.IsNaN(c) && !math.IsInf(c, 0) {
			if cnt[n] == 0 || c < lo[n] {
				lo[n] = c
			}
			if cnt[n] == 0 || c > hi[n] {
				hi[n] = c
			}
			sum[n] += c
			cnt[n]++
		}
	}
	if o.Value == "sustainable" {
		for _, rs := range t.Searches {
			if rs.Workload == o.Workload && (o.Phase == "" || rs.Phase == o.Phase) && rs.Sustainable > 0 {
				n, ok := searchSize(run, t, rs, o.Size)
				if ok {
					add(n, rs.Sustainable, nil)
				}
			}
		}
	}
	for _, st := range t.Steps {
		if st.Workload != o.Workload || (o.Phase != "" && st.Phase != o.Phase) || st.Error != "" || st.Partial || !where(st, o.Where) {
			continue
		}
		if cutShort(st, o.Value) {
			continue
		}
		n, ok := stepSize(run, t, st, o.Size)
		if !ok {
			continue
		}
		if v, ok := stepValue(st, o.Value); ok {
			add(n, v, st)
		}
	}
	out, spread := map[float64]float64{}, map[float64]float64{}
	for n, v := range sum {
		out[n] = v / float64(cnt[n])
		if out[n] != 0 {
			spread[n] = (hi[n] - lo[n]) / math.Abs(out[n])
		}
	}
	return out, spread
}

// cutShort reports whether a step stopped at a workload's phase budget
// (Facts["cut"]) no longer stands for value: its totals (seconds, disk,
// throughput) are of part of the work, and where an operation itself was
// cut, none of its latencies is a whole operation's. The latencies of
// whole operations before the budget still are. A step on a database
// whose insert was cut (Facts["cut_db"]) stands for a smaller size than
// its N, and for none of the seed's.
func cutShort(st *results.Step, value string) bool {
	if st.Facts["cut_db"] != "" {
		return true // its database is smaller than its N
	}
	if st.Facts["cut"] == "" {
		return false
	}
	if st.Facts["cut_inside_op"] != "" {
		return true
	}
	switch value {
	case "seconds", "disk", "ops_per_s", "sustainable", "per_request_time", "mem_growth", "cpu":
		return true
	}
	return strings.HasPrefix(value, "metric:") || strings.HasPrefix(value, "metric_ratio:")
}

func where(st *results.Step, w map[string]string) bool {
	for k, v := range w {
		if st.Labels[k] != v {
			return false
		}
	}
	return true
}

// stepSize is the size a step of target t stands at.
func stepSize(run *results.Run, t *results.Target, st *results.Step, size string) (float64, bool) {
	switch {
	case size == "" || size == "n":
		return float64(st.N), true
	case size == "none":
		return 0, true
	case size == "cpus":
		return cpusOf(run, t, st)
	case strings.HasPrefix(size, "metric:"):
		v, ok := st.Metrics[strings.TrimPrefix(size, "metric:")]
		return v, ok
	case strings.HasPrefix(size, "label:"):
		v, err := strconv.ParseFloat(st.Labels[strings.TrimPrefix(size, "label:")], 64)
		return v, err == nil
	}
	return 0, false
}

func searchSize(run *results.Run, t *results.Target, rs results.RateSearch, size string) (float64, bool) {
	switch size {
	case "", "n":
		return float64(rs.N), true
	case "none":
		return 0, true
	case "cpus":
		return cpusOf(run, t, nil)
	}
	return 0, false
}

func stepValue(st *results.Step, value string) (float64, bool) {
	l := st.Latency
	switch value {
	case "seconds":
		return st.Seconds, st.Seconds > 0
	case "ops_per_s":
		return float64(st.Ops) / st.Seconds, st.Seconds > 0 && st.Ops > 0
	case "disk":
		return float64(st.Footprint().DiskAllocated), st.Footprint().DiskAllocated > 0
	case "mem":
		m := section.Mem(st.Footprint().After)
		return float64(m), m > 0
	case "cache":
		return float64(st.Footprint().CacheResident), st.Footprint().CacheTotal > 0
	case "latency.mean":
		return l.Mean, l.Count > 0
	case "latency.min":
		return float64(l.Min), l.Count > 0
	case "latency.p50":
		return float64(l.P50), l.Count > 0
	case "latency.p90":
		return float64(l.P90), l.Count > 0
	case "latency.p99":
		return float64(l.P99), l.Count > 0
	case "latency.p999":
		return float64(l.P999), l.Count > 0
	case "latency.max":
		return float64(l.Max), l.Count > 0
	case "per_request_time":
		// ab's "Time per request (mean)": concurrency × the test's time /
		// the requests done (ab.c), in seconds.
		c, r := st.Metrics["concurrency"], st.Metrics["requests"]
		return c * st.Seconds / r, c > 0 && r > 0 && st.Seconds > 0
	case "mem_growth":
		// What the engine's memory grew by over the step.
		return memGrowth(st.Footprint())
	case "cpu":
		// The engine's CPU over the step (100 = one core busy): over its
		// timed part where that was sampled (a worker's), else over the
		// whole step (a server's, sampled around it).
		fp := st.Footprint()
		if fp.Timed != nil && fp.Timed.Seconds > 0 {
			return fp.Timed.CPUPercent, true
		}
		return fp.CPUPercent, fp.Interval() > 0
	}
	if rest, ok := strings.CutPrefix(value, "by_op."); ok {
		return byOpValue(st, rest)
	}
	if name, ok := strings.CutPrefix(value, "metric:"); ok {
		v, ok := st.Metrics[name]
		return v, ok
	}
	if pair, ok := strings.CutPrefix(value, "metric_ratio:"); ok {
		a, b, _ := strings.Cut(pair, "/")
		va, okA := st.Metrics[a]
		vb, okB := st.Metrics[b]
		if !okA || !okB || vb == 0 {
			return 0, false
		}
		return va / vb, true
	}
	if q, ok := strings.CutPrefix(value, "latency.p"); ok && st.Hist != "" {
		p, err := strconv.ParseFloat(q, 64)
		if err != nil {
			return 0, false
		}
		h, err := latency.Decode(st.Hist)
		if err != nil || h.TotalCount() == 0 {
			return 0, false
		}
		return float64(h.ValueAtQuantile(p)), true
	}
	return 0, false
}
