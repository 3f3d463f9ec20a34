package seedcmp

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// The verdict's thresholds.
const (
	// TieFloor is the smallest relative gap between two figures that a
	// verdict reads as a difference: two figures closer than that are
	// tied, and a tie matches either order. It is a floor for a run
	// with one step per size, not a measured spread: the seed's own
	// precision (half its last written digit) and our spread over
	// repeated steps widen it where they are larger. Reruns of one
	// study kept in docs/runs spread far wider on this shared 2-core
	// machine (MariaDB write_only tps 1.3% apart between
	// web-oltp-seed-special-1 and -2 at 8 threads, 22% at 64), which is
	// why a study's repeated trials, where it has them, are what a
	// verdict should rest on.
	TieFloor = 0.05
	// SlopeTolerance bounds the difference between the seed's growth
	// exponent and ours (the slope of log value against log size, least
	// squares) where both change in the same direction: 0.25 tells
	// linear (1) from n log n over a short ladder (about 1.1) as the
	// same, and from square root (0.5) or constant (0) as different.
	SlopeTolerance = 0.25
)

// Outcomes of a verdict.
const (
	Holds         = "holds"
	Differs       = "differs"
	NotComparable = "not comparable"
)

// Point is one figure: an engine's value at a size (in the finding's
// unit). Spread is the relative spread of the figures it is the mean of
// ((max - min) / mean; 0 for one figure); Precision the relative half
// unit of its last written digit (a seed's figure); Failed a step that
// ran and failed (Value is then meaningless).
type Point struct {
	Engine    string
	N         float64
	Value     float64
	Spread    float64
	Precision float64
	Failed    bool
}

// band is the relative gap under which a and b are tied.
func band(a, b Point) float64 {
	return math.Max(TieFloor, math.Max(math.Max(a.Spread, b.Spread), math.Max(a.Precision, b.Precision)))
}

// relation is -1, 0 (tied) or +1: a below, within the band of, or
// above b.
func relation(a, b Point) int {
	m := math.Max(math.Abs(a.Value), math.Abs(b.Value))
	if m == 0 || math.Abs(a.Value-b.Value)/m <= band(a, b) {
		return 0
	}
	if a.Value < b.Value {
		return -1
	}
	return 1
}

// PrecisionOf is the relative half unit of the last digit of v as
// written in a transcription (53.18: 0.005/53.18).
func PrecisionOf(v float64) float64 {
	if v == 0 {
		return 0
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	unit := 1.0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		unit = math.Pow(10, -float64(len(s)-i-1))
	}
	return unit / 2 / math.Abs(v)
}

// Pair is two engines' figures compared at one size.
type Pair struct {
	A, B       string
	Seed, Ours int // relations (-1, 0, +1): A below, tied with, above B
}

// Discordant says whether the seed and ours order the pair oppositely,
// neither tied.
func (p Pair) Discordant() bool { return p.Seed*p.Ours < 0 }

// SizePairs are the pairs compared at one size (SeedN and OurN differ
// where the finding allows sizes apart: Claim.SizeRatio).
type SizePairs struct {
	SeedN, OurN float64
	Pairs       []Pair
}

// Ordering is the engine-ordering check of a verdict.
type Ordering struct {
	Sizes []SizePairs
	// Skipped are sizes the seed ranks engines at that this run cannot
	// rank them at, and why (an engine it names did not run).
	Skipped []string
	Holds   bool
}

// Discordant are the pairs ordered oppositely, "A < B at 1e5" each.
func (o *Ordering) Discordant(count func(float64) string) []string {
	var out []string
	for _, s := range o.Sizes {
		for _, p := range s.Pairs {
			if p.Discordant() {
				rel := map[int]string{-1: "below", 1: "above"}
				out = append(out, fmt.Sprintf("%s %s %s at %s in the seed, %s here", p.A, rel[p.Seed], p.B, count(s.SeedN), rel[p.Ours]))
			}
		}
	}
	return out
}

// Growth is the growth check of one engine: the direction of its change
// from the smallest size to the largest both ran (up, flat within the
// band, down) and, where both change, the exponent.
type Growth struct {
	Engine        string
	Seed, Ours    float64 // fitted slopes of log value on log size
	SeedNs, OurNs []float64
	// SeedChange and OurChange are the relative changes from the first
	// size to the last (0.207: +20.7%); SeedDir and OurDir their
	// directions (-1, 0, +1).
	SeedChange, OurChange float64
	SeedDir, OurDir       int
	// Stated says SeedDir is the direction the seed's words state
	// (Claim.Expect), not its figures'.
	Stated bool
	// Exponent says the exponents were compared (both changed, and the
	// claim is a growth, not a direction only).
	Exponent bool
	// Apart: a scaling claim's, each exponent fitted over all of its
	// side's sizes, which need not meet the other's (SeedNs and OurNs
	// are all of them); only the exponents decide.
	Apart bool
	Holds bool
}

