package seedcmp

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
)

// Method is a way the seed measured that a run here cannot share,
// transcribed with the seed's lines (a client across a network, a
// figure that includes baseline files).
type Method struct {
	// Cause is the condition (one of Causes) it bears on.
	Cause string `yaml:"cause"`
	// Seed says what the seed did, on lines Source; Ours what storebench
	// does instead.
	Seed   string `yaml:"seed"`
	Ours   string `yaml:"ours"`
	Source []int  `yaml:"source"`
}

// Scale is the size a seed's finding was measured at, where a run here
// may be cut below it: the seconds each step ran, or the records.
type Scale struct {
	Seconds float64 `yaml:"seconds"`
	N       float64 `yaml:"n"`
	Source  []int   `yaml:"source"`
}

// MethodDifferences are what sets this run's method apart from the
// seed's, whatever the verdicts: the seed's transcribed methods, the
// durability class, the machine (CPUs, RAM).
func MethodDifferences(s *Seed, run *results.Run) []string {
	var out []string
	for _, m := range s.Methods {
		out = append(out, fmt.Sprintf("%s (l. %s); here: %s", m.Seed, lineList(m.Source), m.Ours))
	}
	if s.Durability != "" && run.Durability != "" && run.Durability != s.Durability && run.Durability != "default" {
		out = append(out, fmt.Sprintf("durability class: the seed's engines %s (%s), ours %s", s.Durability, s.DurabilityNote, run.Durability))
	}
	cs, who, shaped := ourCPUs(run, run.Targets)
	for _, h := range s.Hardware {
		var d []string
		if h.CPUs > 0 && len(cs) > 0 && (len(cs) > 1 || cs[0] != float64(h.CPUs)) {
			d = append(d, fmt.Sprintf("%d CPUs against our %s", h.CPUs, cpuList(cs, who, shaped)))
		}
		if h.RAMGiB > 0 && run.Host.MemTotalBytes > 0 {
			d = append(d, fmt.Sprintf("%g GiB RAM against our %s", h.RAMGiB, section.Bytes(run.Host.MemTotalBytes)))
		}
		if len(d) > 0 {
			out = append(out, fmt.Sprintf("machine %s: %s", h.ID, strings.Join(d, ", ")))
		}
	}
	return out
}

func lineList(ls []int) string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprint(l))
	}
	return strings.Join(out, ", ")
}

// reasons are the causes this run measured for a finding whose verdict
// differs: each condition the finding depends on (DependsOn) that this
// run, by its own figures, does not share with the seed. A condition
// the run shares, or one the finding does not depend on, is no cause;
// none at all leaves the verdict unexplained.
func reasons(c sides, ours []Point, v Verdict) []string {
	s, f, run, stand := c.s, c.f, c.run, c.stand
	engines := comparedEngines(ours)
	out := standInCauses(s, stand, differing(v))
	for _, cause := range f.DependsOn {
		var r string
		switch cause {
		case "durability":
			r = durabilityCause(s, run, stand, engines)
		case "page_cache":
			r = cacheCause(s, f, run, stand, engines)
		case "cpus":
			r = cpuCause(c, engines)
		case "network", "baseline":
			r = methodCause(s, cause)
		case "scale":
			r = scaleCause(f, stand, engines)
		}
		if r != "" {
			out = append(out, r)
		}
	}
	if r := baselineFigures(f, ours); r != "" && contains(f.DependsOn, "baseline") {
		out = append(out, r)
	}
	return out
}

// differing are the engines in the parts of a verdict that differ: a
// reversed pair, a growth or ratio that does not hold, a failure.
func differing(v Verdict) map[string]bool {
	m := map[string]bool{}
	if o := v.Ordering; o != nil {
		for _, s := range o.Sizes {
			for _, p := range s.Pairs {
				if p.Discordant() {
					m[p.A], m[p.B] = true, true
				}
			}
		}
	}
	for _, g := range v.Growth {
		if !g.Holds {
			m[g.Engine] = true
		}
	}
	if f := v.Fails; f != nil {
		m[f.Engine] = true
	}
	return m
}

