package seedcmp

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/shapes"
)

// Issue 35 item 4: a target run on machine shapes of different CPU
// counts (storebench run geo --targets rocksdb --machine cpus=0.5
// --machine cpus=1 --machine cpus=2) is one engine at several sizes of
// a finding sized by CPUs (size: cpus), and the CPUs a figure per vCPU
// (per: cpus) is divided by.

// cpuLimitMetric is the step metric the coordinator records a machine
// shape's CPU limit in, in cores.
const cpuLimitMetric = "machine_cpu_limit_cores"

// shapeCPUs is the CPUs a target's machine shape gives it: its cpus=
// limit, else the CPUs of its cpuset=; false for a target on no shape,
// or on one that limits no CPU.
func shapeCPUs(t *results.Target) (float64, bool) {
	l := shapes.Limits(t.Machine)
	if v, ok := l["cpus"]; ok {
		c, err := strconv.ParseFloat(v, 64)
		return c, err == nil && c > 0
	}
	if v, ok := l["cpuset"]; ok {
		cpus, err := procstat.ParseCPUList(v)
		return float64(len(cpus)), err == nil && len(cpus) > 0
	}
	return 0, false
}

// cpusOf is the CPUs a step (nil: any step) of target t ran on: its
// machine shape's CPU limit (the step's own metric, else the shape's
// cpus= or cpuset=), else this machine's logical CPUs; false when
// neither is known.
func cpusOf(run *results.Run, t *results.Target, st *results.Step) (float64, bool) {
	if st != nil {
		if c := st.Metrics[cpuLimitMetric]; c > 0 {
			return c, true
		}
	}
	if c, ok := shapeCPUs(t); ok {
		return c, true
	}
	return float64(run.Host.LogicalCPUs), run.Host.LogicalCPUs > 0
}

// cpuShaped says whether t ran on a machine shape that limits its CPUs
// and nothing else (cpus=, cpuset=), named for none of the seed's
// machines: its figures differ from the engine's run as it is in the
// CPUs alone, and it stands for the seed's engine where a finding is
// sized (size: cpus) or divided (per: cpus) by them. A shape that also
// limits memory, the page cache or the disk changes more than the CPUs;
// one named for a seed machine stands for that machine (MachineOf).
func cpuShaped(s *Seed, t *results.Target) bool {
	if t.Machine == "" {
		return false
	}
	if hw := MachineOf(t); hw != "" && slices.ContainsFunc(s.Hardware, func(h Hardware) bool { return h.ID == hw }) {
		return false
	}
	l := shapes.Limits(t.Machine)
	for k := range l {
		if k != "cpus" && k != "cpuset" {
			return false
		}
	}
	_, ok := shapeCPUs(t)
	return ok
}

// byCPUs says whether a finding's figure depends on the CPUs a step ran
// on: sized or divided by them.
func byCPUs(f *Finding) bool {
	return f.Ours != nil && (f.Ours.Size == "cpus" || f.Per == PerCPUs)
}

// cpuGroup is what a finding sized or divided by CPUs reads ours from,
// for an engine whose stand-in is t: t's runs as it is and on every
// machine shape that limits only its CPUs (cpuShaped), each at its own
// CPUs. Any other stand-in (one on a shape named for a seed machine)
// stands alone.
func cpuGroup(s *Seed, run *results.Run, t *results.Target, workload string) []*results.Target {
	if t.Machine != "" && !cpuShaped(s, t) {
		return []*results.Target{t}
	}
	var out []*results.Target
	for _, o := range run.Targets {
		if BaseName(o) == BaseName(t) && (o.Machine == "" || cpuShaped(s, o)) && ranFor(o, workload) {
			out = append(out, o)
		}
	}
	return out
}

// figures are one engine's figures of a finding by size, read from one
// or more targets (one engine on machine shapes of several CPU counts).
type figures struct {
	mean, spread map[float64]float64
	// each, at a size more than one target stands at, is each one's
	// figure: "rocksdb@cpus=0.5 9120, rocksdb@cpus=1 8410".
	each    map[float64]string
	targets []string // those with a figure, in the run's order
}

