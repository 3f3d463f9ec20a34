package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"math"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Geometry. Text is Liberation Sans (bundled with gonum, metric-compatible
// with Arial, so the SVG reads the same with the browser's fallback).
const (
	width      = 9 * vg.Inch
	panelH     = 3.4 * vg.Inch // a chart of one panel
	extraPanel = 1.9 * vg.Inch // each further stacked panel
	pngDPI     = 110
)

var (
	sans      = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold  = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
	gridColor = color.Gray{0xe4}
)

const fontFamily = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// Size is the chart's size in points: the panels, and the legend's rows
// below them.
func (c *Chart) Size() (w, h vg.Length) {
	n := max(len(c.Panels), 1)
	return width, panelH + vg.Length(n-1)*extraPanel + c.legendLayout(width-2*margin).height
}

// SVG renders the chart as a standalone SVG document.
func (c *Chart) SVG() ([]byte, error) {
	w, h := c.Size()
	cv := vgsvg.New(w, h)
	if err := c.draw(draw.New(cv)); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("chart %s: write svg: %w", c.ID, err)
	}
	// Where Liberation Sans is not installed, Arial has the same metrics,
	// so text still fits where it was measured.
	return bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"), []byte(fontFamily)), nil
}

// PNG renders the chart as a PNG image.
func (c *Chart) PNG() ([]byte, error) {
	w, h := c.Size()
	cv := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	if err := c.draw(draw.New(cv)); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	// Fast compression: these are flat-colour images, and the default
	// level costs several times the time for a few percent of size.
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, cv.Image()); err != nil {
		return nil, fmt.Errorf("chart %s: encode png: %w", c.ID, err)
	}
	return b.Bytes(), nil
}

// draw lays out the title, the stacked panels and the legend below them.
// gonum panics on impossible input (it should not get any: points off a
// log scale are filtered out); a panic becomes this chart's error rather
// than the end of the report.
func (c *Chart) draw(dc draw.Canvas) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %s: %v", c.ID, r)
		}
	}()
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	area := draw.Crop(dc, margin, -margin, margin, -margin)
	if c.Title != "" {
		st := style(sansBold, 13)
		st.XAlign, st.YAlign = draw.XLeft, draw.YTop
		area.FillText(st, vg.Point{X: area.Min.X, Y: area.Max.Y}, c.Title)
		area.Max.Y -= st.Rectangle(c.Title).Size().Y + vg.Points(6)
	}

	// The legend goes under the plots, in as many columns as fit: the
	// plots keep the full width whatever the names, and line up from one
	// chart to the next.
	lay := c.legendLayout(area.Size().X)
	if lay.height > 0 {
		for k, l := range lay.columns {
			lc := area
			lc.Min.X = area.Min.X + vg.Length(k)*lay.colWidth
			lc.Max.X = lc.Min.X + lay.colWidth
			lc.Max.Y = area.Min.Y + lay.height - legendGap
			l.Draw(lc)
		}
		area.Min.Y += lay.height
	}

	xr := c.xRange()
	plots := make([][]*plot.Plot, len(c.Panels))
	for i := range c.Panels {
		p, err := c.panel(i, xr)
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{p}
	}
	if len(plots) == 0 {
		return nil
	}
	// Y labels are drawn here, not by gonum: it pads a plot for its
	// rotated label as if the text stood upright, which squashes a short
	// panel under a long label.
	ylab := style(sans, 11)
	ylab.Rotation = math.Pi / 2
	ylab.XAlign, ylab.YAlign = draw.XCenter, draw.YTop
	labelW := ylab.Height("Mg") + vg.Points(4)
	area.Min.X += labelW
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(10)}
	canvases := plot.Align(plots, tiles, area)
	for i := range plots {
		cv := canvases[i][0]
		plots[i][0].Draw(cv)
		if l := c.Panels[i].Y.Label; l != "" {
			dc := plots[i][0].DataCanvas(cv)
			area.FillText(ylab, vg.Point{X: area.Min.X - labelW, Y: (dc.Min.Y + dc.Max.Y) / 2}, l)
		}
	}
	return nil
}

