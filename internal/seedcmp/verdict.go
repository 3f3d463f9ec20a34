package seedcmp

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// The verdict's thresholds.
const (
	// MinRho is the Spearman rank correlation between the seed's engine
	// ordering and ours (averaged over the sizes both ran) at or above
	// which the ordering is the same: with 4 engines, one adjacent pair
	// swapped gives 0.8; with 2 or 3, any swap falls below it.
	MinRho = 0.8
	// SlopeTolerance bounds the difference between the seed's growth
	// exponent and ours (the slope of log value against log size, least
	// squares) for the growth to be the same: 0.25 tells linear (1) from
	// n log n over a short ladder (about 1.1) as the same, and from
	// square root (0.5) or constant (0) as different.
	SlopeTolerance = 0.25
)

// Outcomes of a verdict.
const (
	Holds         = "holds"
	Differs       = "differs"
	NotComparable = "not comparable"
)

// Point is one figure: an engine's value at a size (in the finding's
// unit).
type Point struct {
	Engine string
	N      float64
	Value  float64
}

// SizeRho is the rank correlation at one size (SeedN and OurN differ
// when no size was run by both and the largest of each were compared).
type SizeRho struct {
	SeedN, OurN float64
	Engines     []string
	Rho         float64
}

// Ordering is the engine-ordering check of a verdict.
type Ordering struct {
	Sizes []SizeRho
	Rho   float64 // the mean over Sizes
	Holds bool
}

// Growth is the growth-exponent check of one engine.
type Growth struct {
	Engine         string
	Seed, Ours     float64 // fitted slopes of log value on log size
	SeedNs, OurNs  []float64
	Holds          bool
	SeedFitOverAll bool // the seed's slope is fitted over all its sizes (fewer than two lay within ours)
}

// Verdict is a finding's computed verdict.
type Verdict struct {
	Outcome  string
	Ordering *Ordering // nil: fewer than two engines ran at a size in both
	Growth   []Growth  // engines with two sizes or more in both
	// Why says why a finding is not comparable.
	Why string
	// Reasons are what results.json measures that sets our run apart
	// from the seed's (durability class, page cache, CPUs); set only
	// when the outcome is Differs.
	Reasons []string
}

// Compare computes a finding's verdict from the seed's points and ours.
func Compare(seed, ours []Point) Verdict {
	var v Verdict
	v.Ordering = ordering(seed, ours)
	v.Growth = growth(seed, ours)
	switch {
	case v.Ordering == nil && len(v.Growth) == 0:
		v.Outcome = NotComparable
		v.Why = notComparable(seed, ours)
	default:
		v.Outcome = Holds
		if v.Ordering != nil && !v.Ordering.Holds {
			v.Outcome = Differs
		}
		for _, g := range v.Growth {
			if !g.Holds {
				v.Outcome = Differs
			}
		}
	}
	return v
}

func notComparable(seed, ours []Point) string {
	if len(ours) == 0 {
		return "none of the seed's engines ran this here"
	}
	engines := map[string]bool{}
	for _, p := range seed {
		engines[p.Engine] = true
	}
	common, sizes := 0, map[float64]bool{}
	for _, p := range ours {
		if engines[p.Engine] {
			common++
			sizes[p.N] = true
		}
	}
	if common == 0 {
		return "none of the seed's engines ran this here"
	}
	return "needs two engines at one size, or one engine at two sizes, in both the seed and this run"
}

// table averages points by size and engine.
func table(ps []Point) map[float64]map[string]float64 {
	sum := map[float64]map[string]float64{}
	cnt := map[float64]map[string]int{}
	for _, p := range ps {
		if sum[p.N] == nil {
			sum[p.N], cnt[p.N] = map[string]float64{}, map[string]int{}
		}
		sum[p.N][p.Engine] += p.Value
		cnt[p.N][p.Engine]++
	}
	for n, m := range sum {
		for e := range m {
			m[e] /= float64(cnt[n][e])
		}
	}
	return sum
}

func sortedKeys[V any](m map[float64]V) []float64 {
	var out []float64
	for k := range m {
		out = append(out, k)
	}
	sort.Float64s(out)
	return out
}

// ordering compares the ranks of the engines at each size both ran
// with two engines or more; with no such size, the seed's largest size
// of two engines or more against ours.
func ordering(seed, ours []Point) *Ordering {
	st, ot := table(seed), table(ours)
	var o Ordering
	for _, n := range sortedKeys(st) {
		if r, ok := rho(st[n], ot[n], n, n); ok {
			o.Sizes = append(o.Sizes, r)
		}
	}
	if len(o.Sizes) == 0 {
		sn, on := sortedKeys(st), sortedKeys(ot)
	outer:
		for i := len(sn) - 1; i >= 0; i-- {
			for j := len(on) - 1; j >= 0; j-- {
				if r, ok := rho(st[sn[i]], ot[on[j]], sn[i], on[j]); ok {
					o.Sizes = append(o.Sizes, r)
					break outer
				}
			}
		}
	}
	if len(o.Sizes) == 0 {
		return nil
	}
	for _, r := range o.Sizes {
		o.Rho += r.Rho
	}
	o.Rho /= float64(len(o.Sizes))
	o.Holds = o.Rho >= MinRho
	return &o
}