// figuresOf reads a finding's figures of the targets ts (one engine's),
// by size; where several targets stand at one size (several shapes of a
// figure at no size, divided by their CPUs), the figure is their mean,
// and their spread widens the band a verdict reads ties within.
func figuresOf(run *results.Run, ts []*results.Target, f *Finding) figures {
	out := figures{mean: map[float64]float64{}, spread: map[float64]float64{}, each: map[float64]string{}}
	sum, lo, hi := map[float64]float64{}, map[float64]float64{}, map[float64]float64{}
	names := map[float64][]string{}
	for _, t := range ts {
		v, sp := values(run, t, f.Ours, f.FigureUnit(), f.Per == PerCPUs)
		if len(v) > 0 {
			out.targets = append(out.targets, t.Name)
		}
		for n, x := range v {
			if len(names[n]) == 0 || x < lo[n] {
				lo[n] = x
			}
			if len(names[n]) == 0 || x > hi[n] {
				hi[n] = x
			}
			sum[n] += x
			out.spread[n] = math.Max(out.spread[n], sp[n])
			names[n] = append(names[n], t.Name+" "+figureText(x))
		}
	}
	for n, x := range sum {
		m := x / float64(len(names[n]))
		out.mean[n] = m
		if len(names[n]) > 1 {
			out.each[n] = strings.Join(names[n], ", ")
			if m != 0 {
				out.spread[n] = math.Max(out.spread[n], (hi[n]-lo[n])/math.Abs(m))
			}
		}
	}
	return out
}

// figureText is a figure as the report writes one: 4 significant
// digits, whole from 10000 up.
func figureText(v float64) string {
	if math.Abs(v) >= 1e4 && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// targetText names the targets an engine's figures came from: one, or
// several (one engine on machine shapes) joined.
func (g figures) targetText(stand *results.Target) string {
	if len(g.targets) == 0 {
		return stand.Name
	}
	return strings.Join(g.targets, ", ")
}

// perFigure is a seed's figure as a finding with per: cpus sets it
// beside ours: divided by the vCPUs of its machine, saying so.
func perFigure(s *Seed, f *Finding, g Figure) Figure {
	c := s.HardwareOf(g.Hardware).CPUs
	if f.Per != PerCPUs || c <= 0 {
		return g
	}
	note := fmt.Sprintf("%s %s over its %d vCPUs", strconv.FormatFloat(g.Value, 'f', -1, 64), g.Unit, c)
	if g.Note != "" {
		note += "; " + g.Note
	}
	g.Value, g.Unit, g.Note = g.Value/float64(c), g.Unit+PerVCPU, note
	return g
}

// ourCPUs are the CPU counts the targets ts ran on, ascending, each with
// the targets on a machine shape of it ("0.5 (rocksdb@cpus=0.5)"), or
// bare for the run as it is on this machine; and whether any ran on a
// shape.
func ourCPUs(run *results.Run, ts []*results.Target) ([]float64, map[float64][]string, bool) {
	who := map[float64][]string{}
	shaped := false
	for _, t := range ts {
		c, ok := cpusOf(run, t, nil)
		if !ok {
			continue
		}
		name := t.Name
		if _, on := shapeCPUs(t); on {
			shaped = true
		} else {
			name += " on this machine"
		}
		if !contains(who[c], name) {
			who[c] = append(who[c], name)
		}
	}
	cs := sortedKeys(who)
	return cs, who, shaped
}

// cpuList says CPU counts as ourCPUs gives them: "2", or with shapes
// "0.5 (rocksdb@cpus=0.5), 1 (rocksdb@cpus=1), 2 (this machine's)".
func cpuList(cs []float64, who map[float64][]string, shaped bool) string {
	var out []string
	for _, c := range cs {
		x := strconv.FormatFloat(c, 'g', -1, 64)
		if shaped {
			names := append([]string(nil), who[c]...)
			sort.Strings(names)
			x += " (" + strings.Join(names, ", ") + ")"
		}
		out = append(out, x)
	}
	return strings.Join(out, ", ")
}
