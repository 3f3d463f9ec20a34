// Package chart is the small chart model of storebench's reports: a title,
// an x axis shared by one or more stacked panels, named series of points,
// and notes. It knows nothing of runs or workloads (internal/report builds
// charts from a run); it renders them with gonum/plot to SVG, which the
// HTML report inlines, and to PNG, which report.md references. The drawing
// code is compiled into storebench, so a report needs nothing loaded.
package chart

import (
	"fmt"
	"image/color"
	"math"
	"strings"
)

// Unit says how an axis's values are printed and ticked.
type Unit int

const (
	// Number is a plain count (data sizes: 10, 1e3, 1e5).
	Number Unit = iota
	// Seconds is a duration in seconds, printed as ns, µs, ms or s.
	Seconds
	// Bytes is a size, ticked at powers of two and printed as KiB, MiB...
	Bytes
	// Percent is a percentage (CPU: 100% = one core busy).
	Percent
	// PerSecond is a rate (operations per second), printed as 2k, 1.5M.
	PerSecond
	// Percentile is the x axis of a latency distribution: values are
	// 1/(1-p), so that on a log scale 90%, 99% and 99.9% are evenly
	// spaced; ticks are printed as percentiles.
	Percentile
)

// Axis is one axis of a chart.
type Axis struct {
	Label string
	Unit  Unit
	Log   bool
}

// Series is one line: points in drawing order. Points with a non-positive
// coordinate on a log axis are dropped when drawn (they have no place).
type Series struct {
	// Legend is the text of the series' legend entry; empty for a series
	// that shares the entry of another (e.g. the p99 line under p50's).
	Legend string
	// Color indexes the palette, so the same target has the same colour
	// in every chart of a report.
	Color  int
	Dashed bool
	// Marks draws a dot at every point (few points, e.g. a data ladder).
	Marks bool
	X, Y  []float64
}

// Panel is one plot area; the panels of a chart are stacked and share
// the x axis.
type Panel struct {
	Y      Axis
	Series []Series
}

// Chart is one figure.
type Chart struct {
	// ID is unique in a report and safe as a file name (it names the PNG).
	ID string
	// Group is what the chart belongs to (a workload), so a report can
	// place it next to that workload's tables.
	Group string
	// Kind is "scaling", "percentiles" or "timeseries".
	Kind   string
	Title  string
	X      Axis
	Panels []Panel
	// Notes are sentences shown under the chart (how to read it).
	Notes []string
	// Key charts are worth a picture in report.md; the others appear only
	// in report.html.
	Key bool
	// Markers are events drawn as vertical lines on every panel (a fault
	// action on a cluster node at that x), labelled on the top panel.
	Markers []Marker
}

// Marker is a labelled vertical line at X.
type Marker struct {
	X     float64
	Label string
}

// Points counts the points of all series.
func (c *Chart) Points() int {
	n := 0
	for _, p := range c.Panels {
		for _, s := range p.Series {
			n += len(s.X)
		}
	}
	return n
}

// Lines counts the series drawn as a line: two drawable points or more.
// A chart without one has nothing to show.
func (c *Chart) Lines() int {
	n := 0
	for _, p := range c.Panels {
		for _, s := range p.Series {
			if len(drawable(s, c.X.Log, p.Y.Log)) >= 2 {
				n++
			}
		}
	}
	return n
}

// palette: ten colours distinct from each other, from black (axes) and
// from grey (grid), which is also how the browser test tells a data line
// from the frame.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
	{0x39, 0x3b, 0x79, 0xff}, // indigo
	{0xbc, 0xbd, 0x22, 0xff}, // olive
}

// Color returns palette colour i; beyond the palette colours repeat (the
// caller dashes them to keep lines apart).
func Color(i int) color.RGBA { return palette[((i%len(palette))+len(palette))%len(palette)] }

// PaletteSize is how many distinct colours there are.
func PaletteSize() int { return len(palette) }

// Slope fits log y = a + b·log x by least squares over the points where
// both are positive and returns b, the growth exponent (y ~ x^b). ok is
// false with fewer than two distinct x.
func Slope(xs, ys []float64) (b float64, ok bool) {
	var lx, ly []float64
	for i := range xs {
		if i < len(ys) && xs[i] > 0 && ys[i] > 0 && !math.IsInf(ys[i], 0) {
			lx = append(lx, math.Log(xs[i]))
			ly = append(ly, math.Log(ys[i]))
		}
	}
	if len(lx) < 2 {
		return 0, false
	}
	var mx, my float64
	for i := range lx {
		mx += lx[i]
		my += ly[i]
	}
	mx /= float64(len(lx))
	my /= float64(len(ly))
	var sxy, sxx float64
	for i := range lx {
		sxy += (lx[i] - mx) * (ly[i] - my)
		sxx += (lx[i] - mx) * (lx[i] - mx)
	}
	if sxx == 0 {
		return 0, false
	}
	return sxy / sxx, true
}

// SafeID turns any text into a file-name-safe ID.
func SafeID(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('-')
		}
		for _, r := range strings.ToLower(p) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}

// Format prints v in unit u the way tick labels and legends do.
func Format(u Unit, v float64) string {
	switch u {
	case Seconds:
		switch a := math.Abs(v); {
		case a == 0:
			return "0"
		case a < 1e-6:
			return num(v*1e9) + " ns"
		case a < 1e-3:
			return num(v*1e6) + " µs"
		case a < 1:
			return num(v*1e3) + " ms"
		}
		return num(v) + " s"
	case Bytes:
		a, i := math.Abs(v), 0
		for a >= 1024 && i < 6 {
			a /= 1024
			v /= 1024
			i++
		}
		if i == 0 {
			return num(v) + " B"
		}
		return num(v) + " " + string("KMGTPE"[i-1]) + "iB"
	case Percent:
		return num(v) + "%"
	case PerSecond:
		switch a := math.Abs(v); {
		case a >= 1e6:
			return num(v/1e6) + "M"
		case a >= 1e3:
			return num(v/1e3) + "k"
		}
		return num(v)
	case Percentile:
		if v <= 1 {
			return "0%"
		}
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.6f", 100*(1-1/v)), "0"), ".") + "%"
	}
	// Number: powers of ten from 1000 on as 1e3, 1e5 (as the report's
	// tables print data sizes), the rest plainly.
	if v >= 1000 && v == math.Trunc(v) {
		m, e := v, 0
		for m >= 10 && math.Mod(m, 10) == 0 {
			m /= 10
			e++
		}
		if m < 10 {
			return fmt.Sprintf("%ge%d", m, e)
		}
	}
	return num(v)
}

// num prints up to 3 significant digits without trailing zeros.
func num(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.ContainsAny(s, "e") {
		// %g switches to exponents at 1e3 with 3 digits; print whole.
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}
