package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/results"
)

// machines writes what each target used of its machine shape (issue 35),
// step by step, from the shape's cgroup's own counters (the step
// metrics machine_*): CPU against the limit, time throttled, peak memory
// against the limit with its page cache, and the disk I/O the group
// issued. Nothing when no target ran on a machine.
func machines(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	for _, t := range run.Targets {
		if t.Machine != "" {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return
	}
	b.WriteString("## Machines\n\n")
	b.WriteString("Each target ran once per machine shape, its processes held to the shape's limits by the kernel (cgroup v1): an embedded engine's worker (engine and load generator in one process) from its start; a server's process tree from right after it started, its client worker and the coordinator outside. What each used, from its group's own counters over the step: CPU time as cores over the step's wall time, the time its threads waited for quota (summed over CPUs), the peak of its memory (anonymous and page cache together, as the limit counts it) and its page cache at the end, and the bytes it read from and wrote to block devices (writeback of dirty page cache by the kernel's flusher is not charged to it under cgroup v1). The CPU quota holds per 100 ms period: a step of a few periods can show more than the limit.\n\n")
	tab := Table{Head: []string{"target", "step", "throughput", "CPU cores (limit)", "throttled", "peak memory (limit)", "page cache (budget)", "disk read / written", "disk reads / op"}, Left: 2}
	for _, t := range ts {
		for _, s := range t.Steps {
			m := s.Metrics
			if _, ok := m["machine_cpu_seconds"]; !ok {
				if _, ok := m["machine_memory_peak_bytes"]; !ok {
					continue
				}
			}
			thr := "—"
			if s.Seconds > 0 {
				thr = fmt.Sprintf("%.0f ops/s", float64(s.Ops)/s.Seconds)
			}
			cores := "—"
			if v, ok := m["machine_cpu_cores"]; ok {
				cores = fmt.Sprintf("%.2f", v)
				if l, ok := m["machine_cpu_limit_cores"]; ok {
					cores += fmt.Sprintf(" (%s)", trimFloat(l))
				}
			}
			throttled := "—"
			if v, ok := m["machine_cpu_throttled_seconds"]; ok {
				throttled = fmt.Sprintf("%.2f s", v)
			}
			mem := "—"
			if v, ok := m["machine_memory_peak_bytes"]; ok {
				mem = Bytes(int64(v))
				if l, ok := m["machine_memory_limit_bytes"]; ok {
					mem += " (" + Bytes(int64(l)) + ")"
				}
			}
			cache := "—"
			if v, ok := m["machine_page_cache_bytes"]; ok {
				cache = Bytes(int64(v))
				if bu, ok := m["machine_cache_budget_bytes"]; ok {
					cache += " (" + Bytes(int64(bu))
					if hi := m["machine_cache_budget_max_bytes"]; hi > bu {
						cache += " to " + Bytes(int64(hi))
					}
					cache += ")"
				}
			}
			disk, perOp := "—", "—"
			if r, ok := m["machine_disk_read_bytes"]; ok {
				disk = Bytes(int64(r)) + " / " + Bytes(int64(m["machine_disk_write_bytes"]))
			}
			if r, ok := m["machine_disk_reads"]; ok && s.Ops > 0 {
				perOp = fmt.Sprintf("%.3g", r/float64(s.Ops))
			}
			step := fmt.Sprintf("%s %s N=%s", s.Workload, s.Phase, Count(s.N))
			tab.Rows = append(tab.Rows, []string{cell(t.Title), cell(step), thr, cores, throttled, mem, cache, disk, perOp})
		}
		for _, na := range t.NA {
			if strings.HasPrefix(na.Reason, "machine ") {
				tab.Rows = append(tab.Rows, []string{cell(t.Title), cell(fmt.Sprintf("%s %s N=%s", na.Workload, na.Phase, Count(na.N))), cell("n/a: " + na.Reason), "", "", "", "", "", ""})
			}
		}
	}
	tab.Write(b)
	knees(b, ts)
	cpuScaling(b, ts)
}

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

// memoryRatio is a step's memory per byte of data: a cache shape's
// budget over the data at its start (cache=R: R), else the memory limit
// over the data's bytes on disk at its end; false without a memory limit
// or data.
func memoryRatio(s *results.Step) (float64, bool) {
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

// shapeLimits reads a target's machine as results.json writes it
// ("name=x,cpus=0.5,memory=256MiB") into its limits, name left out.
func shapeLimits(machine string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(machine, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "name" {
			out[k] = v
		}
	}
	return out
}

// otherLimits is the shape's limits but those named, canonical: shapes
// with the same otherLimits differ only in the named ones.
func otherLimits(machine string, but ...string) string {
	l := shapeLimits(machine)
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
			r, ok := memoryRatio(s)
			if !ok || s.Seconds <= 0 || s.Error != "" {
				continue
			}
			k := key{base, s.Name(), otherLimits(t.Machine, "memory", "cache")}
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

func knees(b *strings.Builder, ts []*results.Target) {
	ks := Knees(ts)
	if len(ks) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### The knee: how little memory each step needs\n\nPer target and step, its throughput on each shape against the memory the shape gave it per byte of its data (a cache shape: its page-cache budget over the data at the step's start; otherwise the memory limit over the data's bytes on disk at the end), and the **knee**: the smallest ratio at which the throughput stays within %.0f%% of the shape with the most memory per byte (not an unlimited run: the least limited one here). Below it the data no longer fits.\n\n", KneeWithin*100)
	tab := Table{Head: []string{"target", "step", "memory / data: throughput", "knee"}, Left: 3}
	for _, k := range ks {
		var parts []string
		for _, p := range k.Points {
			parts = append(parts, fmt.Sprintf("%s: %.0f ops/s", trimFloat(p.Ratio), p.OpsPerS))
		}
		knee := "at or below " + trimFloat(k.Points[0].Ratio)
		if k.Ratio > k.Points[0].Ratio || !k.Found {
			knee = trimFloat(k.Ratio)
			if !k.Found {
				knee = "above " + trimFloat(k.Points[len(k.Points)-2].Ratio) + " (every smaller shape fell more than " + fmt.Sprintf("%.0f%%", KneeWithin*100) + ")"
			}
		}
		target := k.Target
		if k.Others != "" {
			target += " (" + k.Others + ")"
		}
		tab.Rows = append(tab.Rows, []string{cell(target), cell(k.Step), cell(strings.Join(parts, "; ")), cell(knee)})
	}
	tab.Write(b)
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
		c, err := strconv.ParseFloat(shapeLimits(t.Machine)["cpus"], 64)
		if err != nil || c <= 0 {
			continue
		}
		base, _, _ := strings.Cut(t.Name, "@")
		for _, s := range t.Steps {
			if s.Seconds <= 0 || s.Error != "" || s.Ops <= 0 {
				continue
			}
			k := key{base, s.Name(), otherLimits(t.Machine, "cpus")}
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

func cpuScaling(b *strings.Builder, ts []*results.Target) {
	sc := Scalings(ts)
	if len(sc) == 0 {
		return
	}
	b.WriteString("\n### Throughput against vCPUs\n\nPer target and step, its throughput on each shape that differs from the others only in its CPU limit, and the scaling efficiency: the throughput's gain over the fewest CPUs' divided by the CPUs' gain (1.00: linear). An embedded engine's load generator runs in its worker, inside the limit.\n\n")
	tab := Table{Head: []string{"target", "step", "CPUs: throughput (efficiency)"}, Left: 3}
	for _, s := range sc {
		var parts []string
		for _, p := range s.Points {
			parts = append(parts, fmt.Sprintf("%s: %.0f ops/s (%.2f)", trimFloat(p.CPUs), p.OpsPerS, p.Efficiency))
		}
		target := s.Target
		if s.Others != "" {
			target += " (" + s.Others + ")"
		}
		tab.Rows = append(tab.Rows, []string{cell(target), cell(s.Step), cell(strings.Join(parts, "; "))})
	}
	tab.Write(b)
}

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
