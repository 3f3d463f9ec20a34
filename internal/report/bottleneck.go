package report

import (
	"fmt"
	"sort"
	"strings"

	"storebench/internal/results"
)

// Bottleneck is the resource a phase was limited by on one target, read
// from the measured resource series, with the figures that show it.
type Bottleneck struct {
	// Resource is one of: rate (kept up with an open loop's offered rate:
	// nothing saturated), cpu (all cores busy), core (one core busy: a
	// single-threaded path), disk-write, disk-read, memory, latency
	// (neither CPU nor disk busy: round trips, fsync waits of a light
	// load, locks), short (too short to tell).
	Resource string
	Text     string
	// The disk figures read: ReadBytes and WriteBytes were counted over
	// Seconds (one interval, see ioWindow), and the rates are their
	// quotients. Zero for a step too short to tell.
	Seconds               float64
	ReadBytes, WriteBytes int64
	ReadRate, WriteRate   float64
	Source                string
}

// Thresholds of the classification, in one place so docs/reports.md can
// state them.
const (
	busyShare     = 0.85 // of all cores: the CPU is saturated
	oneCoreBusy   = 85.0 // percent of one core: a single thread is
	keptUpShare   = 0.97 // of the offered rate: an open loop kept up
	diskBusyBytes = 8 << 20
	memNearShare  = 0.90 // of the host's RAM
	shortSeconds  = 0.05
)

// ioWindow is the interval a step's rates are read over, with what was
// counted in it. Every rate is bytes over the seconds of the same two
// samples: the timed part alone where the worker measured it (so the
// bytes written while building the balance view are not divided by the
// duration of the reads), else the whole step as sampled (a managed
// server's own counters, sampled around the whole step; results of older
// versions).
type ioWindow struct {
	seconds    float64
	cpu        float64
	rd, wr     int64
	source     string
	measuredIO bool
}

func windowOf(r *results.Resources) ioWindow {
	if t := r.Timed; t != nil && t.Seconds > 0 {
		w := ioWindow{seconds: t.Seconds, cpu: t.CPUPercent, source: "the target's I/O"}
		switch {
		case t.Device != "":
			w.rd, w.wr, w.source, w.measuredIO = t.DeviceReadBytes, t.DeviceWriteBytes, "device "+t.Device, true
		case t.Before.IOAvailable && t.After.IOAvailable:
			w.rd, w.wr, w.measuredIO = t.After.ReadBytes-t.Before.ReadBytes, t.After.WriteBytes-t.Before.WriteBytes, true
		}
		return w
	}
	w := ioWindow{seconds: r.Interval(), cpu: r.CPUPercent, source: "the target's I/O"}
	// What reached the device, when measured: a process's write_bytes
	// counts pages as they are dirtied, many times over for a memory-mapped
	// B+tree. Otherwise the target's own counters.
	switch {
	case r.Device != "":
		w.rd, w.wr, w.source, w.measuredIO = r.DeviceReadBytes, r.DeviceWriteBytes, "device "+r.Device, true
	case r.After.IOAvailable && r.Before.IOAvailable:
		w.rd, w.wr, w.measuredIO = r.After.ReadBytes-r.Before.ReadBytes, r.After.WriteBytes-r.Before.WriteBytes, true
	}
	return w
}

// Classify finds the bottleneck of one step.
func Classify(run *results.Run, s *results.Step) Bottleneck {
	if s.Seconds < shortSeconds {
		return Bottleneck{Resource: "short", Text: "too short to tell"}
	}
	cores := float64(max(run.Host.LogicalCPUs, 1)) * 100
	fp := s.Footprint()
	win := windowOf(&fp)
	tcpu := win.cpu
	ccpu := 0.0
	who := fmt.Sprintf("%.0f%% CPU", tcpu)
	if s.ServerResources != nil {
		ccpu = windowOf(&s.Resources).cpu
		who = fmt.Sprintf("server %.0f%% + client %.0f%% CPU", tcpu, ccpu)
	}
	// A rate over less than shortSeconds is not a figure (a few pages
	// flushed by anyone in a millisecond read as gigabytes per second).
	var rd, wr float64
	rated := win.measuredIO && win.seconds >= shortSeconds
	if rated {
		rd, wr = float64(win.rd)/win.seconds, float64(win.wr)/win.seconds
	}
	bn := func(resource, text string) Bottleneck {
		b := Bottleneck{Resource: resource, Text: text, Source: win.source, ReadRate: rd, WriteRate: wr}
		if rated {
			b.Seconds, b.ReadBytes, b.WriteBytes = win.seconds, win.rd, win.wr
		}
		return b
	}
	rate := float64(s.Ops) / s.Seconds
	if s.Rate > 0 && rate >= keptUpShare*s.Rate {
		return bn("rate", fmt.Sprintf("none: kept up with %.0f ops/s (%s)", s.Rate, who))
	}
	mem := Mem(fp.After)
	if total := run.Host.MemTotalBytes; total > 0 && float64(mem+fp.CacheResident) > memNearShare*float64(total) {
		return bn("memory", fmt.Sprintf("memory: %s resident + %s cached of %s RAM", Bytes(mem), Bytes(fp.CacheResident), Bytes(total)))
	}
	if tcpu+ccpu >= busyShare*cores {
		return bn("cpu", fmt.Sprintf("CPU: all %d cores busy (%s)", run.Host.LogicalCPUs, who))
	}
	if tcpu >= oneCoreBusy || ccpu >= oneCoreBusy {
		if max(tcpu, ccpu) < 115 {
			return bn("core", fmt.Sprintf("CPU: one core busy (%s), a single-threaded path", who))
		}
		return bn("core", fmt.Sprintf("CPU: %.1f of %d cores busy (%s)", (tcpu+ccpu)/100, run.Host.LogicalCPUs, who))
	}
	if rd >= diskBusyBytes {
		cached := ""
		if fp.CacheTotal > 0 {
			cached = fmt.Sprintf(", %.0f%% of its files cached", 100*float64(fp.CacheResident)/float64(fp.CacheTotal))
		}
		return bn("disk-read", fmt.Sprintf("disk reads: %s/s (%s)%s (%s)", Bytes(int64(rd)), win.source, cached, who))
	}
	if wr >= diskBusyBytes {
		return bn("disk-write", fmt.Sprintf("disk writes: %s/s (%s; %s)", Bytes(int64(wr)), win.source, who))
	}
	what := "round trips, fsync waits or locks"
	if s.ServerResources == nil {
		what = "fsync waits, locks or sleeps"
	}
	return bn("latency", fmt.Sprintf("waiting: neither CPU (%s) nor disk (%s/s on %s) busy; %s", who, Bytes(int64(rd+wr)), win.source, what))
}

