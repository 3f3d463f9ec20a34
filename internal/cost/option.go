package cost

import (
	"fmt"
	"math"
	"regexp"
	"storebench/internal/results"
	"strings"
)

// option is what machine type m takes to carry load over items: shards
// per resource, the count (shards × replicas), its monthly cost and the
// deciding resource; Reason when it cannot.
func option(m Machine, mix []mixPart, items, load float64, sz results.Sizing) results.Option {
	o := results.Option{Machine: m.Type()}
	if sz.P99 > 0 {
		if p := p99At(mix, m.VCPUs); p > sz.P99 {
			o.Reason = fmt.Sprintf("p99 %s measured (at up to %s vCPUs) is above the %s allowed", secs(p), trim(maxVCPUs(mix)), secs(sz.P99))
			return o
		}
	}
	o.P99 = p99At(mix, m.VCPUs)
	o.Needs = []results.Need{cpuNeed(m, mix, load, sz.Utilisation), memoryNeed(m, mix, items), diskNeed(m, mix, items), ioNeed(m, mix, load)}
	for _, n := range o.Needs {
		if n.Shards < 0 {
			o.Reason = n.Resource + ": " + n.Detail
			return o
		}
		if n.Shards > o.Shards {
			o.Shards, o.Deciding = n.Shards, n.Resource
		}
	}
	o.Count = o.Shards * sz.Replicas
	if o.Count > sz.MaxMachines {
		o.Reason = fmt.Sprintf("%d machines needed (%s decides), more than the %d allowed", o.Count, o.Deciding, sz.MaxMachines)
		return o
	}
	o.Monthly = float64(o.Count) * m.Monthly()
	o.Extent = extent(m, mix, items/float64(o.Shards))
	return o
}

func maxVCPUs(mix []mixPart) float64 {
	var v float64
	for _, m := range mix {
		v = math.Max(v, m.Step.MaxVCPUs)
	}
	return v
}

func cpuNeed(m Machine, mix []mixPart, load, util float64) results.Need {
	c := capacity(mix, m.VCPUs, util)
	if c <= 0 {
		return results.Need{Resource: "CPU", Shards: -1, Detail: "no throughput measured"}
	}
	return results.Need{Resource: "CPU", Shards: ceil(load / c),
		Detail: fmt.Sprintf("%.0f ops/s per machine at %.0f%% of its %s vCPUs", c, util*100, trim(m.VCPUs))}
}

// memoryNeed: each shard's resident memory and the page cache its data
// needs (the knee: the memory-to-data ratio measured to keep the
// throughput; 1, every byte cached, where no memory shape ran).
func memoryNeed(m Machine, mix []mixPart, items float64) results.Need {
	var a, b float64
	for _, p := range mix {
		r := kneeOf(p.Step)
		a = math.Max(a, p.Step.RSS.A+r*p.Step.Disk.A)
		b = math.Max(b, p.Step.RSS.B+r*p.Step.Disk.B)
	}
	usable := float64(m.RAMBytes) - OSReserve
	if usable < float64(m.RAMBytes)/2 {
		usable = float64(m.RAMBytes) / 2
	}
	if a >= usable {
		return results.Need{Resource: "memory", Shards: -1, Detail: fmt.Sprintf("the engine's own %s exceeds the %s usable", bytes(a), bytes(usable))}
	}
	if b <= 0 {
		return results.Need{Resource: "memory", Shards: 1, Detail: "no growth with data measured"}
	}
	return results.Need{Resource: "memory", Shards: ceil(items * b / (usable - a)),
		Detail: fmt.Sprintf("%s + %.0f B per item, of %s usable", bytes(a), b, bytes(usable))}
}

func kneeOf(sm *StepModel) float64 {
	if sm.Knee > 0 {
		return sm.Knee
	}
	return 1
}

func diskNeed(m Machine, mix []mixPart, items float64) results.Need {
	var a, b float64
	for _, p := range mix {
		a, b = math.Max(a, p.Step.Disk.A), math.Max(b, p.Step.Disk.B)
	}
	if m.DiskBytes <= 0 {
		return results.Need{Resource: "disk", Shards: -1, Detail: "no local disk (network storage is not in the catalog)"}
	}
	room := float64(m.DiskBytes)*DiskFill - a
	if room <= 0 {
		return results.Need{Resource: "disk", Shards: -1, Detail: fmt.Sprintf("the engine's own %s fills %.0f%% of %s", bytes(a), DiskFill*100, bytes(float64(m.DiskBytes)))}
	}
	if b <= 0 {
		return results.Need{Resource: "disk", Shards: 1, Detail: "no growth with data measured"}
	}
	return results.Need{Resource: "disk", Shards: ceil(items * b / room),
		Detail: fmt.Sprintf("%.0f B per item on disk, %.0f%% of %s", b, DiskFill*100, bytes(float64(m.DiskBytes)))}
}

func ioNeed(m Machine, mix []mixPart, load float64) results.Need {
	var io float64
	for _, p := range mix {
		if p.Step.IOPerOp < 0 {
			return results.Need{Resource: "IOPS", Detail: "block I/O not measured: not checked"}
		}
		io += p.Share * p.Step.IOPerOp
	}
	if m.DiskIOPS <= 0 {
		return results.Need{Resource: "IOPS", Detail: fmt.Sprintf("%.3g I/Os per op; the catalog gives no IOPS for %s: not checked", io, m.Name)}
	}
	return results.Need{Resource: "IOPS", Shards: ceil(load * io / m.DiskIOPS),
		Detail: fmt.Sprintf("%.3g I/Os per op against %.0f IOPS", io, m.DiskIOPS)}
}

