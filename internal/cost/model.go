package cost

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/results"
	"storebench/internal/shapes"
)

// Measure is one timed step of one target on one machine shape, as the
// model reads it: what the run measured, nothing projected.
type Measure struct {
	Target  string // the target's name without its "@machine"
	Title   string
	Machine string // the shape ("" this machine as it is)
	// Kind is the step without its size: "ycsb/a", "ledger/chain len=10".
	Kind string
	Step string // the step's name, size included (results.Step.Name)
	Unit string // what one operation is ("select", "batch of 100 txns")
	N    int64
	// VCPUs is the shape's CPU limit, or this machine's CPUs when the
	// shape sets none (then CPULimited is false).
	VCPUs      float64
	CPULimited bool
	OpsPerS    float64
	P99        float64 // seconds
	// CPUPerOp is the CPU seconds one operation cost (0: not measured),
	// of CPUScope's processes.
	CPUPerOp float64
	CPUScope string
	// DiskBytes and RSSBytes are the target's data on disk (allocated)
	// and its processes' resident memory at the step's end.
	DiskBytes float64
	RSSBytes  float64
	// IOPerOp is the block I/Os (reads and writes) per operation, counted
	// as IOScope says; -1: not measured.
	IOPerOp float64
	IOScope string
	// ItemBytes is one item as the workload writes it (0: not reported).
	ItemBytes float64
	// MemRatio is the memory per byte of data the shape gave (0: none).
	MemRatio float64
}

// Measures reads every timed step of a run that did not fail.
func Measures(run *results.Run) []Measure {
	var out []Measure
	for _, t := range run.Targets {
		base, _, _ := strings.Cut(t.Name, "@")
		title, _, _ := strings.Cut(t.Title, " on ")
		vcpus, limited := float64(run.Host.LogicalCPUs), false
		if c, err := strconv.ParseFloat(shapes.Limits(t.Machine)["cpus"], 64); err == nil && c > 0 {
			vcpus, limited = c, true
		}
		for _, s := range t.Steps {
			if s.Seconds <= 0 || s.Ops <= 0 || s.Error != "" || s.Partial {
				continue
			}
			m := Measure{Target: base, Title: title, Machine: t.Machine, Kind: Kind(s), Step: s.Name(), Unit: s.Unit, N: s.N,
				VCPUs: vcpus, CPULimited: limited, OpsPerS: float64(s.Ops) / s.Seconds,
				P99: float64(s.Latency.P99) / 1e9, ItemBytes: s.Metrics["item_bytes"]}
			m.CPUPerOp, m.CPUScope = cpuPerOp(s)
			m.IOPerOp, m.IOScope = ioPerOp(s)
			fp := s.Footprint()
			m.DiskBytes, m.RSSBytes = float64(fp.DiskAllocated), float64(fp.After.RSSBytes)
			if r, ok := shapes.MemoryRatio(s); ok {
				m.MemRatio = r
			}
			out = append(out, m)
		}
	}
	return out
}

// Kind names a step without its size.
func Kind(s *results.Step) string {
	k := s.Workload + "/" + s.Phase
	if x := s.Labels.Extra(); x != "" {
		k += " " + x
	}
	return k
}

// cpuPerOp is the engine's CPU seconds per operation: a managed server's
// process tree, else the worker (engine and its in-process load
// generator) over the timed part of the step.
func cpuPerOp(s *results.Step) (float64, string) {
	ops := float64(s.Ops)
	if r := s.ServerResources; r != nil && r.CPUPercent > 0 && r.Interval() > 0 {
		return r.CPUPercent / 100 * r.Interval() / ops, "the server's processes over the step"
	}
	if w := s.Resources.Timed; w != nil && w.CPUPercent > 0 && w.Seconds > 0 {
		return w.CPUPercent / 100 * w.Seconds / ops, "the worker (engine and its in-process load generator)"
	}
	if r := s.Resources; r.CPUPercent > 0 && r.Interval() > 0 {
		return r.CPUPercent / 100 * r.Interval() / ops, "the worker (engine and its in-process load generator) over the step"
	}
	return 0, ""
}

