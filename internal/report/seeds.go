package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/seedcmp"
)

// againstSeed writes "Against the seed" for a run whose study names the
// seed it reproduces (seed_study): the seed's figures (transcribed in
// studies/seeds/NNN.yaml), ours at the same sizes and engines, and each
// finding's verdict, computed (package seedcmp).
func againstSeed(b *strings.Builder, run *results.Run) {
	id := seedcmp.SeedOf(run)
	if id == "" {
		return
	}
	b.WriteString("## Against the seed\n\n")
	s, err := seedcmp.Load(id)
	if err != nil {
		fmt.Fprintf(b, "%s.\n\n", cell(err.Error()))
		return
	}
	res := seedcmp.Against(s, run)
	fmt.Fprintf(b, "Seed %s, *%s*: its figures (`studies/seeds/%s.yaml`, each with the line of the seed's text it is on) beside ours at the same size, on the engine that stands for the seed's here. ", s.ID, s.Title, s.ID)
	fmt.Fprintf(b, "Every verdict is computed, and tests what its finding claims: an **ordering** holds when no pair of engines the seed ranks at a size is ranked the other way here (two figures within %.0f%%, or within the seed's precision or our spread over repeated steps where larger, are tied, and a tie matches either order), and is not comparable at a size where an engine the seed ranks did not run here; a **growth** holds when each engine's figure rises, stays flat or falls from the first size to the last as the seed's does, with a growth exponent within %.2f of the seed's where both change; a **direction** only asks the first; a **scaling** holds when each engine's growth exponent, fitted over all of the seed's sizes and over all of ours, which need not meet (the seed's machines against machine shapes of fewer vCPUs), lies within %.2f of the seed's; a **ratio** holds within the band the seed states; sizes are set against each other only where equal, or as near as the finding allows. A verdict that differs names the causes this run measured (a condition the finding depends on that this run does not share with the seed, from this run's own figures), or says it is unexplained.\n\n", seedcmp.TieFloor*100, seedcmp.SlopeTolerance, seedcmp.SlopeTolerance)

	var hw []string
	for _, h := range s.Hardware {
		x := h.ID + ": " + h.What
		if h.CPUs > 0 {
			x += fmt.Sprintf(" (%d CPUs)", h.CPUs)
		}
		hw = append(hw, x)
	}
	fmt.Fprintf(b, "The seed's machines: %s. Ours: %s, %d logical CPUs, %s RAM.", cell(strings.Join(hw, "; ")), cell(run.Host.CPUModel), run.Host.LogicalCPUs, Bytes(run.Host.MemTotalBytes))
	if s.Durability != "" {
		fmt.Fprintf(b, " Durability: the seed's %s (%s), ours %s.", s.Durability, s.DurabilityNote, run.Durability)
	}
	b.WriteString("\n\n")
	if md := seedcmp.MethodDifferences(s, run); len(md) > 0 {
		b.WriteString("How this run's method differs from the seed's, whatever the verdicts:\n\n")
		for _, m := range md {
			fmt.Fprintf(b, "- %s\n", cell(m))
		}
		b.WriteString("\n")
	}

	for _, fr := range res.Findings {
		seedFinding(b, s, fr)
	}
	seedcmp.WriteMachineClaims(b, s, run)
	if len(res.Elsewhere) > 0 {
		var names []string
		for _, f := range res.Elsewhere {
			names = append(names, fmt.Sprintf("%s (%s workload)", f.Title, f.WorkloadOf()))
		}
		fmt.Fprintf(b, "Findings of seed %s this study's workloads do not run (another study of the seed does): %s.\n\n", s.ID, cell(strings.Join(names, "; ")))
	}
}

func seedFinding(b *strings.Builder, s *seedcmp.Seed, fr seedcmp.FindingResult) {
	f := fr.Finding
	fmt.Fprintf(b, "### %s\n\n", f.Title)
	if f.Says != "" {
		fmt.Fprintf(b, "The seed concludes (l. %s): \"%s\"\n\n", lines(f.Source), cell(f.Says))
	}
	fmt.Fprintf(b, "%s; size: %s.", cell(f.Operation), cell(f.Size))
	if o := f.Ours; o != nil {
		fmt.Fprintf(b, " Ours: `%s.%s`, %s.", o.Workload, o.Phase, o.Value)
	}
	b.WriteString("\n\n")

	g := gridOf(fr)
	if tab := g.table(fr); len(tab.Rows) > 0 {
		tab.Write(b)
	}
	seedNoStandIn(b, s, fr, g.engines)
	seedOursElsewhere(b, fr, g.bySize)
	fmt.Fprintf(b, "**Verdict: %s**\n\n", cell(fr.Verdict.Summary(seedSize)))
}

// seedGrid is a finding's rows by size and by the seed's engine, the
// engines in the order the rows name them.
type seedGrid struct {
	engines []string
	bySize  map[float64]map[string][]seedcmp.Row
}

