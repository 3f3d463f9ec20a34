package report

import (
	"fmt"
	"strings"

	"storebench/internal/results"
)

func init() {
	RegisterSection("ads-rw", adsRW)
	RegisterHeadline("ads-rw", Headline{Figure: "ads-rw.create", Metric: "seconds", What: "seconds to write the N pairs in blocks, a commit per block"})
}

// adsRW renders the seed 001 basic read & write table: rows are targets,
// columns the seed's measurements, one table per ladder size.
func adsRW(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	for _, t := range run.Targets {
		if takesPart(t, "ads-rw") {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return
	}
	for _, n := range run.Ladder {
		var c *results.Step
		for _, t := range ts {
			if c = t.Find("ads-rw", "create", n); c != nil {
				break
			}
		}
		if c == nil {
			continue
		}
		reads := int64(0)
		readers := 0.0
		for _, t := range ts {
			if s := t.Find("ads-rw", "read-parallel", n); s != nil {
				reads, readers = s.Ops, s.Metrics["readers"]
				break
			}
		}
		fmt.Fprintf(b, "## Basic read & write: %s pairs in %.0f blocks of %.0f\n\n", Count(n), c.Metrics["blocks"], c.Metrics["block_size"])
		fmt.Fprintf(b, "Creation: %s fresh key-value pairs written in blocks, one commit per block (a root hash per block on the authenticated stores; one atomic batch per block on the plain engines). "+
			"Size: the disk the store's files take after creation (blocks allocated, like `du`). "+
			"Reads: %s random reads of written keys per phase, every value checked, by one reader (serial) and by %.0f concurrent readers (parallel). "+
			"RSS: the peak resident memory of the target's process over the whole test (VmHWM). MiB = 2^20 bytes.\n\n", Count(n), Count(reads), readers)
		tab := Table{Head: []string{"", "Time used in creation (s)", "Size of the database (MiB)", "Parallel read time (s)", "Serial read time (s)", "Peak RSS (MiB)"}}
		for _, t := range ts {
			if why := t.NotApplicable("ads-rw", "", n); why != "" {
				tab.Rows = append(tab.Rows, naRow(t.Title, why, 5))
				continue
			}
			create := t.Find("ads-rw", "create", n)
			par := t.Find("ads-rw", "read-parallel", n)
			ser := t.Find("ads-rw", "read-serial", n)
			tab.Rows = append(tab.Rows, []string{t.Title, createCell(create), diskCell(create), secondsCell(par), secondsCell(ser), peakRSSCell(create, ser, par)})
		}
		tab.write(b)

		b.WriteString("Details: write rate and time spent in commits, read latency (p50 / p99 per read), and the root hash after the last block (first 16 hex digits; equal roots mean equal state, and a rerun with the same seed gives the same roots).\n\n")
		tab = Table{Head: []string{"", "Pairs written per s", "Commit time (s)", "Serial read p50 / p99", "Parallel read p50 / p99", "Root after the last block"}}
		for _, t := range ts {
			if why := t.NotApplicable("ads-rw", "", n); why != "" {
				tab.Rows = append(tab.Rows, naRow(t.Title, why, 5))
				continue
			}
			create := t.Find("ads-rw", "create", n)
			par := t.Find("ads-rw", "read-parallel", n)
			ser := t.Find("ads-rw", "read-serial", n)
			rate, commit := "—", "—"
			if create != nil && create.Seconds > 0 {
				rate = fmt.Sprintf("%.0f", create.Metrics["pairs_per_s"])
				commit = secs(create.Metrics["commit_seconds"])
			}
			tab.Rows = append(tab.Rows, []string{t.Title, rate, commit, latencyCell(ser), latencyCell(par), rootCell(create)})
		}
		tab.write(b)
	}
}

// createCell is the creation time, saying so when the step was cut short.
func createCell(s *results.Step) string {
	if s == nil {
		return "—"
	}
	out := secs(s.Seconds)
	if s.Partial || s.Error != "" {
		out += fmt.Sprintf(" (stopped after %d of %.0f blocks)", s.Ops, s.Metrics["blocks"])
	}
	return out
}

func secondsCell(s *results.Step) string {
	if s == nil {
		return "—"
	}
	out := secs(s.Seconds)
	if s.Partial || s.Error != "" {
		out += " (stopped)"
	}
	return out
}

func diskCell(s *results.Step) string {
	if s == nil {
		return "—"
	}
	return MiB(s.Footprint().DiskAllocated)
}

func latencyCell(s *results.Step) string {
	if s == nil || s.Latency.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%s / %s", Latency(s.Latency.P50), Latency(s.Latency.P99))
}

func rootCell(s *results.Step) string {
	switch {
	case s == nil:
		return "—"
	case s.Root == "":
		return "none (plain engine)"
	case len(s.Root) > 16:
		return "`" + s.Root[:16] + "`"
	}
	return "`" + s.Root + "`"
}

// peakRSSCell is the highest resident memory of the target's process seen
// by the given steps: the high-water mark when the process reports one,
// else the highest sample.
func peakRSSCell(steps ...*results.Step) string {
	var peak int64
	for _, s := range steps {
		if s == nil {
			continue
		}
		f := s.Footprint()
		peak = max(peak, f.After.PeakRSSBytes, stepRSS(s))
	}
	if peak == 0 {
		return "—"
	}
	return MiB(peak)
}

// stepRSS is the highest memory sampled during a step (the per-second
// series and the snapshots around it): the seed's memory per task.
func stepRSS(s *results.Step) int64 {
	f := s.Footprint()
	m := max(Mem(f.Before), Mem(f.After))
	if s.ServerResources == nil {
		for _, t := range s.Series {
			m = max(m, t.RSSBytes)
		}
	}
	return m
}

// secs prints seconds like Seconds, without the unit, for columns whose
// heading states it.
func secs(s float64) string { return strings.TrimSuffix(Seconds(s), " s") }

// MiB prints bytes in MiB with no decimals above 100, like the seed's MB.
func MiB(b int64) string {
	v := float64(b) / (1 << 20)
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