// Verdict is a finding's computed verdict.
type Verdict struct {
	Outcome  string
	Claim    string    // the claim's kind
	Ordering *Ordering // nil: no size with two engines in both
	Growth   []Growth  // engines with two sizes or more in both
	Ratio    []RatioAt // a ratio claim's figures
	Fails    *FailsAt  // a failure claim's figure
	Steeper  *SteeperAt
	Bound    []BoundAt
	// Why says why a finding is not comparable.
	Why string
	// Reasons are the causes this run measured for a verdict that
	// differs (each a figure of this run or of the seed, set against the
	// other); empty: unexplained.
	Reasons []string
}

// Compare computes the verdict of the default claim of a finding's
// figures (ClaimAuto): the engine ordering at each size, and each
// engine's growth.
func Compare(seed, ours []Point) Verdict {
	return Judge(Claim{}, seed, ours)
}

// Judge tests claim c on the seed's points and ours.
func Judge(c Claim, seed, ours []Point) Verdict {
	c = c.withDefaults()
	v := Verdict{Claim: c.Kind}
	if len(ours) == 0 {
		v.Outcome, v.Why = NotComparable, "none of the seed's engines ran this here"
		return v
	}
	switch c.Kind {
	case ClaimRatio:
		return judgeRatio(c, seed, ours)
	case ClaimFails:
		return judgeFails(c, ours)
	case ClaimSteeper:
		return judgeSteeper(c, seed, ours)
	case ClaimBound:
		return judgeBound(c, ours)
	case ClaimScaling:
		return judgeScaling(c, seed, ours)
	}
	if c.Kind == ClaimAuto || c.Kind == ClaimOrdering {
		v.Ordering = ordering(c, seed, ours)
	}
	if c.Kind != ClaimOrdering {
		v.Growth = growth(c, seed, ours)
	}
	if (v.Ordering == nil || len(v.Ordering.Sizes) == 0) && len(v.Growth) == 0 {
		v.Outcome = NotComparable
		v.Why = notComparable(c, seed, ours, v.Ordering)
		v.Ordering = nil
		return v
	}
	v.Outcome = Holds
	if v.Ordering != nil && len(v.Ordering.Sizes) == 0 {
		v.Ordering = nil
	}
	if v.Ordering != nil && !v.Ordering.Holds {
		v.Outcome = Differs
	}
	for _, g := range v.Growth {
		if !g.Holds {
			v.Outcome = Differs
		}
	}
	return v
}

func notComparable(c Claim, seed, ours []Point, o *Ordering) string {
	engines := map[string]bool{}
	for _, p := range seed {
		engines[p.Engine] = true
	}
	common := 0
	for _, p := range ours {
		if engines[p.Engine] {
			common++
		}
	}
	if common == 0 {
		return "none of the seed's engines ran this here"
	}
	if o != nil && len(o.Skipped) > 0 {
		return strings.Join(o.Skipped, "; ")
	}
	seedNs, ourNs := sizesOf(seed), sizesOf(ours)
	if len(seedNs) > 0 && len(ourNs) > 0 && pairSizes(c, seedNs, ourNs) == nil {
		return fmt.Sprintf("the seed measured at %s, this run at %s: %s, and the finding compares only sizes %s",
			sizeList(seedNs), sizeList(ourNs), apart(seedNs, ourNs), allowed(c))
	}
	return "needs two engines at one size, or one engine at two sizes, in both the seed and this run"
}

func allowed(c Claim) string {
	if c.SizeRatio <= 1 {
		return "that are equal"
	}
	return fmt.Sprintf("within %g× of each other", c.SizeRatio)
}

// apart says how far the closest of two size lists lie apart.
func apart(a, b []float64) string {
	best := math.Inf(1)
	for _, x := range a {
		for _, y := range b {
			if x > 0 && y > 0 {
				best = math.Min(best, math.Max(x/y, y/x))
			}
		}
	}
	if math.IsInf(best, 1) {
		return "no size in common"
	}
	return fmt.Sprintf("the closest %s× apart", strconv.FormatFloat(best, 'g', 3, 64))
}

func sizeList(ns []float64) string {
	var out []string
	for _, n := range ns {
		out = append(out, strconv.FormatFloat(n, 'g', 4, 64))
	}
	return strings.Join(out, ", ")
}

// table groups points by size and engine.
func table(ps []Point) map[float64]map[string]Point {
	out := map[float64]map[string]Point{}
	for _, p := range ps {
		if out[p.N] == nil {
			out[p.N] = map[string]Point{}
		}
		out[p.N][p.Engine] = p
	}
	return out
}

func sortedKeys[V any](m map[float64]V) []float64 {
	var out []float64
	for k := range m {
		out = append(out, k)
	}
	sort.Float64s(out)
	return out
}