// ioPerOp is the block I/Os per operation: the machine group's own count
// where the target ran on a shape, else the device's bytes over 4 KiB.
func ioPerOp(s *results.Step) (float64, string) {
	ops := float64(s.Ops)
	if r, ok := s.Metrics["machine_disk_reads"]; ok {
		return (r + s.Metrics["machine_disk_writes"]) / ops, "the machine group's own I/O count"
	}
	fp := s.Footprint()
	if fp.Device != "" {
		return float64(fp.DeviceReadBytes+fp.DeviceWriteBytes) / 4096 / ops, "the data's device, all processes, 4 KiB per I/O assumed"
	}
	return -1, ""
}

// Power is y = K·x^B, fitted in log space; Points is how many measures
// it was fitted to (1: B assumed, not fitted).
type Power struct {
	K, B   float64
	Points int
}

// At is the fit's value at x.
func (p Power) At(x float64) float64 { return p.K * math.Pow(x, p.B) }

// FitPower fits y = K·x^B to points by least squares on their logs.
// With one point B is assumeB; with none, or x or y not positive, false.
func FitPower(xs, ys []float64, assumeB float64) (Power, bool) {
	if len(xs) == 0 || len(xs) != len(ys) {
		return Power{}, false
	}
	var sx, sy, sxx, sxy float64
	n := float64(len(xs))
	for i := range xs {
		if xs[i] <= 0 || ys[i] <= 0 {
			return Power{}, false
		}
		lx, ly := math.Log(xs[i]), math.Log(ys[i])
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	den := n*sxx - sx*sx
	if len(xs) == 1 || math.Abs(den) < 1e-12 {
		b := assumeB
		return Power{K: math.Exp(sy/n - b*sx/n), B: b, Points: len(xs)}, true
	}
	b := (n*sxy - sx*sy) / den
	return Power{K: math.Exp((sy - b*sx) / n), B: b, Points: len(xs)}, true
}

// Linear is y = A + B·x by least squares; one point: through the origin.
type Linear struct {
	A, B   float64
	Points int
	MaxX   float64 // the largest x measured
}

// At is the fit's value at x.
func (l Linear) At(x float64) float64 { return l.A + l.B*x }

// FitLinear fits y = A + B·x; the intercept is kept at 0 or above (a
// negative one would make small data free), refitting through the
// origin when it falls below.
func FitLinear(xs, ys []float64) (Linear, bool) {
	if len(xs) == 0 || len(xs) != len(ys) {
		return Linear{}, false
	}
	l := Linear{Points: len(xs)}
	var sx, sy, sxx, sxy float64
	n := float64(len(xs))
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
		l.MaxX = math.Max(l.MaxX, xs[i])
	}
	if den := n*sxx - sx*sx; len(xs) > 1 && math.Abs(den) > 1e-9*sxx*n {
		l.B = (n*sxy - sx*sy) / den
		l.A = (sy - l.B*sx) / n
	}
	if l.A < 0 || l.B == 0 {
		if sxx <= 0 {
			return Linear{}, false
		}
		l.A, l.B = 0, sxy/sxx
	}
	return l, true
}

// StepModel is one target's model of one kind of step, fitted to the
// run's measures of it.
type StepModel struct {
	Kind string
	// Throughput against vCPUs: fitted over the CPU-limited shapes that
	// differ in nothing else (Scaled), else CPU seconds per operation on
	// the one shape measured (linear in vCPUs, assumed).
	Throughput Power
	P99        Power // seconds against vCPUs, as Throughput
	Scaled     bool
	// MaxVCPUs is the most vCPUs measured.
	MaxVCPUs float64
	// CPUPerOp and CPUScope: the measure the linear model rests on.
	CPUPerOp float64
	CPUScope string
	// Disk and RSS bytes against items (the ladder's N).
	Disk, RSS Linear
	// IOPerOp: block I/Os per operation at the largest size (-1 unknown).
	IOPerOp float64
	IOScope string
	// Knee is the smallest memory-to-data ratio measured to keep the
	// throughput within shapes.KneeWithin (0: no memory shapes ran).
	Knee      float64
	ItemBytes float64
	Unit      string
	MaxN      int64
	// HeldOut is the check of the vCPU fit on a shape it did not see.
	HeldOut *results.HeldOut
}

