package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"storebench/internal/chart"
	"storebench/internal/cost"
	"storebench/internal/results"
)

// CostGroup is the chart group of the cost curve ("What it costs").
const CostGroup = "cost"

// costs writes "What it costs" (issue 36) from the run's projection:
// per target the cheapest machines of the catalog that carry the sizing,
// what decides their number, the bill, and how well the model predicted
// a measured shape it did not see. Nothing when the study sized nothing.
func costs(b *strings.Builder, run *results.Run) {
	p := projection(run)
	if p == nil {
		return
	}
	b.WriteString("## What it costs\n\n")
	Costs(b, p)
	b.WriteString(chartMark(CostGroup))
}

// projection is the run's projection made again from its measurements
// by today's model, for the sizing and the built-in catalog the run was
// priced for (as every other figure of a re-rendered report is computed
// from the raw measures); the one results.json holds where its catalog is
// not a built-in one any more.
func projection(run *results.Run) *results.Projection {
	p := run.Projection
	if p == nil {
		return nil
	}
	cat, err := cost.Load(p.Catalog)
	if err != nil || strings.ContainsAny(p.Catalog, `/\.`) {
		return p
	}
	return cost.Project(run, p.Sizing, cat)
}

// Costs writes a projection's tables (also `storebench cost`).
func Costs(b *strings.Builder, p *results.Projection) {
	if len(p.Plans) == 0 {
		b.WriteString("No target measured a step to price: nothing is projected.\n\n")
		return
	}
	sz := p.Sizing
	fmt.Fprintf(b, "**Projections, not measurements**: what this run's measurements imply for a load of **%s ops/s** over %s, %d %s, on catalog `%s` (%s prices transcribed %s; every line's source in the catalog file). ",
		costNumber(sz.Load), dataText(sz), sz.Replicas, plural(sz.Replicas, "copy", "copies"), p.Catalog, p.Currency, p.CatalogDate)
	fmt.Fprintf(b, "Each target's machines are the cheapest count of one machine type whose CPU (at %.0f%% busy), memory (the engine's own and the page cache its data needs), local disk (%.0f%% full at most) and IOPS carry it, each replica carrying its shard's whole load", sz.Utilisation*100, 80.0)
	if sz.P99 > 0 {
		fmt.Fprintf(b, ", with a p99 of at most %s", secs(sz.P99))
	}
	b.WriteString(". The load is " + mixText(sz.Mix) + ".\n\n")
	tab := Table{Head: []string{"target", "machines", "monthly", "per million ops", "ops per " + p.Currency, "decided by", "held-out error", "next machine"}, Left: 2}
	for _, pl := range p.Plans {
		if pl.Best == nil {
			tab.Rows = append(tab.Rows, []string{cell(pl.Title), cell("n/a: " + pl.Reason), "", "", "", "", "", ""})
			continue
		}
		o := pl.Best
		next := "—"
		if pl.NextMonth > 0 {
			next = fmt.Sprintf("month %d", pl.NextMonth)
		} else if sz.GrowthPerMonth > 0 {
			next = fmt.Sprintf("not within %d months", 36)
		}
		tab.Rows = append(tab.Rows, []string{cell(pl.Title), cell(fmt.Sprintf("%d × %s (%d %s × %d)", o.Count, o.Machine.Name, o.Shards, plural(o.Shards, "shard", "shards"), sz.Replicas)),
			money(o.Monthly, pl.Currency), money(pl.PerMillion, pl.Currency), fmt.Sprintf("%.3g", pl.OpsPerUnit), o.Deciding, cell(heldOutText(pl)), next})
	}
	tab.Write(b)
	b.WriteString("\nWhat each rests on (measured here) and how far it reaches past it:\n\n")
	for _, pl := range p.Plans {
		if pl.Best == nil {
			continue
		}
		fmt.Fprintf(b, "- **%s** on %s (%s vCPUs, %s RAM, %s disk, %s/h; [source](%s), %s): ", mdText(pl.Title), pl.Best.Machine.Name,
			trimFloat(pl.Best.Machine.VCPUs), Bytes(pl.Best.Machine.RAMBytes), Bytes(pl.Best.Machine.DiskBytes), money(pl.Best.Machine.Hourly, pl.Currency), pl.Best.Machine.Source, pl.Best.Machine.Date)
		var needs []string
		for _, n := range pl.Best.Needs {
			s := fmt.Sprintf("%s %d (%s)", n.Resource, n.Shards, n.Detail)
			if n.Shards == 0 {
				s = fmt.Sprintf("%s: %s", n.Resource, n.Detail)
			}
			needs = append(needs, s)
		}
		fmt.Fprintf(b, "shards by %s.", strings.Join(needs, "; "))
		if len(pl.Best.Extent) > 0 {
			fmt.Fprintf(b, " Projected past the measures: %s.", strings.Join(pl.Best.Extent, "; "))
		}
		if pl.Warn != "" {
			fmt.Fprintf(b, " **%s.**", pl.Warn)
		}
		b.WriteString("\n")
		for _, in := range pl.Inputs {
			fmt.Fprintf(b, "  - %s\n", mdText(in))
		}
	}
	heldOutTable(b, p)
}