// standInCauses: an engine whose part differs ran here as another
// system that stands for it (FerretDB for MongoDB, MariaDB for MySQL).
// The engine's own target on a machine shape ("cassandra@nuc-scaled") is
// the engine itself, not a stand-in.
func standInCauses(s *Seed, stand map[string]*results.Target, engines map[string]bool) []string {
	var out []string
	for _, e := range s.Engines {
		t := stand[e.Name]
		if !engines[e.Name] || t == nil || len(e.Targets) == 0 {
			continue
		}
		base, _, _ := strings.Cut(t.Name, "@")
		if base == e.Targets[0] {
			continue
		}
		r := fmt.Sprintf("%s ran here as %s, which stands for it", e.Name, base)
		if e.Note != "" {
			r += " (" + e.Note + ")"
		}
		out = append(out, r)
	}
	return out
}

func comparedEngines(ours []Point) []string {
	m := map[string]bool{}
	for _, p := range ours {
		m[p.Engine] = true
	}
	var out []string
	for e := range m {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

func durabilityCause(s *Seed, run *results.Run, stand map[string]*results.Target, engines []string) string {
	if s.Durability == "" {
		return ""
	}
	if run.Durability == "default" {
		var differ []string
		for _, e := range engines {
			if t := stand[e]; t != nil && t.Settings["durability_class"] != "" && t.Settings["durability_class"] != s.Durability {
				differ = append(differ, fmt.Sprintf("%s %s", e, t.Settings["durability_class"]))
			}
		}
		if len(differ) == 0 {
			return ""
		}
		return fmt.Sprintf("durability class: the seed's engines %s (%s); ours each engine's default: %s", s.Durability, s.DurabilityNote, strings.Join(differ, ", "))
	}
	if run.Durability == "" || run.Durability == s.Durability || len(engines) == 0 {
		return ""
	}
	return fmt.Sprintf("durability class: the seed's engines %s (%s), ours %s", s.Durability, s.DurabilityNote, run.Durability)
}

// cacheCause: the page cache held all of a compared engine's files at
// its largest size here, where the seed's machine's RAM is known.
func cacheCause(s *Seed, f *Finding, run *results.Run, stand map[string]*results.Target, engines []string) string {
	seedRAM := 0.0
	for _, g := range f.Figures {
		if contains(engines, g.Engine) {
			seedRAM = math.Max(seedRAM, s.HardwareOf(g.Hardware).RAMGiB)
		}
	}
	if f.Ours == nil || seedRAM == 0 {
		return ""
	}
	var cached []string
	for _, e := range engines {
		best := largestStep(stand[e], f.Ours)
		if best == nil {
			continue
		}
		fp := best.Footprint()
		if fp.CacheTotal > 0 && float64(fp.CacheResident) >= 0.9*float64(fp.CacheTotal) {
			cached = append(cached, fmt.Sprintf("%s at %s: %s of its %s of files cached", stand[e].Name, section.Count(best.N), section.Bytes(fp.CacheResident), section.Bytes(fp.CacheTotal)))
		}
	}
	if len(cached) == 0 {
		return ""
	}
	return fmt.Sprintf("the page cache held the data here (%s; RAM %s, the seed's machine %g GiB)", strings.Join(cached, "; "), section.Bytes(run.Host.MemTotalBytes), seedRAM)
}

func largestStep(t *results.Target, o *Ours) *results.Step {
	if t == nil {
		return nil
	}
	var best *results.Step
	for _, st := range t.Steps {
		if st.Workload == o.Workload && (o.Phase == "" || st.Phase == o.Phase) && st.Error == "" {
			if best == nil || st.N > best.N {
				best = st
			}
		}
	}
	return best
}

// cpuCause: the seed's machines, for a compared engine's figures, had
// other CPU counts than the ones that engine ran on here: a machine
// shape's CPU limit for a target on one, else this machine's logical
// CPUs.
func cpuCause(c sides, engines []string) string {
	var ts []*results.Target
	for _, e := range engines {
		g := c.group[e]
		if len(g) == 0 && c.stand[e] != nil {
			g = []*results.Target{c.stand[e]}
		}
		ts = append(ts, g...)
	}
	cs, who, shaped := ourCPUs(c.run, ts)
	if len(ts) == 0 && c.run.Host.LogicalCPUs > 0 {
		cs = []float64{float64(c.run.Host.LogicalCPUs)}
	}
	if len(cs) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var other []string
	add := func(h Hardware) {
		if h.CPUs > 0 && !slices.Contains(cs, float64(h.CPUs)) && !seen[h.ID] {
			seen[h.ID] = true
			other = append(other, fmt.Sprintf("%d (%s)", h.CPUs, h.ID))
		}
	}
	for _, g := range c.f.Figures {
		if contains(engines, g.Engine) {
			add(c.s.HardwareOf(g.Hardware))
		}
	}
	if len(c.f.Figures) == 0 {
		add(c.s.HardwareOf(c.f.Hardware))
	}
	if len(other) == 0 {
		return ""
	}
	return fmt.Sprintf("CPU count: the seed's %s, ours %s", strings.Join(other, ", "), cpuList(cs, who, shaped))
}

func methodCause(s *Seed, cause string) string {
	for _, m := range s.Methods {
		if m.Cause == cause {
			return fmt.Sprintf("%s (l. %s); here: %s", m.Seed, lineList(m.Source), m.Ours)
		}
	}
	return ""
}

// scaleCause: a compared engine's steps here ran shorter, or on fewer
// records, than the seed's finding did.
func scaleCause(f *Finding, stand map[string]*results.Target, engines []string) string {
	sc := f.Scale
	if f.Ours == nil || (sc.Seconds == 0 && sc.N == 0) {
		return ""
	}
	var cut []string
	for _, e := range engines {
		best := largestStep(stand[e], f.Ours)
		if best == nil {
			continue
		}
		switch {
		case sc.Seconds > 0 && best.Seconds > 0 && best.Seconds < 0.9*sc.Seconds:
			cut = append(cut, fmt.Sprintf("%s ran %s of the seed's %s (%.2g×)", stand[e].Name, secs(best.Seconds), secs(sc.Seconds), best.Seconds/sc.Seconds))
		case sc.N > 0 && best.N > 0 && float64(best.N) < 0.9*sc.N:
			cut = append(cut, fmt.Sprintf("%s at %s of the seed's %s (%.2g×)", stand[e].Name, section.Count(best.N), section.Count(int64(sc.N)), float64(best.N)/sc.N))
		}
	}
	if len(cut) == 0 {
		return ""
	}
	return fmt.Sprintf("the run was cut below the seed's scale (l. %s): %s", lineList(sc.Source), strings.Join(cut, "; "))
}

func secs(s float64) string { return fmt.Sprintf("%.0f s", s) }

// baselineFigures: the seed's figure at its smallest size stands for
// each engine's baseline (files it has before any data), set against
// ours at the same size.
func baselineFigures(f *Finding, ours []Point) string {
	first := map[string]Figure{}
	for _, g := range f.Figures {
		if p, ok := first[g.Engine]; !ok || g.N < p.N {
			first[g.Engine] = g
		}
	}
	var parts []string
	for _, p := range ours {
		g, ok := first[p.Engine]
		if !ok || p.N != g.N {
			continue
		}
		seed, _ := convert(g.Value, g.Unit, f.Unit)
		if seed > 2*p.Value {
			parts = append(parts, fmt.Sprintf("%s at %g: the seed's %g %s, ours %.3g %s", p.Engine, p.N, g.Value, g.Unit, p.Value, f.Unit))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "at the smallest size the seed's figure is mostly baseline: " + strings.Join(parts, "; ")
}