func style(f font.Font, size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(f, size), Handler: plot.DefaultTextHandler}
}

// legendEntries are the series with legend text, in series order, from
// every panel (stacked panels repeat the same targets: an entry already
// there is not repeated).
func (c *Chart) legendEntries() []Series {
	var es []Series
	seen := map[string]bool{}
	for _, p := range c.Panels {
		for _, s := range p.Series {
			if s.Legend != "" && !seen[s.Legend] {
				seen[s.Legend] = true
				es = append(es, s)
			}
		}
	}
	return es
}

const (
	margin    = vg.Length(8) // around the chart
	legendGap = vg.Length(8) // between the x axis label and the legend
)

type legendLayout struct {
	columns  []plot.Legend
	colWidth vg.Length
	height   vg.Length
}

// legendLayout fills columns top to bottom, as many columns as the
// widest entry allows across width.
func (c *Chart) legendLayout(width vg.Length) legendLayout {
	es := c.legendEntries()
	if len(es) == 0 {
		return legendLayout{}
	}
	st := style(sans, 10)
	thumb, gap := vg.Points(22), vg.Points(18)
	var widest, entryH vg.Length
	for _, e := range es {
		widest = max(widest, st.Width(e.Legend))
		entryH = max(entryH, st.Rectangle(e.Legend).Max.Y)
	}
	colW := min(thumb+st.Width(" ")+widest+gap, width)
	cols := max(1, min(len(es), int(width/colW)))
	rows := (len(es) + cols - 1) / cols
	// Spread the columns over the width when they fit with room to spare.
	colW = max(colW, min(width/vg.Length(cols), colW*1.5))
	pad := vg.Points(3)
	lay := legendLayout{colWidth: colW, height: vg.Length(rows)*entryH + vg.Length(rows-1)*pad + legendGap}
	for k := 0; k < cols; k++ {
		l := plot.NewLegend()
		l.TextStyle = st
		l.Left, l.Top = true, true
		l.Padding = pad
		l.ThumbnailWidth = thumb
		for _, s := range es[min(k*rows, len(es)):min((k+1)*rows, len(es))] {
			th := []plot.Thumbnailer{&plotter.Line{LineStyle: lineStyle(s)}}
			if s.Marks {
				th = append(th, &plotter.Scatter{GlyphStyle: glyphStyle(s)})
			}
			l.Add(fit(st, s.Legend, colW-thumb-gap), th...)
		}
		lay.columns = append(lay.columns, l)
	}
	return lay
}