// extent says how far an option reaches past what was measured.
func extent(m Machine, mix []mixPart, perShard float64) []string {
	var out []string
	if v := maxVCPUs(mix); m.VCPUs > v {
		out = append(out, fmt.Sprintf("%s measured, %s projected (×%.3g)", VCPUs(v), trim(m.VCPUs), m.VCPUs/v))
	}
	var n int64
	for _, p := range mix {
		if p.Step.MaxN > n {
			n = p.Step.MaxN
		}
	}
	if n > 0 && perShard > float64(n) {
		out = append(out, fmt.Sprintf("%.3g items measured, %.3g per machine projected (×%.3g)", float64(n), perShard, perShard/float64(n)))
	}
	return out
}

// nextMonth is the first month, under the sizing's growth, in which
// machine type m needs more than count machines (0: not within Horizon).
func nextMonth(m Machine, count int, mix []mixPart, items float64, sz results.Sizing) int {
	if sz.GrowthPerMonth <= 0 {
		return 0
	}
	grown := sz
	grown.MaxMachines, grown.P99 = math.MaxInt32, 0
	for month := 1; month <= Horizon; month++ {
		g := math.Pow(1+sz.GrowthPerMonth, float64(month))
		next := option(m, mix, items*g, sz.Load*g, grown)
		if next.Reason != "" || next.Count > count {
			return month
		}
	}
	return 0
}

// inputs are the measured figures a target's plan rests on.
func inputs(mix []mixPart) []string {
	var out []string
	for _, p := range mix {
		sm := p.Step
		unit := ""
		if sm.Unit != "" {
			unit = ", one op: " + sm.Unit
		}
		s := fmt.Sprintf("%s (%.0f%% of the load%s): %s; %.0f B on disk and %.0f B resident per item (%d %s up to %s items)",
			p.Kind, p.Share*100, unit, sm.Describe(), sm.Disk.B, sm.RSS.B, sm.Disk.Points, plural(sm.Disk.Points, "size", "sizes"), trim(float64(sm.MaxN)))
		if sm.Knee > 0 {
			s += fmt.Sprintf("; knee %s of the data in memory", trim(sm.Knee))
		} else {
			s += "; no memory shape ran: every byte cached assumed"
		}
		if sm.IOPerOp >= 0 {
			s += fmt.Sprintf("; %.3g I/Os per op (%s)", sm.IOPerOp, sm.IOScope)
		}
		out = append(out, s)
	}
	return out
}

// heldOut gathers the mix's held-out checks and the error of what the
// cost rests on: the mix's throughput (each kind its share, as capacity
// weighs them) predicted against measured on the held-out shape, and,
// where the sizing bounds the p99, the largest p99 error (the p99 is
// projected only for that bound).
func heldOut(p *results.TargetPlan, mix []mixPart, withP99 bool) {
	var predInv, measInv float64
	for _, m := range mix {
		h := m.Step.HeldOut
		if h == nil {
			continue
		}
		p.HeldOut = append(p.HeldOut, *h)
		predInv += m.Share / h.PredictedOps
		measInv += m.Share / h.MeasuredOps
		if withP99 {
			p.HeldOutError = math.Max(p.HeldOutError, math.Abs(h.P99Error()))
		}
	}
	if len(p.HeldOut) == 0 {
		p.Warn = "not checked: the run measured no two CPU-limited shapes of the same step (run with --machine cpus=0.25 --machine cpus=0.5 --machine cpus=1)"
		return
	}
	p.HeldOutError = math.Max(p.HeldOutError, math.Abs(measInv/predInv-1))
	what := "the mix's throughput"
	if withP99 {
		what = "the mix's throughput or a p99"
	}
	if p.HeldOutError > HeldOutWarn {
		p.Warn = fmt.Sprintf("the model missed %s on a measured shape it did not see by %.0f%% (more than %.0f%%): take this cost as rough", what, p.HeldOutError*100, HeldOutWarn*100)
	}
}

// noMachine says why no machine of the catalog carries the load: each
// kind of reason once (its first machine's words), with the machines it
// stopped.
func noMachine(cat Catalog, rejected []results.Option) string {
	by := map[string][]string{}
	first := map[string]string{}
	var order []string
	for _, o := range rejected {
		key := digits.ReplaceAllString(o.Reason, "#")
		if _, ok := by[key]; !ok {
			order = append(order, key)
			first[key] = o.Reason
		}
		by[key] = append(by[key], o.Machine.Name)
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s (%s)", first[k], strings.Join(by[k], ", ")))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("catalog %s has no machines", cat.Name)
	}
	return fmt.Sprintf("no machine of catalog %s carries it: %s", cat.Name, strings.Join(parts, "; "))
}

var digits = regexp.MustCompile(`[0-9][0-9.,]*`)

func ceil(x float64) int {
	if x <= 0 {
		return 1
	}
	if x > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Ceil(x - 1e-9))
}

func secs(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.2f ms", s*1e3)
	}
	return fmt.Sprintf("%.0f µs", s*1e6)
}

func bytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}

// Type is the machine as a plan records it.
func (m Machine) Type() results.MachineType {
	return results.MachineType{Name: m.Name, VCPUs: m.VCPUs, RAMBytes: m.RAMBytes, DiskBytes: m.DiskBytes,
		DiskIOPS: m.DiskIOPS, Hourly: m.Monthly() / HoursPerMonth, Source: m.Source, Date: m.Date}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// VCPUs writes a count of vCPUs: "1 vCPU", "0.5 vCPUs".
func VCPUs(v float64) string {
	if v == 1 {
		return "1 vCPU"
	}
	return trim(v) + " vCPUs"
}
