package report

import (
	"fmt"
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
	tab := Table{Head: []string{"target", "step", "throughput", "CPU cores (limit)", "throttled", "peak memory (limit)", "page cache", "disk read / written"}, Left: 2}
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
			}
			disk := "—"
			if r, ok := m["machine_disk_read_bytes"]; ok {
				disk = Bytes(int64(r)) + " / " + Bytes(int64(m["machine_disk_write_bytes"]))
			}
			step := fmt.Sprintf("%s %s N=%s", s.Workload, s.Phase, Count(s.N))
			tab.Rows = append(tab.Rows, []string{cell(t.Title), cell(step), thr, cores, throttled, mem, cache, disk})
		}
		for _, na := range t.NA {
			if strings.HasPrefix(na.Reason, "machine ") {
				tab.Rows = append(tab.Rows, []string{cell(t.Title), cell(fmt.Sprintf("%s %s N=%s", na.Workload, na.Phase, Count(na.N))), cell("n/a: " + na.Reason), "", "", "", "", ""})
			}
		}
	}
	tab.Write(b)
}

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