func heldOutText(pl results.TargetPlan) string {
	if len(pl.HeldOut) == 0 {
		return "not checked"
	}
	s := fmt.Sprintf("%.0f%% off", pl.HeldOutError*100)
	if pl.HeldOutError > 0.25 {
		s += " (rough)"
	}
	return s
}

// heldOutTable sets each held-out shape's predicted throughput and p99
// beside what it measured.
func heldOutTable(b *strings.Builder, p *results.Projection) {
	tab := Table{Head: []string{"target", "step", "held-out shape", "throughput: predicted / measured (error)", "p99: predicted / measured (error)", "fitted to"}, Left: 3}
	for _, pl := range p.Plans {
		for _, h := range pl.HeldOut {
			tab.Rows = append(tab.Rows, []string{cell(pl.Title), cell(h.Kind), cell(h.Machine),
				fmt.Sprintf("%.0f / %.0f ops/s (%+.0f%%)", h.PredictedOps, h.MeasuredOps, h.OpsError()*100),
				fmt.Sprintf("%s / %s (%+.0f%%)", secs(h.PredictedP99), secs(h.MeasuredP99), h.P99Error()*100),
				fmt.Sprintf("%d %s", h.Fitted, plural(h.Fitted, "shape (linear in vCPUs assumed)", "shapes"))})
		}
	}
	if len(tab.Rows) == 0 {
		b.WriteString("\nNo held-out check: the run measured no step on two or more CPU-limited shapes (run it with `--machine cpus=0.25 --machine cpus=0.5 --machine cpus=1` to check the model).\n\n")
		return
	}
	b.WriteString("\n**Held-out check.** The model fitted without the shape with the most vCPUs, predicting each step on it. A target's held-out error is that of what its cost rests on: the mix's throughput (each step its share, as the sizing weighs them), and the largest p99 error where the sizing bounds the p99; above 25% the cost is marked rough.\n\n")
	tab.Write(b)
	b.WriteString("\n")
}

// costChart is the cheapest monthly cost of each target against load.
func costChart(run *results.Run) *chart.Chart {
	p := projection(run)
	if p == nil || len(p.Curve) == 0 {
		return nil
	}
	c := &chart.Chart{ID: "cost-against-load", Group: CostGroup, Kind: "cost", Key: true,
		Title: fmt.Sprintf("Monthly cost against load (projection, catalog %s, %s)", p.Catalog, p.Currency),
		X:     chart.Axis{Label: "load (ops/s)", Unit: chart.PerSecond, Log: true},
		Notes: []string{"Each point: the cheapest machines of the catalog carrying that load over the sizing's data; a projection from this run's measurements, not a measurement."}}
	panel := chart.Panel{Y: chart.Axis{Label: "monthly cost (" + p.Currency + ")", Unit: chart.Number, Log: true}}
	byTarget := map[string]*chart.Series{}
	var order []string
	for _, pt := range p.Curve {
		s := byTarget[pt.Target]
		if s == nil {
			s = &chart.Series{Legend: pt.Target, Marks: true, Color: colorOf(run, pt.Target)}
			byTarget[pt.Target] = s
			order = append(order, pt.Target)
		}
		s.X, s.Y = append(s.X, pt.Load), append(s.Y, pt.Monthly)
	}
	for _, t := range order {
		panel.Series = append(panel.Series, *byTarget[t])
	}
	c.Panels = []chart.Panel{panel}
	return c
}

// colorOf is the target's colour in the run's other charts.
func colorOf(run *results.Run, name string) int {
	for i, t := range run.Targets {
		if base, _, _ := strings.Cut(t.Name, "@"); base == name {
			return i
		}
	}
	return 0
}

func dataText(sz results.Sizing) string {
	if sz.DataBytes > 0 {
		return Bytes(int64(sz.DataBytes)) + " of data"
	}
	return costNumber(sz.Items) + " items"
}

func costNumber(v float64) string {
	if v >= 1e5 && v == math.Trunc(v) {
		return fmt.Sprintf("%.4g", v)
	}
	return trimFloat(math.Round(v*1000) / 1000)
}

func money(v float64, currency string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%s %s", commas(math.Round(v)), currency)
	case v >= 0.01:
		return fmt.Sprintf("%.2f %s", v, currency)
	}
	return fmt.Sprintf("%.2g %s", v, currency)
}

func commas(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	return strings.Join(append([]string{s}, out...), ",")
}

func secs(s float64) string { return Seconds(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// mixText says how the load is shared among the run's steps.
func mixText(mix map[string]float64) string {
	if len(mix) == 0 {
		return "each target's measured steps in equal shares"
	}
	var sum float64
	keys := make([]string, 0, len(mix))
	for k, v := range mix {
		keys = append(keys, k)
		sum += v
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", k, mix[k]/sum*100))
	}
	return "shared among " + strings.Join(parts, ", ")
}
