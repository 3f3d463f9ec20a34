package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"storebench/internal/chart"
	"storebench/internal/mdhtml"
	"storebench/internal/results"
)

// Chart marks are HTML comments in the Markdown document after each
// workload's tables: invisible when Markdown is rendered, kept by mdhtml,
// and replaced by the workload's charts (PNG links in report.md, inline
// SVG in report.html).
const (
	markOpen   = "<!-- storebench:charts "
	figureOpen = "<!-- storebench:figures "
	markClose  = " -->"
)

func chartMark(workload string) string { return markOpen + workload + markClose + "\n\n" }

// Markdown renders the whole report as Markdown (what `storebench run`
// prints; report.md has the charts' pictures in addition).
func Markdown(run *results.Run) string {
	return fillMarks(document(run), markOpen, func(string) string { return "" })
}

// fillMarks replaces each mark "<open>NAME -->" (and the blank line after
// it) by fill(NAME).
func fillMarks(doc, open string, fill func(name string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(doc, open)
		if i < 0 {
			b.WriteString(doc)
			return b.String()
		}
		j := strings.Index(doc[i:], markClose)
		if j < 0 {
			b.WriteString(doc)
			return b.String()
		}
		b.WriteString(doc[:i])
		b.WriteString(fill(doc[i+len(open) : i+j]))
		doc = strings.TrimLeft(doc[i+j+len(markClose):], "\n")
	}
}

// byGroup lists the charts of one workload.
func byGroup(charts []*chart.Chart, w string) []*chart.Chart {
	var cs []*chart.Chart
	for _, c := range charts {
		if c.Group == w {
			cs = append(cs, c)
		}
	}
	return cs
}

func chartsHeading(w string) string { return fmt.Sprintf("## Charts: %s\n\n", w) }

// markdownWithCharts is report.md: the report with, under each workload,
// the pictures of its key charts (files[id] is the PNG's path relative to
// report.md; charts without one are left out).
func markdownWithCharts(run *results.Run, charts []*chart.Chart, files map[string]string) string {
	return fillMarks(document(run), markOpen, func(w string) string {
		var b strings.Builder
		for _, c := range byGroup(charts, w) {
			if f, ok := files[c.ID]; ok {
				fmt.Fprintf(&b, "![%s](%s)\n\n", mdText(c.Title), f)
			}
		}
		if b.Len() == 0 || w == CostGroup {
			return b.String()
		}
		return chartsHeading(w) + "Growth with data size on log-log axes (the legend gives the exponent b of y ~ N^b and the largest size reached), and latency percentiles at the largest size. report.html has every chart, with time series of throughput, latency, memory and CPU.\n\n" + b.String()
	})
}

// mdText keeps text from closing a Markdown construct early.
func mdText(s string) string {
	return strings.NewReplacer("[", "(", "]", ")", "\n", " ").Replace(s)
}

// drawn is a chart drawn for the HTML report (or the reason it could
// not be drawn).
type drawn struct {
	chart *chart.Chart
	svg   []byte
	err   error
}

// HTML renders report.html: the whole Markdown report converted (header
// with machine and versions, every workload's tables, recommendation,
// verification), each workload's charts inline as SVG under its tables,
// and the verification status of every phase. The page loads nothing:
// styles and drawings are in the file, and its Content-Security-Policy
// forbids any fetch. A chart that cannot be drawn shows its error in its
// place.
func HTML(run *results.Run, charts []*chart.Chart) []byte {
	figs := make([]drawn, len(charts))
	for i, c := range charts {
		svg, err := c.SVG()
		figs[i] = drawn{chart: c, svg: svg, err: err}
	}
	return htmlWith(run, figs)
}

func htmlWith(run *results.Run, figs []drawn) []byte {
	doc := fillMarks(document(run), markOpen, func(w string) string {
		for _, f := range figs {
			if f.chart.Group == w && w == CostGroup {
				return figureOpen + w + markClose + "\n\n"
			}
			if f.chart.Group == w {
				return chartsHeading(w) + figureOpen + w + markClose + "\n\n"
			}
		}
		return ""
	})
	doc += phaseVerification(run)
	body, heads := mdhtml.Convert(doc)
	body = flagFailures(body)
	body = fillMarks(body, figureOpen, func(w string) string {
		var b strings.Builder
		for _, f := range figs {
			if f.chart.Group == w {
				writeFigure(&b, f)
			}
		}
		return b.String()
	})
	title := run.Title
	if title == "" {
		title = run.Study
	}
	return page(title, heads, body)
}

// flagFailures colours every bold "FAILED…" of the report red (class
// failed): a failed verification, and a target that declared sync and
// lost acknowledged writes in crash trials. report.md keeps the bold.
func flagFailures(body string) string {
	return strings.ReplaceAll(body, "<strong>FAILED", `<strong class="failed">FAILED`)
}

// HTMLPage renders any Markdown (e.g. the output of `storebench compare`)
// as a standalone page in the report's style.
func HTMLPage(title, markdown string) []byte {
	body, heads := mdhtml.Convert(markdown)
	return page(title, heads, body)
}

