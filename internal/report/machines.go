package report

import (
	"fmt"
	"strings"

	"storebench/internal/results"
	"storebench/internal/shapes"
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
	b.WriteString("Each target ran once per machine shape, its processes held to the shape's limits by the kernel (cgroup v1): an embedded engine's worker (engine and load generator in one process) from its start; a server's process tree from right after it started, its client worker and the coordinator outside. What each used, from its group's own counters over the step: CPU time as cores over the time between the group's two readings (as the step started and right after it), the time its threads waited for quota (summed over CPUs), the peak of its memory (anonymous and page cache together, as the limit counts it) and its page cache at the end, and the bytes it read from and wrote to block devices (writeback of dirty page cache by the kernel's flusher is not charged to it under cgroup v1); the page cache hits are the share of the bytes its processes read through read-like calls (sockets and pipes included) that did not come from the disk, 1 − read_bytes / rchar (none where more came from the disk than through read(): an engine reading through mmap, or readahead beyond what it asked). The CPU quota holds per 100 ms period: a step of a few periods can show more than the limit.\n\n")
	tab := Table{Head: []string{"target", "step", "throughput", "CPU cores (limit)", "throttled", "peak memory (limit)", "page cache (budget)", "disk read / written", "disk reads / op", "page cache hits"}, Left: 2}
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
			cache := pageCacheCell(m)
			disk, perOp := "—", "—"
			if r, ok := m["machine_disk_read_bytes"]; ok {
				disk = Bytes(int64(r)) + " / " + Bytes(int64(m["machine_disk_write_bytes"]))
			}
			if r, ok := m["machine_disk_reads"]; ok && s.Ops > 0 {
				perOp = fmt.Sprintf("%.3g", r/float64(s.Ops))
			}
			hits := "—"
			if h, ok := shapes.CacheHitRatio(s); ok {
				hits = fmt.Sprintf("%.1f%%", h*100)
			}
			step := fmt.Sprintf("%s %s N=%s", s.Workload, s.Phase, Count(s.N))
			tab.Rows = append(tab.Rows, []string{cell(t.Title), cell(step), thr, cores, throttled, mem, cache, disk, perOp, hits})
		}
		for _, na := range t.NA {
			if strings.HasPrefix(na.Reason, "machine ") {
				tab.Rows = append(tab.Rows, []string{cell(t.Title), cell(fmt.Sprintf("%s %s N=%s", na.Workload, na.Phase, Count(na.N))), cell("n/a: " + na.Reason), "", "", "", "", "", "", ""})
			}
		}
	}
	tab.Write(b)
	knees(b, ts)
	cpuScaling(b, ts)
}

// pageCacheCell is a step's "page cache (budget)" cell: the page cache
// at the end, then the budget it was held to (a range when the budget
// grew, and a note when it is several nodes' sum), so the reader can tell
// a cache that filled its budget from one that had room; "—" when the
// step reported none.
func pageCacheCell(m map[string]float64) string {
	cache := "—"
	if v, ok := m["machine_page_cache_bytes"]; ok {
		cache = Bytes(int64(v))
		if bu, ok := m["machine_cache_budget_bytes"]; ok {
			cache += " (" + Bytes(int64(bu))
			if hi := m["machine_cache_budget_max_bytes"]; hi > bu {
				cache += " to " + Bytes(int64(hi))
			}
			if n := budgetNodes(m); n > 1 {
				cache += fmt.Sprintf(": %d nodes' sum", n)
			}
			cache += ")"
		}
	}
	return cache
}

// budgetNodes is how many nodes of a cluster held a page-cache budget
// of their own in the step (machine_node<i>_cache_budget_bytes): its
// page cache and budget are then the nodes' sums.
func budgetNodes(m map[string]float64) int {
	n := 0
	for {
		if _, ok := m[fmt.Sprintf("machine_node%d_cache_budget_bytes", n+1)]; !ok {
			return n
		}
		n++
	}
}

func knees(b *strings.Builder, ts []*results.Target) {
	ks := shapes.Knees(ts)
	if len(ks) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### The knee: how little memory each step needs\n\nPer target and step, its throughput on each shape against the memory the shape gave it per byte of its data (a cache shape: its page-cache budget over the data at the step's start; otherwise the memory limit over the data's bytes on disk at the end), and the **knee**: the smallest ratio at which the throughput stays within %.0f%% of the shape with the most memory per byte (not an unlimited run: the least limited one here). Below it the data no longer fits.\n\n", shapes.KneeWithin*100)
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
				knee = "above " + trimFloat(k.Points[len(k.Points)-2].Ratio) + " (every smaller shape fell more than " + fmt.Sprintf("%.0f%%", shapes.KneeWithin*100) + ")"
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

func cpuScaling(b *strings.Builder, ts []*results.Target) {
	sc := shapes.Scalings(ts)
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