// Model is one target's step models.
type Model struct {
	Target, Title string
	Steps         map[string]*StepModel
	Kinds         []string // in the run's order
}

// Fit fits every target's model to the run's measures.
func Fit(run *results.Run) []*Model {
	byTarget := map[string][]Measure{}
	var order []string
	for _, m := range Measures(run) {
		if _, ok := byTarget[m.Target]; !ok {
			order = append(order, m.Target)
		}
		byTarget[m.Target] = append(byTarget[m.Target], m)
	}
	knees := map[string]float64{}
	for _, k := range shapes.Knees(run.Targets) {
		if k.Found || len(k.Points) > 0 {
			key := k.Target + "\x00" + k.Step
			knees[key] = math.Max(knees[key], k.Ratio)
		}
	}
	var out []*Model
	for _, name := range order {
		out = append(out, fitTarget(name, byTarget[name], knees))
	}
	return out
}

func fitTarget(name string, ms []Measure, knees map[string]float64) *Model {
	md := &Model{Target: name, Title: ms[0].Title, Steps: map[string]*StepModel{}}
	byKind := map[string][]Measure{}
	for _, m := range ms {
		if _, ok := byKind[m.Kind]; !ok {
			md.Kinds = append(md.Kinds, m.Kind)
		}
		byKind[m.Kind] = append(byKind[m.Kind], m)
	}
	for _, k := range md.Kinds {
		md.Steps[k] = fitStep(k, byKind[k], knees, name)
	}
	return md
}

func fitStep(kind string, ms []Measure, knees map[string]float64, target string) *StepModel {
	sm := &StepModel{Kind: kind, IOPerOp: -1}
	top := ms[0]
	for _, m := range ms {
		if m.N > top.N || (m.N == top.N && roomier(m, top)) {
			top = m
		}
	}
	sm.MaxN, sm.ItemBytes, sm.CPUPerOp, sm.CPUScope, sm.Unit = top.N, top.ItemBytes, top.CPUPerOp, top.CPUScope, top.Unit
	sm.IOPerOp, sm.IOScope = top.IOPerOp, top.IOScope
	fitSizes(sm, ms)
	for _, m := range ms {
		sm.Knee = math.Max(sm.Knee, knees[target+"\x00"+m.Step])
	}
	cpu := cpuSeries(ms, top.N)
	for _, m := range cpu {
		sm.MaxVCPUs = math.Max(sm.MaxVCPUs, m.VCPUs)
	}
	if len(cpu) >= 2 {
		sm.Throughput, _ = FitPower(vcpusOf(cpu), opsOf(cpu), 1)
		sm.P99, _ = FitPower(vcpusOf(cpu), p99Of(cpu), 0)
		sm.Scaled = true
		sm.HeldOut = holdOut(cpu)
		return sm
	}
	sm.MaxVCPUs = top.VCPUs
	if sm.CPUPerOp > 0 {
		sm.Throughput = Power{K: 1 / sm.CPUPerOp, B: 1, Points: 1}
	} else {
		sm.Throughput = Power{K: top.OpsPerS / top.VCPUs, B: 1, Points: 1}
	}
	sm.P99 = Power{K: top.P99, B: 0, Points: 1}
	return sm
}

// roomier says a's shape limits it less than b's: no CPU limit, or more
// vCPUs, then more memory per byte of data.
func roomier(a, b Measure) bool {
	if a.CPULimited != b.CPULimited {
		return !a.CPULimited
	}
	if a.VCPUs != b.VCPUs {
		return a.VCPUs > b.VCPUs
	}
	return (a.MemRatio == 0 && b.MemRatio > 0) || a.MemRatio > b.MemRatio
}