func rho(seed, ours map[string]float64, sn, on float64) (SizeRho, bool) {
	var es []string
	for e := range seed {
		if _, ok := ours[e]; ok {
			es = append(es, e)
		}
	}
	if len(es) < 2 {
		return SizeRho{}, false
	}
	sort.Strings(es)
	x, y := make([]float64, len(es)), make([]float64, len(es))
	for i, e := range es {
		x[i], y[i] = seed[e], ours[e]
	}
	r := Spearman(x, y)
	if math.IsNaN(r) {
		return SizeRho{}, false
	}
	return SizeRho{SeedN: sn, OurN: on, Engines: es, Rho: r}, true
}

// Spearman is the rank correlation of x and y: Pearson's correlation
// (gonum's stat.Correlation) of their ranks, tied values sharing the
// mean of their ranks. NaN when either side's values are all equal.
func Spearman(x, y []float64) float64 {
	return stat.Correlation(ranks(x), ranks(y), nil)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// Slope fits log10 value = a + b·log10 n by least squares (gonum's
// stat.LinearRegression) and returns b, the growth exponent. Points of
// size or value 0 or below are left out; NaN with fewer than two sizes.
func Slope(ps []Point) float64 {
	var x, y []float64
	sizes := map[float64]bool{}
	for _, p := range ps {
		if p.N > 0 && p.Value > 0 {
			x, y = append(x, math.Log10(p.N)), append(y, math.Log10(p.Value))
			sizes[p.N] = true
		}
	}
	if len(sizes) < 2 {
		return math.NaN()
	}
	_, b := stat.LinearRegression(x, y, nil, false)
	return b
}

// growth compares, engine by engine, the slope of the seed's figures
// with ours: ours over the sizes we ran, the seed's over its sizes
// within that range (all of them when fewer than two lie within).
func growth(seed, ours []Point) []Growth {
	by := func(ps []Point) map[string][]Point {
		m := map[string][]Point{}
		for _, p := range ps {
			if p.N > 0 && p.Value > 0 {
				m[p.Engine] = append(m[p.Engine], p)
			}
		}
		return m
	}
	sb, ob := by(seed), by(ours)
	var engines []string
	for e := range sb {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	var out []Growth
	for _, e := range engines {
		op := ob[e]
		os := Slope(op)
		if math.IsNaN(os) {
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range op {
			lo, hi = math.Min(lo, p.N), math.Max(hi, p.N)
		}
		var within []Point
		for _, p := range sb[e] {
			if p.N >= lo && p.N <= hi {
				within = append(within, p)
			}
		}
		g := Growth{Engine: e, Ours: os, OurNs: sizesOf(op)}
		fit := within
		if math.IsNaN(Slope(within)) {
			fit, g.SeedFitOverAll = sb[e], true
		}
		g.Seed, g.SeedNs = Slope(fit), sizesOf(fit)
		if math.IsNaN(g.Seed) {
			continue
		}
		g.Holds = math.Abs(g.Seed-g.Ours) <= SlopeTolerance
		out = append(out, g)
	}
	return out
}

func sizesOf(ps []Point) []float64 {
	m := map[float64]bool{}
	for _, p := range ps {
		m[p.N] = true
	}
	return sortedKeys(m)
}

// Summary says the verdict in one line, every figure it rests on
// computed: "holds: same engine ordering (ρ 1.00 at 1e3, 1e5); same
// growth (LevelDB: slope 0.98 seed, 1.02 ours)".
func (v Verdict) Summary(count func(float64) string) string {
	if v.Outcome == NotComparable {
		return NotComparable + ": " + v.Why
	}
	var parts []string
	if o := v.Ordering; o != nil {
		var at []string
		for _, s := range o.Sizes {
			if s.SeedN == s.OurN {
				at = append(at, count(s.SeedN))
			} else {
				at = append(at, fmt.Sprintf("seed at %s, ours at %s", count(s.SeedN), count(s.OurN)))
			}
		}
		word := "same engine ordering"
		if !o.Holds {
			word = "engine ordering differs"
		}
		rel := "<"
		if o.Holds {
			rel = "≥"
		}
		parts = append(parts, fmt.Sprintf("%s (Spearman ρ %.2f %s %.1f; at %s)", word, o.Rho, rel, MinRho, strings.Join(at, ", ")))
	}
	for _, g := range v.Growth {
		word := "same growth"
		if !g.Holds {
			word = "growth differs"
		}
		over := ""
		if g.SeedFitOverAll {
			over = ", the seed's over all its sizes"
		}
		rel := ">"
		if g.Holds {
			rel = "≤"
		}
		parts = append(parts, fmt.Sprintf("%s for %s (exponent %.2f seed, %.2f ours: |Δ| %.2f %s %.2f; ours over %s%s)",
			word, g.Engine, g.Seed, g.Ours, math.Abs(g.Seed-g.Ours), rel, SlopeTolerance, sizeRange(g.OurNs, count), over))
	}
	s := v.Outcome + ": " + strings.Join(parts, "; ")
	if len(v.Reasons) > 0 {
		s += ". Measured here: " + strings.Join(v.Reasons, "; ")
	}
	return s
}

func sizeRange(ns []float64, count func(float64) string) string {
	if len(ns) == 0 {
		return ""
	}
	return count(ns[0]) + "–" + count(ns[len(ns)-1])
}