// pairSizes pairs each size of the seed with ours: the same size, or
// the nearest within the claim's SizeRatio.
func pairSizes(c Claim, seedNs, ourNs []float64) [][2]float64 {
	var out [][2]float64
	for _, sn := range seedNs {
		best, bestR := 0.0, math.Inf(1)
		for _, on := range ourNs {
			r := ratioApart(sn, on)
			if r <= math.Max(1, c.SizeRatio)*(1+1e-9) && r < bestR {
				best, bestR = on, r
			}
		}
		if !math.IsInf(bestR, 1) {
			out = append(out, [2]float64{sn, best})
		}
	}
	return out
}

func ratioApart(a, b float64) float64 {
	if a == b {
		return 1
	}
	if a <= 0 || b <= 0 {
		return math.Inf(1)
	}
	return math.Max(a/b, b/a)
}

// ordering compares every pair of engines at each size the seed ranks
// two or more at: a size where an engine the seed names there did not
// run here is skipped (a ranking on fewer engines is not the seed's).
func ordering(c Claim, seed, ours []Point) *Ordering {
	st, ot := table(seed), table(ours)
	o := &Ordering{Holds: true}
	for _, sz := range pairSizes(c, sortedKeys(st), sortedKeys(ot)) {
		s, w := st[sz[0]], ot[sz[1]]
		names := engineNames(s, c.Engines)
		if len(names) < 2 {
			continue
		}
		var missing []string
		for _, e := range names {
			if p, ok := w[e]; !ok || p.Failed {
				missing = append(missing, e)
			}
		}
		if len(missing) > 0 {
			o.Skipped = append(o.Skipped, fmt.Sprintf("at %s the seed ranks %s; %s did not run here", strconv.FormatFloat(sz[0], 'g', 4, 64), strings.Join(names, ", "), strings.Join(missing, ", ")))
			continue
		}
		sp := SizePairs{SeedN: sz[0], OurN: sz[1]}
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				a, b := names[i], names[j]
				p := Pair{A: a, B: b, Seed: relation(s[a], s[b]), Ours: relation(w[a], w[b])}
				if p.Discordant() {
					o.Holds = false
				}
				sp.Pairs = append(sp.Pairs, p)
			}
		}
		o.Sizes = append(o.Sizes, sp)
	}
	return o
}

// engineNames are the engines of a size's figures, those of only when
// given, sorted.
func engineNames(m map[string]Point, only []string) []string {
	var out []string
	for e := range m {
		if len(only) == 0 || contains(only, e) {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
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

// growth compares, engine by engine, the seed's figures with ours at
// the sizes both ran (paired as the claim allows): the direction of the
// change from the first such size to the last, and where both change
// (and the claim is not a direction only), the exponent.
func growth(c Claim, seed, ours []Point) []Growth {
	st, ot := byEngine(seed), byEngine(ours)
	var engines []string
	for e := range st {
		if len(c.Engines) == 0 || contains(c.Engines, e) {
			engines = append(engines, e)
		}
	}
	sort.Strings(engines)
	var out []Growth
	for _, e := range engines {
		pairs := pairSizes(c, sortedKeys(st[e]), sortedKeys(ot[e]))
		if len(pairs) < 2 {
			continue
		}
		var sp, op []Point
		for _, pr := range pairs {
			sp, op = append(sp, st[e][pr[0]]), append(op, ot[e][pr[1]])
		}
		g := Growth{Engine: e, SeedNs: sizesOf(sp), OurNs: sizesOf(op), Seed: Slope(sp), Ours: Slope(op)}
		first, last := 0, len(sp)-1
		g.SeedChange, g.OurChange = sp[last].Value/sp[first].Value-1, op[last].Value/op[first].Value-1
		g.SeedDir, g.OurDir = relation(sp[last], sp[first]), relation(op[last], op[first])
		if d, ok := expectDir[c.Expect]; ok && c.Expect != "" {
			g.SeedDir, g.Stated = d, true
		}
		g.Holds = g.SeedDir == g.OurDir
		if g.Holds && g.SeedDir != 0 && c.Kind != ClaimDirection && !g.Stated && !math.IsNaN(g.Seed) && !math.IsNaN(g.Ours) {
			g.Exponent = true
			g.Holds = math.Abs(g.Seed-g.Ours) <= SlopeTolerance
		}
		out = append(out, g)
	}
	return out
}

func byEngine(ps []Point) map[string]map[float64]Point {
	m := map[string]map[float64]Point{}
	for _, p := range ps {
		if p.N > 0 && p.Value > 0 && !p.Failed {
			if m[p.Engine] == nil {
				m[p.Engine] = map[float64]Point{}
			}
			m[p.Engine][p.N] = p
		}
	}
	return m
}

func sizesOf(ps []Point) []float64 {
	m := map[float64]bool{}
	for _, p := range ps {
		m[p.N] = true
	}
	return sortedKeys(m)
}