// bottlenecks renders, for each phase at its largest size, what limited
// each target.
func bottlenecks(b *strings.Builder, run *results.Run) {
	type key struct{ workload, phase string }
	largest := map[key]int64{}
	var order []key
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			k := key{s.Workload, s.Phase}
			n, seen := largest[k]
			if !seen {
				order = append(order, k)
			}
			if !seen || s.N > n {
				largest[k] = s.N
			}
		}
	}
	// A phase no target could run still has its row, all n/a.
	for _, t := range run.Targets {
		for _, x := range t.NA {
			k := key{x.Workload, x.Phase}
			if _, seen := largest[k]; !seen {
				order = append(order, k)
				largest[k] = x.N
			}
		}
	}
	if len(order) == 0 {
		return
	}
	var ts []*results.Target
	head := []string{"Phase"}
	for _, t := range run.Targets {
		if len(t.Steps) > 0 || len(t.NA) > 0 {
			ts = append(ts, t)
			head = append(head, t.Title)
		}
	}
	tab := Table{Head: head}
	counts := map[string]map[string]int{}
	for _, k := range order {
		n := largest[k]
		row := []string{fmt.Sprintf("%s %s at %s", k.workload, k.phase, Count(n))}
		for _, t := range ts {
			s := t.Find(k.workload, k.phase, n)
			if s == nil || s.Error != "" {
				row = append(row, cell(missing(t, k.workload, k.phase, n)))
				continue
			}
			bn := Classify(run, s)
			row = append(row, cell(bn.Text))
			if counts[t.Title] == nil {
				counts[t.Title] = map[string]int{}
			}
			if bn.Resource != "short" {
				counts[t.Title][bn.Resource]++
			}
		}
		tab.Rows = append(tab.Rows, row)
	}
	b.WriteString("## Bottlenecks\n\n")
	fmt.Fprintf(b, "What limited each target in each phase at its largest size, from the measured CPU (100%% = one core, %d cores here), I/O that reached the device holding its data (all processes, the target nearly alone on it) and memory of the target (a server's own process tree, apart from the client). CPU and I/O rates are over the timed part of the phase alone, its setup (such as building the balance view) left out; a server's own figures are over the whole step, setup included, bytes and time alike. Rules: an open loop that kept up was limited by nothing; ≥ %.0f%% of all cores busy is CPU; one process at ≥ %.0f%% of a core is a single-threaded path; ≥ %s/s read or written is the disk; otherwise the time went to waiting.\n\n",
		run.Host.LogicalCPUs, busyShare*100, oneCoreBusy, Bytes(diskBusyBytes))
	tab.Write(b)
	bottleneckSummary(b, ts, counts)
}

// bottleneckSummary writes one sentence per target naming the resource
// that limited most of its phases, so a reader gets the gist of the table
// without reading every cell; counts holds, per target title, how many
// phases each resource limited.
func bottleneckSummary(b *strings.Builder, ts []*results.Target, counts map[string]map[string]int) {
	var sum []string
	for _, t := range ts {
		c := counts[t.Title]
		var res []string
		for r := range c {
			res = append(res, r)
		}
		sort.Slice(res, func(i, j int) bool { return c[res[i]] > c[res[j]] || c[res[i]] == c[res[j]] && res[i] < res[j] })
		if len(res) > 0 {
			total := 0
			for _, x := range c {
				total += x
			}
			sum = append(sum, fmt.Sprintf("%s: mostly %s (%d of %d phases long enough to tell)", t.Title, resourceWords[res[0]], c[res[0]], total))
		}
	}
	if len(sum) > 0 {
		b.WriteString(strings.Join(sum, "; ") + ".\n\n")
	}
}

var resourceWords = map[string]string{
	"rate": "not saturated", "cpu": "CPU-bound", "core": "CPU-bound below all cores",
	"disk-write": "bound by disk writes", "disk-read": "bound by disk reads",
	"memory": "short of memory", "latency": "waiting (neither CPU nor disk busy)",
}
