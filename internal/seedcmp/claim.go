package seedcmp

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/results"
)

// Kinds of claim a finding makes.
const (
	// ClaimAuto: the engines' ordering at each size and each engine's
	// growth, whichever the figures have (a table of the seed's).
	ClaimAuto = ""
	// ClaimOrdering: the engines rank the same at each size.
	ClaimOrdering = "ordering"
	// ClaimGrowth: each engine's figure changes in the same direction
	// between the sizes, with an exponent within SlopeTolerance.
	ClaimGrowth = "growth"
	// ClaimDirection: each engine's figure rises, stays flat or falls
	// between the sizes as the seed's does.
	ClaimDirection = "direction"
	// ClaimRatio: engine Of's figure over engine To's lies within
	// [Min, Max] at each size both ran.
	ClaimRatio = "ratio"
	// ClaimFails: engine Of fails at size At (the seed's "cannot").
	ClaimFails = "fails"
	// ClaimSteeper: engine Of's figure changes more, from the first size
	// to the last, than engine To's (the seed's "more sensitive").
	ClaimSteeper = "steeper"
	// ClaimBound: each of our figures lies within [Min, Max] (the
	// seed's "does not affect", with the bound it implies).
	ClaimBound = "bound"
	// ClaimScaling: each engine's growth exponent, fitted over all of
	// the seed's sizes and over all of ours, within SlopeTolerance, the
	// two sets of sizes apart if need be: how a rate grows with vCPUs
	// over the seed's machines of 2 to 48 against ours over machine
	// shapes of 0.5 to 2. Only the exponents compare: a change from the
	// first size to the last spans other size ratios on each side.
	ClaimScaling = "scaling"
)

// Claim is what a finding claims, and so the check its verdict runs.
type Claim struct {
	Kind string `yaml:"kind"`
	// Engines limits the claim to these of the seed's engines.
	Engines []string `yaml:"engines"`
	// SizeRatio is how far apart (a factor) the seed's size and ours
	// may lie for their figures to be set against each other; 0 or 1:
	// only equal sizes.
	SizeRatio float64 `yaml:"size_ratio"`
	// Of, To, Min, Max: a ratio claim (Of / To in [Min, Max]); Of and
	// At: a failure claim.
	Of  string  `yaml:"of"`
	To  string  `yaml:"to"`
	Min float64 `yaml:"min"`
	Max float64 `yaml:"max"`
	At  float64 `yaml:"at"`
	// Expect is the direction the seed's words state (up, flat, down)
	// where its own figures would read otherwise ("MySQL improves with
	// threads" over a read_only figure that moved +0.5%): a direction
	// or growth claim tests it instead of the figures' direction.
	Expect string `yaml:"expect"`
}

func (c Claim) withDefaults() Claim { return c }

func (c Claim) check(engines map[string]bool) error {
	switch c.Kind {
	case ClaimAuto, ClaimOrdering, ClaimGrowth, ClaimDirection, ClaimScaling:
	case ClaimRatio:
		if c.Of == "" || c.To == "" || !(c.Min > 0 || c.Max > 0) || (c.Max > 0 && c.Max < c.Min) {
			return errors.New("a ratio claim needs of, to and a band (min and/or max, min ≤ max)")
		}
	case ClaimFails:
		if c.Of == "" || c.At <= 0 {
			return errors.New("a failure claim needs of and at")
		}
	case ClaimSteeper:
		if c.Of == "" || c.To == "" {
			return errors.New("a steeper claim needs of and to")
		}
	case ClaimBound:
		if !(c.Min > 0 || c.Max > 0) || (c.Max > 0 && c.Max < c.Min) {
			return errors.New("a bound claim needs min and/or max, min ≤ max")
		}
	default:
		return fmt.Errorf("kind %q unknown (ordering, growth, direction, ratio, fails, steeper, bound, scaling)", c.Kind)
	}
	for _, e := range append(append([]string{}, c.Engines...), c.Of, c.To) {
		if e != "" && !engines[e] {
			return fmt.Errorf("engine %q is not among the seed's engines", e)
		}
	}
	if _, ok := expectDir[c.Expect]; c.Expect != "" && !ok {
		return fmt.Errorf("expect %q: want up, flat or down", c.Expect)
	}
	if c.SizeRatio < 0 {
		return fmt.Errorf("size_ratio %g: want 1 or more", c.SizeRatio)
	}
	return nil
}

