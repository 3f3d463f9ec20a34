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
// first of its targets that ran a step of the workload.
func standIns(s *Seed, run *results.Run, workload string) map[string]*results.Target {
	out := map[string]*results.Target{}
	for _, e := range s.Engines {
	next:
		for _, name := range e.Targets {
			for _, t := range run.Targets {
				if t.Name != name {
					continue
				}
				for _, st := range t.Steps {
					if st.Workload == workload && st.Error == "" {
						out[e.Name] = t
						break next
					}
				}
				for _, rs := range t.Searches {
					if rs.Workload == workload {
						out[e.Name] = t
						break next
					}
				}
			}
		}
	}
	return out
}

func compareFinding(s *Seed, f *Finding, run *results.Run) FindingResult {
	fr := FindingResult{Finding: f}
	var stand map[string]*results.Target
	var ours map[string]map[float64]float64 // engine → size → value, finding's unit
	if f.Ours != nil {
		stand = standIns(s, run, f.Ours.Workload)
		ours = map[string]map[float64]float64{}
		for e, t := range stand {
			ours[e] = values(run, t, f.Ours, f.Unit)
		}
	}
	var seedPts []Point
	for _, g := range f.Figures {
		v, _ := convert(g.Value, g.Unit, f.Unit)
		seedPts = append(seedPts, Point{Engine: g.Engine, N: g.N, Value: v})
		row := Row{Figure: g}
		switch t := stand[g.Engine]; {
		case f.Ours == nil:
			row.Missing = NotMeasured
		case t == nil:
			row.Missing = EngineNotRun
		default:
			row.Target = t.Name
			if o, ok := ours[g.Engine][g.N]; ok {
				row.Ours, _ = convert(o, f.Unit, g.Unit)
				row.Have = true
			} else {
				row.Missing = SizeNotRun
			}
		}
		fr.Rows = append(fr.Rows, row)
	}
	engines := make([]string, 0, len(ours))
	for e := range ours {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	for _, e := range engines {
		for _, n := range sortedKeys(ours[e]) {
			fr.Ours = append(fr.Ours, Point{Engine: e, N: n, Value: ours[e][n]})
		}
	}
	fr.Verdict = Compare(seedPts, fr.Ours)
	if f.Ours == nil {
		fr.Verdict.Why = NotMeasured
	}
	if fr.Verdict.Outcome == Differs {
		fr.Verdict.Reasons = reasons(s, f, run, stand, fr.Ours)
	}
	return fr
}

// values are a target's figures of a finding by size (several steps at
// one size: their mean), in unit.
func values(run *results.Run, t *results.Target, o *Ours, unit string) map[float64]float64 {
	sum, cnt := map[float64]float64{}, map[float64]int{}
	add := func(n, v float64) {
		if c, err := convert(v, o.unit(), unit); err == nil && !math.IsNaN(c) && !math.IsInf(c, 0) {
			sum[n] += c
			cnt[n]++
		}
	}
	if o.Value == "sustainable" {
		for _, rs := range t.Searches {
			if rs.Workload == o.Workload && (o.Phase == "" || rs.Phase == o.Phase) && rs.Sustainable > 0 {
				n, ok := searchSize(run, rs, o.Size)
				if ok {
					add(n, rs.Sustainable)
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
		n, ok := stepSize(run, st, o.Size)
		if !ok {
			continue
		}
		if v, ok := stepValue(st, o.Value); ok {
			add(n, v)
		}
	}
	out := map[float64]float64{}
	for n, v := range sum {
		out[n] = v / float64(cnt[n])
	}
	return out
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
	case "seconds", "disk", "ops_per_s", "sustainable":
		return true
	}
	return strings.HasPrefix(value, "metric:")
}

func where(st *results.Step, w map[string]string) bool {
	for k, v := range w {
		if st.Labels[k] != v {
			return false
		}
	}
	return true
}

func stepSize(run *results.Run, st *results.Step, size string) (float64, bool) {
	switch {
	case size == "" || size == "n":
		return float64(st.N), true
	case size == "none":
		return 0, true
	case size == "cpus":
		return float64(run.Host.LogicalCPUs), run.Host.LogicalCPUs > 0
	case strings.HasPrefix(size, "metric:"):
		v, ok := st.Metrics[strings.TrimPrefix(size, "metric:")]
		return v, ok
	case strings.HasPrefix(size, "label:"):
		v, err := strconv.ParseFloat(st.Labels[strings.TrimPrefix(size, "label:")], 64)
		return v, err == nil
	}
	return 0, false
}

func searchSize(run *results.Run, rs results.RateSearch, size string) (float64, bool) {
	switch size {
	case "", "n":
		return float64(rs.N), true
	case "none":
		return 0, true
	case "cpus":
		return float64(run.Host.LogicalCPUs), run.Host.LogicalCPUs > 0
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
	}
	if name, ok := strings.CutPrefix(value, "metric:"); ok {
		v, ok := st.Metrics[name]
		return v, ok
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

// reasons are what results.json measures that sets this run apart from
// the seed's for a finding: the durability class of the targets
// compared, data held whole in the page cache, and the CPU count.
func reasons(s *Seed, f *Finding, run *results.Run, stand map[string]*results.Target, ours []Point) []string {
	var out []string
	compared := map[string]bool{}
	for _, p := range ours {
		compared[p.Engine] = true
	}
	var engines []string
	for e := range compared {
		engines = append(engines, e)
	}
	sort.Strings(engines)

	// Every target of a run writes in the run's durability class, or
	// under "default" in the class of its engine's own default.
	if run.Durability == "default" && s.Durability != "" {
		var differ []string
		for _, e := range engines {
			if t := stand[e]; t != nil && t.Settings["durability_class"] != "" && t.Settings["durability_class"] != s.Durability {
				differ = append(differ, fmt.Sprintf("%s %s", e, t.Settings["durability_class"]))
			}
		}
		if len(differ) > 0 {
			out = append(out, fmt.Sprintf("durability class differs: the seed's engines %s (%s); ours each engine's default: %s (the Targets table says what each default is)",
				s.Durability, s.DurabilityNote, strings.Join(differ, ", ")))
		}
	} else if s.Durability != "" && run.Durability != "" && run.Durability != s.Durability && len(engines) > 0 {
		out = append(out, fmt.Sprintf("durability class differs: the seed's engines %s (%s), ours %s (each target's setting is in the Targets table)", s.Durability, s.DurabilityNote, run.Durability))
	}

	// Held whole in the page cache: a reason where the seed's machine's
	// RAM is known (its data could outgrow it; a seed that does not say
	// leaves nothing to set ours against).
	seedRAM := 0.0
	for _, g := range f.Figures {
		if compared[g.Engine] {
			seedRAM = math.Max(seedRAM, s.HardwareOf(g.Hardware).RAMGiB)
		}
	}
	if f.Ours != nil && seedRAM > 0 {
		var cached []string
		for _, e := range engines {
			t := stand[e]
			var best *results.Step
			for _, st := range t.Steps {
				if st.Workload == f.Ours.Workload && (f.Ours.Phase == "" || st.Phase == f.Ours.Phase) && st.Error == "" {
					if best == nil || st.N > best.N {
						best = st
					}
				}
			}
			if best == nil {
				continue
			}
			fp := best.Footprint()
			if fp.CacheTotal > 0 && float64(fp.CacheResident) >= 0.9*float64(fp.CacheTotal) {
				cached = append(cached, fmt.Sprintf("%s at %s: %s of its %s of files cached", t.Name, section.Count(best.N), section.Bytes(fp.CacheResident), section.Bytes(fp.CacheTotal)))
			}
		}
		if len(cached) > 0 {
			out = append(out, fmt.Sprintf("the data fits in the page cache here (%s; RAM %s, the seed's machine %g GiB)", strings.Join(cached, "; "), section.Bytes(run.Host.MemTotalBytes), seedRAM))
		}
	}

	cpus := run.Host.LogicalCPUs
	seen := map[string]bool{}
	var other []string
	for _, g := range f.Figures {
		h := s.HardwareOf(g.Hardware)
		if compared[g.Engine] && h.CPUs > 0 && h.CPUs != cpus && !seen[h.ID] {
			seen[h.ID] = true
			other = append(other, fmt.Sprintf("%d (%s)", h.CPUs, h.ID))
		}
	}
	if len(other) > 0 && cpus > 0 {
		out = append(out, fmt.Sprintf("CPU count differs: the seed's %s, ours %d", strings.Join(other, ", "), cpus))
	}
	return out
}
