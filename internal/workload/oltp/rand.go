package oltp

import (
	"fmt"
	"math"
)

// How a transaction draws its ids (sysbench's get_id(), and the k its
// insert writes) and prepare its k values (sysbench's sb_rand): the
// rand_type parameter, sysbench's --rand-type. The table a statement goes
// to is uniform either way, as sysbench's get_table_num().
const (
	// RandUniform: every id equally likely (sysbench --rand-type=uniform;
	// storebench's default scale).
	RandUniform = "uniform"
	// RandSpecial: sysbench 1.0's default, and the seed's (sb_rand_special
	// in sysbench's src/sb_rand.c): rand_spec_res percent of the draws
	// land on rand_spec_pct percent of the ids near the middle of the
	// range, the rest on a bell curve over the whole range.
	RandSpecial = "special"
)

// specIter is sysbench's --rand-spec-iter default: uniforms summed for a
// draw of the bell curve (sysbench 1.0 has no other use for it here).
const specIter = 12

// dist draws ids in [1, n] as sysbench's sysbench.rand.default does for
// its --rand-type; the multipliers are sysbench's, computed once as
// sb_rand_init does.
type dist struct {
	special                              bool
	iterMult, pctMult, pct2Mult, resMult float64
	pct, res                             int
}

func newDist(p Params) dist {
	return dist{
		special:  p.RandType == RandSpecial,
		iterMult: 1.0 / specIter,
		pctMult:  float64(p.RandSpecPct) / 100.0,
		pct2Mult: float64(p.RandSpecPct) / 200.0,
		resMult:  100.0 / (100.0 - float64(p.RandSpecRes)),
		pct:      p.RandSpecPct,
		res:      p.RandSpecRes,
	}
}

// id draws from [1, n] (n at most MaxInt32: sysbench's ids are
// uint32).
func (d *dist) id(g *rand, n int64) int64 {
	if !d.special {
		return g.intn(n)
	}
	return int64(d.draw(g, 1, uint32(n)))
}

// draw is sb_rand_special(a, b) of sysbench 1.0.20, operation for
// operation in float64 (each product rounded as C rounds it: the explicit
// conversions keep Go from fusing a multiply and an add). The first
// uniform decides: below t/range_size (100 − res percent of draws) the
// mean of specIter uniforms scaled over [a, b]; otherwise the same
// uniform, reused, places the draw in the pct percent of the range just
// past its middle.
func (d *dist) draw(g *rand, a, b uint32) uint32 {
	t := float64(b - a)
	rangeSize := float64(t * d.resMult)
	rnd := g.float()
	res := float64(rnd * rangeSize)
	if res < t {
		sum := 0.0
		for i := 0; i < specIter; i++ {
			sum += g.float()
		}
		return uint32(float64(a) + float64(float64(sum*t)*d.iterMult))
	}
	w := float64(t * d.pctMult)
	res = float64(rnd * (w + 1))
	res += t/2 - float64(t*d.pct2Mult)
	return a + uint32(res)
}

// float is uniform in [0, 1) as sb_rand_uniform_double makes it: the top
// 52 bits of a 64-bit draw as a mantissa in [1, 2), minus one.
func (g *rand) float() float64 {
	return math.Float64frombits(0x3FF<<52|g.next()>>12) - 1
}

// describe says how ids were drawn, for the report.
func (d *dist) describe() string {
	if !d.special {
		return "uniform (sysbench --rand-type=uniform)"
	}
	return fmt.Sprintf("special, sysbench 1.0's default (--rand-type=special --rand-spec-pct=%d --rand-spec-res=%d): %d%% of draws on about %d%% of the ids near the middle, the rest on a bell curve over all ids", d.pct, d.res, d.res, d.pct)
}
