package report

import (
	"fmt"
	"sort"
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
	Points       []KneePoint // by ratio, ascending
	Ratio        float64
	Found        bool
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

// Knees finds the knee of every target and step that ran on two or more
// memory-limited shapes.
func Knees(ts []*results.Target) []Knee {
	type key struct{ target, step string }
	pts := map[key][]KneePoint{}
	var order []key
	for _, t := range ts {
		base, _, _ := strings.Cut(t.Name, "@")
		for _, s := range t.Steps {
			r, ok := memoryRatio(s)
			if !ok || s.Seconds <= 0 || s.Error != "" {
				continue
			}
			k := key{base, s.Name()}
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
		kn := Knee{Target: k.target, Step: k.step, Points: p, Ratio: p[len(p)-1].Ratio}
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
		tab.Rows = append(tab.Rows, []string{cell(k.Target), cell(k.Step), cell(strings.Join(parts, "; ")), cell(knee)})
	}
	tab.Write(b)
}

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