var expectDir = map[string]int{"up": 1, "flat": 0, "down": -1}

// RatioAt is a ratio claim's figures at one size.
type RatioAt struct {
	SeedN, OurN float64
	Seed, Ours  float64 // Of / To; NaN where that side has no figure
	Min, Max    float64 // the claim's band (0: unbounded)
	Holds       bool
}

// FailsAt is a failure claim's figure: whether Of failed here at At.
type FailsAt struct {
	Engine string
	At     float64
	Failed bool
}

func judgeRatio(c Claim, seed, ours []Point) Verdict {
	v := Verdict{Claim: c.Kind, Outcome: Holds}
	st, ot := table(seed), table(ours)
	ratio := func(m map[string]Point) float64 {
		a, okA := m[c.Of]
		b, okB := m[c.To]
		if !okA || !okB || a.Failed || b.Failed || b.Value == 0 {
			return math.NaN()
		}
		return a.Value / b.Value
	}
	seedNs := sortedKeys(st)
	if len(seedNs) == 0 {
		// A claim of the seed's words alone: our sizes stand by
		// themselves.
		seedNs = sortedKeys(ot)
	}
	for _, pr := range pairSizes(c, seedNs, sortedKeys(ot)) {
		r := RatioAt{SeedN: pr[0], OurN: pr[1], Seed: ratio(st[pr[0]]), Ours: ratio(ot[pr[1]]), Min: c.Min, Max: c.Max}
		if math.IsNaN(r.Ours) {
			continue
		}
		r.Holds = (c.Min <= 0 || r.Ours >= c.Min) && (c.Max <= 0 || r.Ours <= c.Max)
		if !r.Holds {
			v.Outcome = Differs
		}
		v.Ratio = append(v.Ratio, r)
	}
	if len(v.Ratio) == 0 {
		v.Outcome = NotComparable
		v.Why = fmt.Sprintf("needs %s and %s at one size here", c.Of, c.To)
	}
	return v
}

// judgeSteeper compares the relative change of Of and To from the
// first size to the last both ran, here (and in the seed, shown).
func judgeSteeper(c Claim, seed, ours []Point) Verdict {
	v := Verdict{Claim: c.Kind}
	change := func(ps []Point, e string) (float64, bool) {
		m := byEngine(ps)[e]
		ns := sortedKeys(m)
		if len(ns) < 2 {
			return 0, false
		}
		return math.Abs(m[ns[len(ns)-1]].Value/m[ns[0]].Value - 1), true
	}
	a, okA := change(ours, c.Of)
	b, okB := change(ours, c.To)
	if !okA || !okB {
		v.Outcome, v.Why = NotComparable, fmt.Sprintf("needs %s and %s each at two sizes here", c.Of, c.To)
		return v
	}
	sa, _ := change(seed, c.Of)
	sb, _ := change(seed, c.To)
	v.Steeper = &SteeperAt{Of: c.Of, To: c.To, Ours: [2]float64{a, b}, Seed: [2]float64{sa, sb}}
	v.Outcome = Differs
	if a > b*(1+TieFloor) {
		v.Outcome = Holds
	}
	return v
}

// SteeperAt is a steeper claim's figures: the relative changes of Of
// and To, here and in the seed.
type SteeperAt struct {
	Of, To     string
	Ours, Seed [2]float64
}

