package adsrw

import (
	"fmt"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/workload"
	"storebench/internal/workload/roots"
)

func init() {
	section.Register("ads-rw", section.Def{
		Render:   adsRW,
		Headline: &section.Headline{Figure: "ads-rw.create", Metric: "seconds", What: "seconds to write the N pairs in blocks, a commit per block"},
		Metrics: []section.Metric{
			{Name: "pairs", Phases: []string{"create"}, Agg: section.Sum, What: "pairs written"},
			{Name: "blocks", Phases: []string{"create"}, Agg: section.Sum, What: "blocks committed"},
			{Name: "block_size", Phases: []string{"create"}, Unit: "pairs", Agg: section.Max, What: "pairs per block"},
			{Name: "pairs_per_s", Phases: []string{"create"}, Unit: "pairs/s", Agg: section.Rate, Better: section.Higher, What: "write rate"},
			{Name: "commit_seconds", Phases: []string{"create"}, Unit: "s", Agg: section.Sum, Better: section.Lower, What: "time spent in commits"},
			{Name: "readers", Phases: []string{"read-serial", "read-parallel"}, Agg: section.Max, What: "concurrent readers"},
			{Name: "reads_per_s", Phases: []string{"read-serial", "read-parallel"}, Unit: "reads/s", Agg: section.Rate, Better: section.Higher, What: "read rate"},
			workload.ItemBytesMetric,
		},
	})
}

// adsRW renders the seed 001 basic read & write table: rows are targets,
// columns the seed's measurements, one table per ladder size.
func adsRW(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	for _, t := range run.Targets {
		if section.TakesPart(t, "ads-rw") {
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
		fmt.Fprintf(b, "## Basic read & write: %s pairs in %.0f blocks of %.0f\n\n", section.Count(n), c.Metrics["blocks"], c.Metrics["block_size"])
		fmt.Fprintf(b, "Creation: %s fresh key-value pairs written in blocks, one commit per block (a root hash per block on the authenticated stores; one atomic batch per block on the plain engines). "+
			"Size: the disk the store's files take after creation (blocks allocated, like `du`). "+
			"Reads: %s random reads of written keys per phase, every value checked, by one reader (serial) and by %.0f concurrent readers (parallel). "+
			"RSS: the peak resident memory of the target's process over the whole test (VmHWM). MiB = 2^20 bytes.\n\n", section.Count(n), section.Count(reads), readers)
		tab := section.Table{Head: []string{"", "Time used in creation (s)", "Size of the database (MiB)", "Parallel read time (s)", "Serial read time (s)", "Peak RSS (MiB)"}}
		for _, t := range ts {
			if why := t.NotApplicable("ads-rw", "", n); why != "" {
				tab.Rows = append(tab.Rows, section.NARow(t.Title, why, 5))
				continue
			}
			create := t.Find("ads-rw", "create", n)
			par := t.Find("ads-rw", "read-parallel", n)
			ser := t.Find("ads-rw", "read-serial", n)
			tab.Rows = append(tab.Rows, []string{t.Title, createCell(create), section.DiskCell(create), section.SecondsCell(par), section.SecondsCell(ser), section.PeakRSSCell(create, ser, par)})
		}
		tab.Write(b)

		b.WriteString("Details: write rate and time spent in commits, read latency (p50 / p99 per read), and the root hash after the last block (first 16 hex digits; equal roots mean equal state, and a rerun with the same seed gives the same roots).\n\n")
		tab = section.Table{Head: []string{"", "Pairs written per s", "Commit time (s)", "Serial read p50 / p99", "Parallel read p50 / p99", "Root after the last block"}}
		for _, t := range ts {
			if why := t.NotApplicable("ads-rw", "", n); why != "" {
				tab.Rows = append(tab.Rows, section.NARow(t.Title, why, 5))
				continue
			}
			create := t.Find("ads-rw", "create", n)
			par := t.Find("ads-rw", "read-parallel", n)
			ser := t.Find("ads-rw", "read-serial", n)
			rate, commit := "—", "—"
			if create != nil && create.Seconds > 0 {
				rate = fmt.Sprintf("%.0f", create.Metrics["pairs_per_s"])
				commit = section.Secs(create.Metrics["commit_seconds"])
			}
			tab.Rows = append(tab.Rows, []string{t.Title, rate, commit, section.LatencyCell(ser), section.LatencyCell(par), roots.Cell(create)})
		}
		tab.Write(b)
	}
}

// createCell is the creation time, saying so when the step was cut short.
func createCell(s *results.Step) string {
	if s == nil {
		return "—"
	}
	out := section.Secs(s.Seconds)
	if s.Partial || s.Error != "" {
		out += fmt.Sprintf(" (stopped after %d of %.0f blocks)", s.Ops, s.Metrics["blocks"])
	}
	return out
}