// writeFigure inlines a chart's SVG. The class and data attributes are
// what the browser test checks: every chart present, drawn, with data.
func writeFigure(b *strings.Builder, f drawn) {
	c := f.chart
	if f.err != nil {
		fmt.Fprintf(b, "<figure class=\"chart chart-error\" id=\"chart-%s\"><p><strong>This chart could not be drawn:</strong> %s</p></figure>\n",
			c.ID, html.EscapeString(f.err.Error()))
		return
	}
	svg := f.svg
	// Inline SVG takes no XML prolog.
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	attrs := fmt.Sprintf(`<svg class="chart-svg" role="img" aria-label="%s" `, html.EscapeString(c.Title))
	svg = bytes.Replace(svg, []byte("<svg "), []byte(attrs), 1)
	fmt.Fprintf(b, "<figure class=\"chart\" id=\"chart-%s\" data-kind=\"%s\" data-lines=\"%d\" data-points=\"%d\">\n",
		c.ID, c.Kind, c.Lines(), c.Points())
	b.Write(svg)
	if len(c.Notes) > 0 {
		b.WriteString("<figcaption>")
		for i, n := range c.Notes {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(html.EscapeString(n))
		}
		b.WriteString("</figcaption>\n")
	}
	b.WriteString("</figure>\n")
}

// phaseVerification is the verification of every step, one row each.
func phaseVerification(run *results.Run) string {
	var b strings.Builder
	b.WriteString("## Verification of every phase\n\nEach phase at each size: values read and checked against what was written, failures, and the first failure. Phases that only write check nothing here; what they wrote is checked by the reads that follow.\n\n")
	tab := Table{Head: []string{"target", "workload", "phase", "N", "checked", "failed", "status", "first failure"}}
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			status := "verified"
			switch {
			case s.Error != "":
				status = "**error**: " + cell(s.Error)
			case s.Verify.Failed > 0:
				status = "**FAILED**"
			case s.Verify.Checked == 0:
				status = "nothing read"
			}
			if s.Partial {
				status += " (partial)"
			}
			phase := s.Phase
			if x := s.Labels.Extra(); x != "" {
				phase += " (" + x + ")"
			}
			tab.Rows = append(tab.Rows, []string{t.Title, s.Workload, cell(phase), Count(s.N),
				fmt.Sprint(s.Verify.Checked), fmt.Sprint(s.Verify.Failed), status, cell(s.Verify.First)})
		}
	}
	if len(tab.Rows) == 0 {
		return ""
	}
	// Table.write right-aligns every column but the first; here only the
	// counts are numbers.
	b.WriteString("| " + strings.Join(tab.Head, " | ") + " |\n|---|---|---|---:|---:|---:|---|---|\n")
	for _, r := range tab.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}

// pageCSS is the whole style of the page: readable on a laptop, tables
// that scroll sideways rather than squeeze, charts as wide as the text.
const pageCSS = `
:root { color-scheme: light; }
body { margin: 0; background: #f6f7f9; color: #1d2330; font: 15px/1.5 "Liberation Sans", Arial, Helvetica, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 32px 64px; background: #fff; min-height: 100vh; box-sizing: border-box; }
h1 { font-size: 26px; margin: 8px 0 12px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-top: 8px; border-top: 1px solid #e3e6eb; }
h3 { font-size: 16px; margin: 24px 0 8px; }
p, li { max-width: 78ch; }
code { font: 13px/1.4 "Liberation Mono", Menlo, Consolas, monospace; background: #f0f2f5; padding: 1px 4px; border-radius: 3px; }
pre { background: #f0f2f5; padding: 10px 12px; overflow-x: auto; }
pre code { background: none; padding: 0; }
blockquote { margin: 12px 0; padding: 4px 14px; border-left: 4px solid #c9d3e3; color: #38404f; background: #f8fafc; }
.table { overflow-x: auto; margin: 10px 0 18px; }
table { border-collapse: collapse; font-size: 13.5px; }
th, td { border: 1px solid #d9dde4; padding: 5px 9px; vertical-align: top; }
th { background: #eef1f5; text-align: left; }
tbody tr:nth-child(even) { background: #fafbfc; }
nav.toc { font-size: 13.5px; background: #f8fafc; border: 1px solid #e3e6eb; padding: 8px 14px; margin: 14px 0 8px; }
nav.toc a { margin-right: 14px; white-space: nowrap; color: #1f5fbf; text-decoration: none; }
figure.chart { margin: 14px 0 28px; }
.chart-svg { display: block; width: 100%; max-width: 864px; height: auto; }
figcaption { font-size: 13px; color: #4a5262; max-width: 864px; margin-top: 4px; }
.chart-error { color: #b00020; }
.failed { color: #b00020; }
`

// page wraps a body in the report's standalone page, with a table of
// contents of the second-level headings after the title.
func page(title string, heads []mdhtml.Heading, body string) []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	// Nothing may be fetched: no scripts, fonts, images or frames from
	// anywhere; styles are inline. A report that tried would show a
	// console error (and fail the browser test).
	b.WriteString("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", html.EscapeString(title), pageCSS)
	var toc strings.Builder
	for _, h := range heads {
		if h.Level == 2 {
			fmt.Fprintf(&toc, "<a href=\"#%s\">%s</a> ", h.ID, h.HTML)
		}
	}
	nav := ""
	if toc.Len() > 0 {
		nav = "<nav class=\"toc\">" + strings.TrimSpace(toc.String()) + "</nav>\n"
	}
	if i := strings.Index(body, "</h1>\n"); i >= 0 && nav != "" {
		body = body[:i+6] + nav + body[i+6:]
	} else {
		body = nav + body
	}
	b.WriteString(body)
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.Bytes()
}