// judgeScaling fits each engine's growth exponent over all of the
// seed's sizes and all of ours (ClaimScaling): the sizes need not meet.
func judgeScaling(c Claim, seed, ours []Point) Verdict {
	v := Verdict{Claim: c.Kind, Outcome: Holds}
	st, ot := pointsByEngine(seed), pointsByEngine(ours)
	var engines []string
	for e := range st {
		if len(c.Engines) == 0 || contains(c.Engines, e) {
			engines = append(engines, e)
		}
	}
	sort.Strings(engines)
	var short []string
	for _, e := range engines {
		sp, op := st[e], ot[e]
		if len(sizesOf(sp)) < 2 || len(sizesOf(op)) < 2 {
			if len(op) > 0 {
				short = append(short, fmt.Sprintf("%s at %s here", e, sizeList(sizesOf(op))))
			}
			continue
		}
		g := Growth{Engine: e, SeedNs: sizesOf(sp), OurNs: sizesOf(op), Seed: Slope(sp), Ours: Slope(op), Exponent: true, Apart: true}
		sf, sl := meanAt(sp, g.SeedNs[0]), meanAt(sp, g.SeedNs[len(g.SeedNs)-1])
		of, ol := meanAt(op, g.OurNs[0]), meanAt(op, g.OurNs[len(g.OurNs)-1])
		g.SeedChange, g.OurChange = sl.Value/sf.Value-1, ol.Value/of.Value-1
		g.SeedDir, g.OurDir = relation(sl, sf), relation(ol, of)
		g.Holds = math.Abs(g.Seed-g.Ours) <= SlopeTolerance
		if !g.Holds {
			v.Outcome = Differs
		}
		v.Growth = append(v.Growth, g)
	}
	if len(v.Growth) == 0 {
		v.Outcome = NotComparable
		v.Why = "needs each engine at two sizes or more in both the seed and this run, to fit each a growth exponent"
		if len(short) > 0 {
			v.Why += " (" + strings.Join(short, "; ") + ")"
		}
	}
	return v
}

// pointsByEngine are the points of a size and a value, each engine's.
func pointsByEngine(ps []Point) map[string][]Point {
	m := map[string][]Point{}
	for _, p := range ps {
		if p.N > 0 && p.Value > 0 && !p.Failed {
			m[p.Engine] = append(m[p.Engine], p)
		}
	}
	return m
}

// meanAt is the mean of the points at size n (the seed may have two
// machines of one vCPU count), their spread and precision the widest.
func meanAt(ps []Point, n float64) Point {
	out := Point{N: n}
	k := 0
	for _, p := range ps {
		if p.N == n {
			out.Engine = p.Engine
			out.Value += p.Value
			out.Spread, out.Precision = math.Max(out.Spread, p.Spread), math.Max(out.Precision, p.Precision)
			k++
		}
	}
	if k > 0 {
		out.Value /= float64(k)
	}
	return out
}

// judgeBound checks each of our figures against [Min, Max].
func judgeBound(c Claim, ours []Point) Verdict {
	v := Verdict{Claim: c.Kind, Outcome: Holds}
	for _, p := range ours {
		if p.Failed || (len(c.Engines) > 0 && !contains(c.Engines, p.Engine)) {
			continue
		}
		in := (c.Min <= 0 || p.Value >= c.Min) && (c.Max <= 0 || p.Value <= c.Max)
		v.Bound = append(v.Bound, BoundAt{Engine: p.Engine, N: p.N, Value: p.Value, Min: c.Min, Max: c.Max, Holds: in})
		if !in {
			v.Outcome = Differs
		}
	}
	if len(v.Bound) == 0 {
		v.Outcome, v.Why = NotComparable, "no figure of ours to bound"
	}
	return v
}

// BoundAt is one of our figures set against a bound claim.
type BoundAt struct {
	Engine   string
	N, Value float64
	Min, Max float64
	Holds    bool
}

