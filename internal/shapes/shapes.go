// Package shapes reads what machine shapes changed in a run (issue 35):
// per target and step, the knee of its throughput against the memory a
// shape gave it per byte of data, and its throughput against vCPUs with
// the scaling efficiency. The report's Machines section shows them and
// package cost fits its model to them; both read them from here.
package shapes

import (
	"sort"
	"strconv"
	"strings"

	"storebench/internal/results"
)

// KneeWithin is how far below the least limited shape's throughput a
// step may fall and still count as unhurt by its memory (the knee).
const KneeWithin = 0.20

// KneePoint is one shape's throughput at one step, against the memory it
// had per byte of data.
type KneePoint struct {
	Machine string
	Ratio   float64 // memory (a cache shape: page cache) over the data's bytes on disk
	OpsPerS float64
}

// Knee is, for one target and step, the smallest memory-to-data ratio
// whose throughput is within KneeWithin of the least limited shape's
// (the one with the highest ratio): below it the data no longer fits.
// Found is false when every shape below the highest fell further.
type Knee struct {
	Target, Step string
	// Others are the limits the shapes share ("" none): "cpus=1".
	Others string
	Points []KneePoint // by ratio, ascending
	Ratio  float64
	Found  bool
}

// MemoryRatio is a step's memory per byte of data: a cache shape's
// budget over the data at its start (cache=R: R), else the memory limit
// over the data's bytes on disk at its end; false without a memory limit
// or data.
func MemoryRatio(s *results.Step) (float64, bool) {
	m := s.Metrics
	if bu, ok := m["machine_cache_budget_bytes"]; ok && m["machine_data_bytes_at_start"] > 0 {
		return bu / m["machine_data_bytes_at_start"], true
	}
	l, ok := m["machine_memory_limit_bytes"]
	data := s.Footprint().DiskApparent
	if !ok || data <= 0 {
		return 0, false
	}
	return l / float64(data), true
}

// Limits reads a target's machine as results.json writes it
// ("name=x,cpus=0.5,memory=256MiB") into its limits, name left out.
func Limits(machine string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(machine, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "name" {
			out[k] = v
		}
	}
	return out
}

// Others is the shape's limits but those named, canonical: shapes
// with the same Others differ only in the named ones.
func Others(machine string, but ...string) string {
	l := Limits(machine)
	for _, b := range but {
		delete(l, b)
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k+"="+l[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// Knees finds the knee of every target and step that ran on two or more
// memory-limited shapes that differ in nothing else (their CPUs and
// disks the same).
func Knees(ts []*results.Target) []Knee {
	type key struct{ target, step, rest string }
	pts := map[key][]KneePoint{}
	var order []key
	for _, t := range ts {
		base, _, _ := strings.Cut(t.Name, "@")
		for _, s := range t.Steps {
			r, ok := MemoryRatio(s)
			if !ok || s.Seconds <= 0 || s.Error != "" {
				continue
			}
			k := key{base, s.Name(), Others(t.Machine, "memory", "cache")}
			if _, seen := pts[k]; !seen {
				order = append(order, k)
			}
			pts[k] = append(pts[k], KneePoint{Machine: t.Machine, Ratio: r, OpsPerS: float64(s.Ops) / s.Seconds})
		}
	}
	var out []Knee
	for _, k := range order {
		p := pts[k]
		if len(p) < 2 {
			continue
		}
		sort.Slice(p, func(i, j int) bool { return p[i].Ratio < p[j].Ratio })
		ref := p[len(p)-1].OpsPerS
		kn := Knee{Target: k.target, Step: k.step, Others: k.rest, Points: p, Ratio: p[len(p)-1].Ratio}
		// The smallest ratio from which every larger one stays within.
		for i := len(p) - 2; i >= 0 && p[i].OpsPerS >= (1-KneeWithin)*ref; i-- {
			kn.Ratio, kn.Found = p[i].Ratio, true
		}
		out = append(out, kn)
	}
	return out
}

// ScalePoint is one shape's throughput at one step, against its CPUs.
type ScalePoint struct {
	CPUs    float64
	OpsPerS float64
	// Efficiency is the throughput's gain over the fewest CPUs' divided
	// by the CPUs' (1: linear; 1 at the fewest).
	Efficiency float64
}

// Scaling is one target and step on two or more shapes that differ only
// in their CPU limit.
type Scaling struct {
	Target, Step, Others string
	Points               []ScalePoint // by CPUs, ascending
}

// Scalings finds, per target and step, its throughput against the CPUs
// of shapes that differ in nothing else, with the scaling efficiency.
func Scalings(ts []*results.Target) []Scaling {
	type key struct{ target, step, rest string }
	pts := map[key][]ScalePoint{}
	var order []key
	for _, t := range ts {
		c, err := strconv.ParseFloat(Limits(t.Machine)["cpus"], 64)
		if err != nil || c <= 0 {
			continue
		}
		base, _, _ := strings.Cut(t.Name, "@")
		for _, s := range t.Steps {
			if s.Seconds <= 0 || s.Error != "" || s.Ops <= 0 {
				continue
			}
			k := key{base, s.Name(), Others(t.Machine, "cpus")}
			if _, seen := pts[k]; !seen {
				order = append(order, k)
			}
			pts[k] = append(pts[k], ScalePoint{CPUs: c, OpsPerS: float64(s.Ops) / s.Seconds})
		}
	}
	var out []Scaling
	for _, k := range order {
		p := pts[k]
		if len(p) < 2 {
			continue
		}
		sort.Slice(p, func(i, j int) bool { return p[i].CPUs < p[j].CPUs })
		for i := range p {
			p[i].Efficiency = (p[i].OpsPerS / p[0].OpsPerS) / (p[i].CPUs / p[0].CPUs)
		}
		out = append(out, Scaling{Target: k.target, Step: k.step, Others: k.rest, Points: p})
	}
	return out
}

// CacheHitRatio is the share of the bytes a step's target read through
// read-like system calls (rchar: files, sockets and pipes alike) that did
// not come from the disk (read_bytes): 1 − read_bytes / rchar over the
// step, from its footprint's own counters (a managed server's process
// tree, else the worker's timed window). false where nothing was read
// that way, the counters are unknown, or more came from the disk than
// went through read() (an engine that reads its files through mmap, as
// LMDB and MoeingADS's data do, or readahead beyond what was asked).
func CacheHitRatio(s *results.Step) (float64, bool) {
	fp := s.Footprint()
	before, after := fp.Before, fp.After
	if s.ServerResources == nil && fp.Timed != nil {
		before, after = fp.Timed.Before, fp.Timed.After
	}
	if !before.IOAvailable || !after.IOAvailable {
		return 0, false
	}
	chars, disk := after.ReadChars-before.ReadChars, after.ReadBytes-before.ReadBytes
	if chars <= 0 || disk > chars {
		// More came from the disk than went through read(): the engine
		// reads through mmap, or readahead outweighs what it asked for;
		// either way this ratio says nothing of its cache.
		return 0, false
	}
	return 1 - max(0, float64(disk)/float64(chars)), true
}