// fit shortens text with an ellipsis to fit width, so a long legend
// never runs off the picture.
func fit(st text.Style, s string, width vg.Length) string {
	if st.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && st.Width(string(r)+"…") > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

func lineStyle(s Series) draw.LineStyle {
	ls := draw.LineStyle{Color: Color(s.Color), Width: vg.Points(1.6)}
	if s.Dashed {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return ls
}

func glyphStyle(s Series) draw.GlyphStyle {
	return draw.GlyphStyle{Color: Color(s.Color), Radius: vg.Points(2.6), Shape: draw.CircleGlyph{}}
}

// drawable keeps the points that have a place on the axes.
func drawable(s Series, xlog, ylog bool) plotter.XYs {
	var xy plotter.XYs
	for i := range s.X {
		if i >= len(s.Y) {
			break
		}
		x, y := s.X[i], s.Y[i]
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) ||
			xlog && x <= 0 || ylog && y <= 0 {
			continue
		}
		xy = append(xy, plotter.XY{X: x, Y: y})
	}
	return xy
}

// xRange is the data range of x over all panels.
func (c *Chart) xRange() [2]float64 {
	r := [2]float64{math.Inf(1), math.Inf(-1)}
	for _, p := range c.Panels {
		for _, s := range p.Series {
			for _, pt := range drawable(s, c.X.Log, p.Y.Log) {
				r[0], r[1] = math.Min(r[0], pt.X), math.Max(r[1], pt.X)
			}
		}
	}
	return r
}

// panel builds gonum's plot for panel i.
func (c *Chart) panel(i int, xr [2]float64) (*plot.Plot, error) {
	pn := c.Panels[i]
	last := i == len(c.Panels)-1
	p := plot.New()
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle = style(sans, 11)
		ax.Tick.Label = style(sans, 10)
		ax.Tick.Length = vg.Points(5)
		ax.Padding = vg.Points(3)
	}
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Label.TextStyle.XAlign, p.X.Label.TextStyle.YAlign = draw.XCenter, draw.YBottom
	p.Y.Label.TextStyle.XAlign, p.Y.Label.TextStyle.YAlign = draw.XCenter, draw.YBottom
	if last {
		p.X.Label.Text = c.X.Label
	}
	if c.X.Log {
		p.X.Scale = plot.LogScale{}
	}
	if pn.Y.Log {
		p.Y.Scale = plot.LogScale{}
	}
	p.X.Tick.Marker = ticker{axis: c.X, hideLabels: !last}
	p.Y.Tick.Marker = ticker{axis: pn.Y}

	yr := [2]float64{math.Inf(1), math.Inf(-1)}
	var data []plot.Plotter
	for _, s := range pn.Series {
		xy := drawable(s, c.X.Log, pn.Y.Log)
		if len(xy) == 0 {
			continue
		}
		for _, pt := range xy {
			yr[0], yr[1] = math.Min(yr[0], pt.Y), math.Max(yr[1], pt.Y)
		}
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("chart %s: series %q: %w", c.ID, s.Legend, err)
		}
		ln.LineStyle = lineStyle(s)
		data = append(data, ln)
		if s.Marks {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, fmt.Errorf("chart %s: series %q: %w", c.ID, s.Legend, err)
			}
			sc.GlyphStyle = glyphStyle(s)
			data = append(data, sc)
		}
	}
	p.X.Min, p.X.Max = bounds(c.X, xr[0], xr[1])
	p.Y.Min, p.Y.Max = bounds(pn.Y, yr[0], yr[1])
	// Grid first so the data is drawn over it.
	p.Add(grid{xs: majors(c.X, p.X.Min, p.X.Max), ys: majors(pn.Y, p.Y.Min, p.Y.Max)})
	p.Add(data...)
	if len(c.Markers) > 0 {
		p.Add(markers{ms: c.Markers, labels: i == 0})
	}
	// Add widened the ranges to the data; put the round bounds back.
	p.X.Min, p.X.Max = bounds(c.X, xr[0], xr[1])
	p.Y.Min, p.Y.Max = bounds(pn.Y, yr[0], yr[1])
	return p, nil
}

// markers draws events as red vertical lines over the whole panel.
type markers struct {
	ms     []Marker
	labels bool
}

func (m markers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	ls := draw.LineStyle{Color: color.RGBA{R: 200, A: 255}, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
	st := style(sans, 9)
	st.Color = ls.Color
	for _, mk := range m.ms {
		if mk.X < p.X.Min || mk.X > p.X.Max {
			continue
		}
		x := trX(mk.X)
		c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
		if m.labels && mk.Label != "" {
			c.FillText(st, vg.Point{X: x + vg.Points(2), Y: c.Max.Y - vg.Points(10)}, mk.Label)
		}
	}
}

// grid draws light lines at the labelled ticks. gonum's own grid follows
// the axis ticker, whose labels are blanked on upper panels.
type grid struct{ xs, ys []float64 }

func (g grid) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	ls := draw.LineStyle{Color: gridColor, Width: vg.Points(0.5)}
	for _, x := range g.xs {
		if v := tx(x); v >= c.Min.X && v <= c.Max.X {
			c.StrokeLine2(ls, v, c.Min.Y, v, c.Max.Y)
		}
	}
	for _, y := range g.ys {
		if v := ty(y); v >= c.Min.Y && v <= c.Max.Y {
			c.StrokeLine2(ls, c.Min.X, v, c.Max.X, v)
		}
	}
}