func gridOf(fr seedcmp.FindingResult) seedGrid {
	g := seedGrid{bySize: map[float64]map[string][]seedcmp.Row{}}
	seenE := map[string]bool{}
	for _, r := range fr.Rows {
		e := r.Figure.Engine
		if !seenE[e] {
			seenE[e] = true
			g.engines = append(g.engines, e)
		}
		if g.bySize[r.Figure.N] == nil {
			g.bySize[r.Figure.N] = map[string][]seedcmp.Row{}
		}
		g.bySize[r.Figure.N][e] = append(g.bySize[r.Figure.N][e], r)
	}
	return g
}

// table has the sizes for rows and the seed's engines for columns; a
// cell is the seed's figure (and its line) over ours.
func (g seedGrid) table(fr seedcmp.FindingResult) section.Table {
	var sizes []float64
	for n := range g.bySize {
		sizes = append(sizes, n)
	}
	sort.Float64s(sizes)
	head := []string{"size"}
	for _, e := range g.engines {
		h := e
		if t := standIn(fr, e); t != "" {
			h += " (ours: " + t + ")"
		}
		head = append(head, cell(h))
	}
	tab := section.Table{Head: head}
	for _, n := range sizes {
		row := []string{seedSize(n)}
		for _, e := range g.engines {
			var parts []string
			for _, r := range g.bySize[n][e] {
				parts = append(parts, cell(seedCell(r, len(g.bySize[n][e]) > 1)))
			}
			if len(parts) == 0 {
				parts = append(parts, "—")
			}
			row = append(row, strings.Join(parts, "<br>"))
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}

// seedCell is one row's part of a cell: the seed's figure, its line
// (and hardware, when the cell has several or a note), then ours or why
// there is none.
func seedCell(r seedcmp.Row, several bool) string {
	c := fmt.Sprintf("seed %s (l. %s", seedValue(r.Figure.Value, r.Figure.Unit), lines(r.Figure.Source))
	if several || r.Figure.Note != "" {
		c += ", " + r.Figure.Hardware
	}
	c += ")"
	if r.Figure.Note != "" {
		c += " " + r.Figure.Note
	}
	switch {
	case r.Have:
		c += "<br>ours "
		if r.OurN != 0 {
			c += "at " + seedSize(r.OurN) + " "
		}
		c += seedValue(r.Ours, r.Figure.Unit)
		if r.Figure.Value > 0 && r.Ours > 0 {
			c += fmt.Sprintf(" (%s× the seed's)", strconv.FormatFloat(r.Ours/r.Figure.Value, 'g', 3, 64))
		}
		if r.Each != "" {
			c += ", the mean of " + r.Each // one engine on several machine shapes
		}
	case r.Detail != "":
		// No one figure of ours: what the run measured of it.
		c += "<br>ours: " + r.Detail
	default:
		c += "<br>" + r.Missing
	}
	return c
}

// seedNoStandIn says, of an engine of the seed's no target stands for,
// why (its note).
func seedNoStandIn(b *strings.Builder, s *seedcmp.Seed, fr seedcmp.FindingResult, engines []string) {
	var none []string
	for _, e := range engines {
		for _, r := range fr.Rows {
			if r.Figure.Engine == e && r.Missing == seedcmp.NoStandIn {
				if note := s.Engine(e).Note; note != "" {
					none = append(none, e+": "+note)
				}
				break
			}
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(b, "No target of ours stands for %s.\n\n", cell(strings.Join(none, "; ")))
	}
}

// seedOursElsewhere lists ours at sizes the seed has no figure for: the
// growth is fitted on them too.
func seedOursElsewhere(b *strings.Builder, fr seedcmp.FindingResult, bySize map[float64]map[string][]seedcmp.Row) {
	var extra []string
	for _, p := range fr.Ours {
		if _, ok := bySize[p.N][p.Engine]; !ok {
			extra = append(extra, fmt.Sprintf("%s at %s: %s", p.Engine, seedSize(p.N), seedValue(p.Value, fr.Finding.Unit)))
		}
	}
	if len(extra) > 0 {
		fmt.Fprintf(b, "Ours at sizes the seed did not run: %s.\n\n", cell(strings.Join(extra, "; ")))
	}
}

func standIn(fr seedcmp.FindingResult, engine string) string {
	for _, r := range fr.Rows {
		if r.Figure.Engine == engine && r.Target != "" {
			return r.Target
		}
	}
	return ""
}

// seedSize prints a size as the report prints counts (1e5), "—" for a
// figure at no size.
func seedSize(n float64) string {
	if n <= 0 {
		return "—"
	}
	if n == math.Trunc(n) && n < 1<<62 {
		return Count(int64(n))
	}
	return strconv.FormatFloat(n, 'g', 4, 64)
}

// seedValue prints a figure with 4 significant digits and its unit.
func seedValue(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if math.Abs(v) >= 1e4 && math.Abs(v) < 1e15 {
		s = strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}

func lines(ls []int) string {
	var out []string
	for _, l := range ls {
		out = append(out, strconv.Itoa(l))
	}
	return strings.Join(out, ", ")
}
