package chart

import (
	"math"

	"gonum.org/v1/plot"
)

// bounds widens a data range [lo, hi] to the axis range: whole decades on
// a log axis (whole powers of two for bytes), so every log axis carries at
// least two labelled ticks, and from zero to a round step on a linear one
// (rates, memory and CPU read best against zero).
func bounds(a Axis, lo, hi float64) (float64, float64) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		if a.Log {
			return 1, 10
		}
		return 0, 1
	}
	if a.Log {
		switch a.Unit {
		case Bytes:
			l, h := math.Floor(math.Log2(lo)), math.Ceil(math.Log2(hi))
			if h <= l {
				h = l + 1
			}
			return math.Exp2(l), math.Exp2(h)
		case Percentile:
			h := math.Ceil(math.Log10(hi))
			if h < 1 {
				h = 1
			}
			return 1, math.Pow(10, h)
		}
		l, h := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if h <= l {
			h = l + 1
		}
		return math.Pow(10, l), math.Pow(10, h)
	}
	lo = math.Min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	step := linearStep(a.Unit, hi-lo)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

// linearStep is a round tick step giving about five ticks over span: 1, 2
// or 5 times a power of ten, or of a binary unit for bytes (so RSS ticks
// read 64 MiB, 128 MiB, not 67.1 MB).
func linearStep(u Unit, span float64) float64 {
	scale := 1.0
	if u == Bytes {
		for scale*1024 <= span {
			scale *= 1024
		}
		span /= scale
	}
	raw := span / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 5} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	return step * scale
}

// ticker marks an axis in its unit. Labels empty out on the upper panels
// of a stacked chart (hideLabels), where the bottom panel's labels serve.
type ticker struct {
	axis       Axis
	hideLabels bool
}

func (t ticker) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	switch {
	case !t.axis.Log:
		step := linearStep(t.axis.Unit, hi-lo)
		for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-9; i++ {
			v := i * step
			if math.Abs(v) < step*1e-9 { // no "-0" label
				v = 0
			}
			ts = append(ts, plot.Tick{Value: v, Label: Format(t.axis.Unit, v)})
		}
	case t.axis.Unit == Bytes:
		l, h := int(math.Round(math.Log2(lo))), int(math.Round(math.Log2(hi)))
		every := 1
		for _, e := range []int{1, 2, 3, 5, 10} {
			every = e
			if (h-l)/e+1 <= 8 {
				break
			}
		}
		for k := l; k <= h; k++ {
			tk := plot.Tick{Value: math.Exp2(float64(k))}
			if k%every == 0 {
				tk.Label = Format(Bytes, tk.Value)
			}
			ts = append(ts, tk)
		}
	case t.axis.Unit == Percentile:
		ts = append(ts, plot.Tick{Value: 1, Label: "0%"}, plot.Tick{Value: 2, Label: "50%"})
		for v := 10.0; v <= hi*(1+1e-9); v *= 10 {
			ts = append(ts, plot.Tick{Value: v, Label: Format(Percentile, v)})
		}
	default:
		l, h := int(math.Round(math.Log10(lo))), int(math.Round(math.Log10(hi)))
		decades := h - l
		every := 1 + decades/9 // at most about nine labels
		for k := l; k <= h; k++ {
			base := math.Pow(10, float64(k))
			for m := 1; m <= 9; m++ {
				if k == h && m > 1 {
					break
				}
				v := base * float64(m)
				tk := plot.Tick{Value: v}
				switch {
				case m == 1 && (k-l)%every == 0:
					tk.Label = Format(t.axis.Unit, v)
				case decades <= 2 && (m == 2 || m == 5):
					// Short ranges get intermediate labels too.
					tk.Label = Format(t.axis.Unit, v)
				}
				ts = append(ts, tk)
			}
		}
	}
	if t.hideLabels {
		for i := range ts {
			ts[i].Label = ""
		}
	}
	return ts
}

// majors are the labelled tick values, where grid lines go.
func majors(a Axis, lo, hi float64) []float64 {
	var vs []float64
	for _, t := range (ticker{axis: a}).Ticks(lo, hi) {
		if t.Label != "" {
			vs = append(vs, t.Value)
		}
	}
	return vs
}