func judgeFails(c Claim, ours []Point) Verdict {
	v := Verdict{Claim: c.Kind}
	for _, p := range ours {
		if p.Engine == c.Of && p.N == c.At {
			v.Fails = &FailsAt{Engine: c.Of, At: c.At, Failed: p.Failed}
		}
	}
	switch {
	case v.Fails == nil:
		v.Outcome, v.Why = NotComparable, fmt.Sprintf("%s did not run at %g here", c.Of, c.At)
	case v.Fails.Failed:
		v.Outcome = Holds
	default:
		v.Outcome = Differs
	}
	return v
}

// Summary says the verdict in one line, every figure it rests on
// computed: "differs: growth from 8 to 64: MySQL +20.7% in the seed,
// -5.6% here".
func (v Verdict) Summary(count func(float64) string) string {
	if v.Outcome == NotComparable {
		return NotComparable + ": " + v.Why
	}
	var parts []string
	if o := v.Ordering; o != nil {
		parts = append(parts, orderingSummary(o, count))
	}
	for _, g := range v.Growth {
		parts = append(parts, growthSummary(g, count))
	}
	for _, r := range v.Ratio {
		parts = append(parts, ratioSummary(r, count))
	}
	if st := v.Steeper; st != nil {
		parts = append(parts, fmt.Sprintf("%s changes %s and %s %s here (seed: %s and %s)", st.Of, pct(st.Ours[0]), st.To, pct(st.Ours[1]), pct(st.Seed[0]), pct(st.Seed[1])))
	}
	for _, bd := range v.Bound {
		word := "within"
		if !bd.Holds {
			word = "outside"
		}
		at := " at " + count(bd.N)
		if bd.N == 0 {
			at = "" // a figure at no size
		}
		parts = append(parts, fmt.Sprintf("%s%s: %s, %s %s", bd.Engine, at, strconv.FormatFloat(bd.Value, 'g', 4, 64), word, band2(bd.Min, bd.Max)))
	}
	if f := v.Fails; f != nil {
		if f.Failed {
			parts = append(parts, fmt.Sprintf("%s failed at %s here too", f.Engine, count(f.At)))
		} else {
			parts = append(parts, fmt.Sprintf("%s ran at %s here without failing", f.Engine, count(f.At)))
		}
	}
	s := v.Outcome + ": " + strings.Join(parts, "; ")
	if v.Outcome == Differs {
		if len(v.Reasons) > 0 {
			s += ". Measured cause: " + strings.Join(v.Reasons, "; ")
		} else {
			s += ". Unexplained: nothing this run measured accounts for it"
		}
	}
	return s
}

func orderingSummary(o *Ordering, count func(float64) string) string {
	var at []string
	pairs, ties := 0, 0
	for _, s := range o.Sizes {
		if s.SeedN == s.OurN {
			at = append(at, count(s.SeedN))
		} else {
			at = append(at, fmt.Sprintf("seed at %s, ours at %s", count(s.SeedN), count(s.OurN)))
		}
		for _, p := range s.Pairs {
			pairs++
			if p.Seed == 0 || p.Ours == 0 {
				ties++
			}
		}
	}
	tie := ""
	if ties > 0 {
		tie = fmt.Sprintf(", %d of them tied within %.0f%% on one side, which matches either order", ties, TieFloor*100)
	}
	if o.Holds {
		return fmt.Sprintf("same engine ordering (no pair of engines reversed of %d, at %s%s)", pairs, strings.Join(at, ", "), tie)
	}
	d := o.Discordant(count)
	return fmt.Sprintf("engine ordering differs (%d of %d pairs reversed: %s)", len(d), pairs, strings.Join(d, "; "))
}