// fitSizes fits the data's bytes on disk and the resident memory against
// items over the ladder, from the least limited shape's steps.
func fitSizes(sm *StepModel, ms []Measure) {
	best := map[int64]Measure{}
	for _, m := range ms {
		if b, ok := best[m.N]; !ok || (m.Machine == "" && b.Machine != "") || (m.Machine != "" && b.Machine != "" && m.DiskBytes > b.DiskBytes) {
			best[m.N] = m
		}
	}
	var ns, disk, rss []float64
	for n, m := range best {
		if n > 0 {
			ns, disk, rss = append(ns, float64(n)), append(disk, m.DiskBytes), append(rss, m.RSSBytes)
		}
	}
	sm.Disk, _ = FitLinear(ns, disk)
	sm.RSS, _ = FitLinear(ns, rss)
}

// cpuSeries is the measures at size n on shapes that differ only in their
// CPU limit (the largest such group), by vCPUs.
func cpuSeries(ms []Measure, n int64) []Measure {
	groups := map[string][]Measure{}
	for _, m := range ms {
		if m.N == n && m.CPULimited {
			k := shapes.Others(m.Machine, "cpus", "cpuset", "name")
			groups[k] = append(groups[k], m)
		}
	}
	var best []Measure
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(groups[k]) > len(best) {
			best = groups[k]
		}
	}
	sort.Slice(best, func(i, j int) bool { return best[i].VCPUs < best[j].VCPUs })
	return best
}

// holdOut predicts the most vCPUs' shape from the others.
func holdOut(cpu []Measure) *results.HeldOut {
	last := cpu[len(cpu)-1]
	rest := cpu[:len(cpu)-1]
	t, ok1 := FitPower(vcpusOf(rest), opsOf(rest), 1)
	p, ok2 := FitPower(vcpusOf(rest), p99Of(rest), 0)
	if !ok1 || !ok2 {
		return nil
	}
	return &results.HeldOut{Kind: last.Kind, Machine: last.Machine, VCPUs: last.VCPUs, MeasuredOps: last.OpsPerS, PredictedOps: t.At(last.VCPUs),
		MeasuredP99: last.P99, PredictedP99: p.At(last.VCPUs), Fitted: len(rest)}
}

func vcpusOf(ms []Measure) []float64 { return mapOf(ms, func(m Measure) float64 { return m.VCPUs }) }
func opsOf(ms []Measure) []float64   { return mapOf(ms, func(m Measure) float64 { return m.OpsPerS }) }
func p99Of(ms []Measure) []float64 {
	return mapOf(ms, func(m Measure) float64 { return math.Max(m.P99, 1e-9) })
}

func mapOf(ms []Measure, f func(Measure) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

// ThroughputAt is the step's throughput on v vCPUs: the fit within the
// vCPUs measured; past them the fit's exponent, but never above 1 (a
// machine bigger than any measured is not assumed to scale better than
// linearly, whatever a fit over small shapes says).
func (sm *StepModel) ThroughputAt(v float64) float64 {
	if v <= sm.MaxVCPUs || sm.Throughput.B <= 1 {
		return sm.Throughput.At(v)
	}
	return sm.Throughput.At(sm.MaxVCPUs) * (v / sm.MaxVCPUs)
}

// Describe says how the throughput model was made, for a projection's
// inputs.
func (sm *StepModel) Describe() string {
	if sm.Scaled {
		s := fmt.Sprintf("throughput = %.4g × vCPUs^%.2f, fitted to %d CPU-limited shapes up to %s", sm.Throughput.K, sm.Throughput.B, sm.Throughput.Points, VCPUs(sm.MaxVCPUs))
		if sm.Throughput.B > 1 {
			s += ", linear past them (not superlinear)"
		}
		return s
	}
	if sm.CPUPerOp > 0 {
		return fmt.Sprintf("%.3g CPU-µs per operation (%s) on %s: linear in vCPUs assumed (one shape measured)", sm.CPUPerOp*1e6, sm.CPUScope, VCPUs(sm.MaxVCPUs))
	}
	return fmt.Sprintf("%.0f ops/s per vCPU on %s: linear in vCPUs assumed (no CPU measured)", sm.Throughput.K, VCPUs(sm.MaxVCPUs))
}

func trim(f float64) string {
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(f, 'f', 3, 64), "0"), ".")
}
