package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlope(t *testing.T) {
	xs := []float64{10, 100, 1000, 1e4}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 3 * math.Pow(x, 0.5)
	}
	if b, ok := Slope(xs, ys); !ok || math.Abs(b-0.5) > 1e-9 {
		t.Fatalf("slope %v %v, want 0.5", b, ok)
	}
	// Non-positive points are left out, not fatal.
	if b, ok := Slope([]float64{0, 10, 100}, []float64{5, 1, 10}); !ok || math.Abs(b-1) > 1e-9 {
		t.Fatalf("slope %v %v, want 1", b, ok)
	}
	if _, ok := Slope([]float64{10, 10}, []float64{1, 2}); ok {
		t.Fatal("one distinct x has no slope")
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		u    Unit
		v    float64
		want string
	}{
		{Seconds, 1e-6, "1 µs"}, {Seconds, 2.5e-3, "2.5 ms"}, {Seconds, 20e-9, "20 ns"}, {Seconds, 12, "12 s"},
		{Bytes, 1 << 20, "1 MiB"}, {Bytes, 32 << 10, "32 KiB"}, {Bytes, 512, "512 B"},
		{Number, 10, "10"}, {Number, 1e5, "1e5"}, {Number, 2000, "2e3"}, {Number, 1500, "1500"},
		{Percentile, 2, "50%"}, {Percentile, 1000, "99.9%"}, {Percentile, 1e4, "99.99%"},
		{PerSecond, 2000, "2k"}, {Percent, 50, "50%"},
	} {
		if got := Format(c.u, c.v); got != c.want {
			t.Errorf("Format(%v, %v) = %q, want %q", c.u, c.v, got, c.want)
		}
	}
}

func TestTicksLabelEveryLogAxis(t *testing.T) {
	for _, a := range []Axis{{Unit: Seconds, Log: true}, {Unit: Bytes, Log: true}, {Unit: Number, Log: true}, {Unit: Percentile, Log: true}, {Unit: PerSecond}} {
		for _, r := range [][2]float64{{1.2e-6, 8e-6}, {3e4, 3e7}, {10, 1e5}, {1, 1e4}, {0, 2100}} {
			if a.Log && r[0] <= 0 {
				continue // drawable() never passes these to a log axis
			}
			lo, hi := bounds(a, r[0], r[1])
			if a.Log && lo <= 0 {
				t.Fatalf("%+v %v: log axis from %v", a, r, lo)
			}
			if n := len(majors(a, lo, hi)); n < 2 || n > 12 {
				t.Errorf("%+v on %v (axis %v..%v): %d labels", a, r, lo, hi, n)
			}
		}
	}
}

func sample(panels int) *Chart {
	c := &Chart{ID: "sample", Title: "ledger insert: time to insert N txns", X: Axis{Label: "N (txns)", Unit: Number, Log: true}}
	for p := 0; p < panels; p++ {
		pn := Panel{Y: Axis{Label: "time", Unit: Seconds, Log: true}}
		for i := 0; i < 9; i++ {
			s := Series{Legend: "Target " + string(rune('A'+i)) + " ~N^0.95 (to 1e5)", Color: i, Marks: true, Dashed: i >= PaletteSize()}
			for _, n := range []float64{10, 100, 1000, 1e4, 1e5} {
				s.X = append(s.X, n)
				s.Y = append(s.Y, 1e-4*math.Pow(n, 0.9+0.02*float64(i)))
			}
			pn.Series = append(pn.Series, s)
		}
		// A point off the log scale must be dropped, not crash the chart.
		pn.Series = append(pn.Series, Series{Color: 1, X: []float64{0, 10}, Y: []float64{1, 0}})
		c.Panels = append(c.Panels, pn)
	}
	return c
}

func TestRenderSVGAndPNG(t *testing.T) {
	for _, panels := range []int{1, 3} {
		c := sample(panels)
		svg, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ToLower(string(svg))
		if !strings.Contains(s, "<svg") || !strings.Contains(s, "stroke:#1f77b4") || !strings.Contains(s, "1e5") {
			t.Fatalf("svg lacks data lines or labels:\n%.2000s", s)
		}
		b, err := c.PNG()
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		w, h := c.Size()
		if img.Bounds().Dx() != int(w.Dots(pngDPI)+0.5) || img.Bounds().Dy() != int(h.Dots(pngDPI)+0.5) {
			t.Fatalf("png %v, want %vx%v pt at %d dpi", img.Bounds(), w, h, pngDPI)
		}
		if dir := os.Getenv("STOREBENCH_CHART_OUT"); dir != "" {
			os.WriteFile(filepath.Join(dir, c.ID+string(rune('0'+panels))+".png"), b, 0o644)
			os.WriteFile(filepath.Join(dir, c.ID+string(rune('0'+panels))+".svg"), svg, 0o644)
		}
	}
}

func TestEmptyChartRenders(t *testing.T) {
	c := &Chart{ID: "empty", Title: "nothing", X: Axis{Unit: Number, Log: true}, Panels: []Panel{{Y: Axis{Unit: Seconds, Log: true}}}}
	if _, err := c.SVG(); err != nil {
		t.Fatal(err)
	}
	if c.Lines() != 0 {
		t.Fatal("no lines expected")
	}
}