func growthSummary(g Growth, count func(float64) string) string {
	word := map[int]string{-1: "falls", 0: "flat", 1: "rises"}
	if g.Apart {
		rel := ">"
		if g.Holds {
			rel = "≤"
		}
		span := func(ns []float64) string { return count(ns[0]) + " to " + count(ns[len(ns)-1]) }
		return fmt.Sprintf("%s over the seed's sizes %s and ours %s (%d and %d sizes, each side's exponent fitted over all of its own): %s %s in the seed, %s %s here, exponent %.2f seed, %.2f ours (|Δ| %.2f %s %.2f)",
			g.Engine, span(g.SeedNs), span(g.OurNs), len(g.SeedNs), len(g.OurNs), word[g.SeedDir], pct(g.SeedChange), word[g.OurDir], pct(g.OurChange),
			g.Seed, g.Ours, math.Abs(g.Seed-g.Ours), rel, SlopeTolerance)
	}
	from, to := count(g.SeedNs[0]), count(g.SeedNs[len(g.SeedNs)-1])
	if g.OurNs[0] != g.SeedNs[0] || g.OurNs[len(g.OurNs)-1] != g.SeedNs[len(g.SeedNs)-1] {
		from += " (ours " + count(g.OurNs[0]) + ")"
		to += " (ours " + count(g.OurNs[len(g.OurNs)-1]) + ")"
	}
	seed := word[g.SeedDir] + " " + pct(g.SeedChange) + " in the seed"
	if g.Stated {
		seed = fmt.Sprintf("the seed says it %s (its figures: %s)", map[int]string{-1: "falls", 0: "stays flat", 1: "rises"}[g.SeedDir], pct(g.SeedChange))
	}
	s := fmt.Sprintf("%s from %s to %s: %s, %s %s here", g.Engine, from, to, seed, word[g.OurDir], pct(g.OurChange))
	if g.Exponent {
		rel := ">"
		if g.Holds {
			rel = "≤"
		}
		s += fmt.Sprintf(", exponent %.2f seed, %.2f ours (|Δ| %.2f %s %.2f)", g.Seed, g.Ours, math.Abs(g.Seed-g.Ours), rel, SlopeTolerance)
	}
	return s
}

// band2 says [min, max] with either open (0).
func band2(lo, hi float64) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
	switch {
	case lo > 0 && hi > 0:
		return f(lo) + "–" + f(hi)
	case hi > 0:
		return "≤ " + f(hi)
	}
	return "≥ " + f(lo)
}

// pct is a relative change as a percentage, or past doubling as a
// factor (×8,938 reads better than +893,704%).
func pct(x float64) string {
	if x >= 999 {
		return "×" + strconv.FormatFloat(x+1, 'f', 0, 64)
	}
	if x > 1 {
		return "×" + strconv.FormatFloat(x+1, 'g', 3, 64)
	}
	s := strconv.FormatFloat(x*100, 'f', 1, 64) + "%"
	if x >= 0 {
		s = "+" + s
	}
	return s
}

func ratioSummary(r RatioAt, count func(float64) string) string {
	seed := "—"
	if !math.IsNaN(r.Seed) {
		seed = strconv.FormatFloat(r.Seed, 'g', 3, 64) + "×"
	}
	word := "within"
	if !r.Holds {
		word = "outside"
	}
	return fmt.Sprintf("ratio at %s: %s× here (seed %s), %s the claim's %s×", count(r.OurN), strconv.FormatFloat(r.Ours, 'g', 3, 64), seed, word, band2(r.Min, r.Max))
}

// failures are the steps of a finding's phase that ran and failed, by
// the seed engine each stands for: what a failure claim looks for.
func failures(run *results.Run, stand map[string]*results.Target, o *Ours) []Point {
	var out []Point
	for e, t := range stand {
		for _, st := range t.Steps {
			if st.Workload != o.Workload || (o.Phase != "" && st.Phase != o.Phase) || st.Error == "" || !where(st, o.Where) {
				continue
			}
			if n, ok := stepSize(run, t, st, o.Size); ok {
				out = append(out, Point{Engine: e, N: n, Failed: true})
			}
		}
	}
	return out
}
