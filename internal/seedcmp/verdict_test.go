package seedcmp

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/results"
	"storebench/internal/sysinfo"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// A seed figure's precision is half its last written digit; two
// figures within the tie band are tied, further apart ordered.
func TestPrecisionAndTies(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{{53.18, 0.005 / 53.18}, {27, 0.5 / 27}, {1e8, 0.5 / 1e8}} {
		if got := PrecisionOf(c.v); !near(got, c.want) {
			t.Errorf("PrecisionOf(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	a, b := Point{Value: 53.18}, Point{Value: 53.79}
	if relation(a, b) != 0 {
		t.Errorf("53.18 against 53.79 (1.1%% apart) not tied")
	}
	if relation(Point{Value: 100}, Point{Value: 110}) != -1 || relation(Point{Value: 110}, Point{Value: 100}) != 1 {
		t.Errorf("10%% apart not ordered")
	}
	// Our spread over repeated steps widens the band.
	if relation(Point{Value: 100, Spread: 0.2}, Point{Value: 110}) != 0 {
		t.Errorf("10%% apart with a 20%% spread not tied")
	}
}

func power(engine string, c, k float64, ns ...float64) []Point {
	var out []Point
	for _, n := range ns {
		out = append(out, Point{Engine: engine, N: n, Value: c * math.Pow(n, k)})
	}
	return out
}

func TestSlopeIsTheGrowthExponent(t *testing.T) {
	for _, k := range []float64{0, 0.5, 1, 1.3} {
		if got := Slope(power("e", 3, k, 10, 100, 1e3, 1e5)); !near(got, k) {
			t.Errorf("slope of 3·n^%v = %v", k, got)
		}
	}
	if !math.IsNaN(Slope(power("e", 1, 1, 10, 10))) {
		t.Error("one size gave a slope")
	}
}

// seed000 are seed 000's own insert figures, in seconds, by engine.
func seed000(t *testing.T, engines ...string) []Point {
	s, err := Load("000")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, e := range engines {
		want[e] = true
	}
	var out []Point
	for _, g := range s.Findings[0].Figures {
		if s.Findings[0].ID != "insert" {
			t.Fatal("seed 000's first finding is not the insert")
		}
		if want[g.Engine] {
			out = append(out, Point{Engine: g.Engine, N: g.N, Value: g.Value})
		}
	}
	return out
}

// scaled is the seed's points at the sizes given, each times f(engine).
func scaled(ps []Point, f func(string) float64, ns ...float64) []Point {
	keep := map[float64]bool{}
	for _, n := range ns {
		keep[n] = true
	}
	var out []Point
	for _, p := range ps {
		if keep[p.N] {
			out = append(out, Point{Engine: p.Engine, N: p.N, Value: p.Value * f(p.Engine)})
		}
	}
	return out
}

// The seed's own figures, ten times faster on every engine, hold: same
// ordering at each size, same exponent. Reversing the engines' order
// flips the verdict to differs on the ordering, and an exponent of 0.5
// instead of the seed's (about 1) flips it on the growth.
func TestVerdictFlipsOnTheFaultItCatches(t *testing.T) {
	seed := seed000(t, "Cassandra", "Aerospike", "LevelDB")
	ladder := []float64{10, 1e3, 1e5}
	faster := func(string) float64 { return 0.1 }

	v := Compare(seed, scaled(seed, faster, ladder...))
	if v.Outcome != Holds || v.Ordering == nil || !v.Ordering.Holds || len(v.Ordering.Sizes) != 3 || len(v.Growth) != 3 {
		t.Fatalf("the seed itself, scaled: %+v", v)
	}
	for _, g := range v.Growth {
		if math.Abs(g.Seed-g.Ours) > 0.01 || !g.Holds || !g.Exponent {
			t.Errorf("%s: exponent %v seed, %v ours", g.Engine, g.Seed, g.Ours)
		}
	}

	// Reversed: at every size the slowest engine becomes the fastest.
	var reversed []Point
	st := table(seed)
	for _, n := range ladder {
		for e, val := range st[n] {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, w := range st[n] {
				lo, hi = math.Min(lo, w.Value), math.Max(hi, w.Value)
			}
			reversed = append(reversed, Point{Engine: e, N: n, Value: lo + hi - val.Value})
		}
	}
	v = Compare(seed, reversed)
	if v.Outcome != Differs || v.Ordering == nil || v.Ordering.Holds || len(v.Ordering.Discordant(fmtN)) == 0 {
		t.Errorf("reversed ordering: %+v", v.Ordering)
	}

	// A square-root growth where the seed grows about linearly, engines
	// in the seed's order at every size.
	var sqrt []Point
	for _, p := range seed000(t, "Cassandra", "Aerospike", "LevelDB") {
		if p.N == 10 {
			for _, n := range ladder {
				sqrt = append(sqrt, Point{Engine: p.Engine, N: n, Value: p.Value * math.Sqrt(n/10)})
			}
		}
	}
	v = Compare(seed, sqrt)
	if v.Outcome != Differs || v.Ordering == nil || !v.Ordering.Holds {
		t.Fatalf("sqrt growth: %+v", v)
	}
	for _, g := range v.Growth {
		if g.Holds || !near(g.Ours, 0.5) || g.Seed < 0.8 {
			t.Errorf("%s: exponent %v seed, %v ours, holds %v", g.Engine, g.Seed, g.Ours, g.Holds)
		}
	}
	if !strings.Contains(v.Summary(fmtN), "LevelDB from 10 to 1e+05: rises") {
		t.Errorf("summary: %s", v.Summary(fmtN))
	}
}

func fmtN(n float64) string { return strconv.FormatFloat(n, 'g', 4, 64) }

// A growth whose direction flips differs, however close the exponents:
// seed 003's MySQL write_only rose +20.7% from 8 to 64 threads; a run
// where it fell 5.6% held under an exponent tolerance of 0.25 over an
// 8× step. A flat figure (seed +0.5%) against a rise (+67%) differs
// too; the same rise holds.
func TestDirectionFlipDiffers(t *testing.T) {
	seed := []Point{{Engine: "MySQL", N: 8, Value: 1172.20}, {Engine: "MySQL", N: 64, Value: 1414.61}}
	for _, c := range []struct {
		name            string
		a, b            float64
		want            string
		seedDir, ourDir int
	}{
		{"fell", 1832, 1729, Differs, 1, -1},
		{"rose", 1500, 1800, Holds, 1, 1},
		{"flat", 1500, 1510, Differs, 1, 0},
	} {
		v := Compare(seed, []Point{{Engine: "MySQL", N: 8, Value: c.a}, {Engine: "MySQL", N: 64, Value: c.b}})
		if v.Outcome != c.want || len(v.Growth) != 1 || v.Growth[0].SeedDir != c.seedDir || v.Growth[0].OurDir != c.ourDir {
			t.Errorf("%s: %s %+v", c.name, v.Summary(fmtN), v.Growth)
		}
	}
	flat := []Point{{Engine: "MySQL", N: 8, Value: 565.04}, {Engine: "MySQL", N: 64, Value: 568.04}}
	if v := Compare(flat, []Point{{Engine: "MySQL", N: 8, Value: 900}, {Engine: "MySQL", N: 64, Value: 1503}}); v.Outcome != Differs {
		t.Errorf("seed flat, ours +67%%: %s", v.Summary(fmtN))
	}
	// The seed's words ("MySQL improves with threads") over those flat
	// figures: a rise holds, a flat figure differs.
	up := Claim{Kind: ClaimDirection, Expect: "up"}
	if v := Judge(up, flat, []Point{{Engine: "MySQL", N: 8, Value: 900}, {Engine: "MySQL", N: 64, Value: 1503}}); v.Outcome != Holds || !strings.Contains(v.Summary(fmtN), "the seed says it rises (its figures: +0.5%)") {
		t.Errorf("stated up, ours +67%%: %s", v.Summary(fmtN))
	}
	if v := Judge(up, flat, []Point{{Engine: "MySQL", N: 8, Value: 900}, {Engine: "MySQL", N: 64, Value: 910}}); v.Outcome != Differs {
		t.Errorf("stated up, ours flat: %s", v.Summary(fmtN))
	}
}

// Figures are set against each other only at equal sizes unless the
// finding allows sizes apart: the seed at 4.1e7 against ours at 1e6 is
// not comparable, and says how far apart they lie; allowed 100×, it
// is compared. A size where an engine the seed ranks did not run here
// is not ranked on fewer engines. One engine at one size, or nothing,
// is not comparable.
func TestVerdictAcrossSizesAndNotComparable(t *testing.T) {
	seed := []Point{{Engine: "A", N: 4.096e7, Value: 531}, {Engine: "B", N: 4.096e7, Value: 1671}, {Engine: "C", N: 4.096e7, Value: 17536}}
	ours := []Point{{Engine: "A", N: 1e6, Value: 10}, {Engine: "B", N: 1e6, Value: 30}, {Engine: "C", N: 1e6, Value: 20}}
	v := Compare(seed, ours)
	if v.Outcome != NotComparable || !strings.Contains(v.Why, "41× apart") {
		t.Errorf("across sizes: %s", v.Summary(fmtN))
	}
	v = Judge(Claim{SizeRatio: 100}, seed, ours)
	if v.Outcome != Differs || v.Ordering == nil || len(v.Ordering.Sizes) != 1 || v.Ordering.Sizes[0].OurN != 1e6 {
		t.Errorf("allowed 100× apart: %s", v.Summary(fmtN))
	}
	v = Compare(seed, []Point{{Engine: "A", N: 4.096e7, Value: 10}, {Engine: "B", N: 4.096e7, Value: 30}})
	if v.Outcome != NotComparable || !strings.Contains(v.Why, "C did not run here") {
		t.Errorf("two of the three engines ranked: %s", v.Summary(fmtN))
	}
	v = Compare(seed, []Point{{Engine: "A", N: 1e6, Value: 10}})
	if v.Outcome != NotComparable || v.Ordering != nil || len(v.Growth) != 0 {
		t.Errorf("one engine at one size: %+v", v)
	}
	if v = Compare(seed, nil); v.Outcome != NotComparable || !strings.Contains(v.Why, "none of the seed's engines") {
		t.Errorf("nothing ran: %+v", v)
	}
}

// A ratio claim holds inside its band and differs outside it; a
// failure claim holds where the engine failed at that size here too.
func TestRatioAndFailureClaims(t *testing.T) {
	c := Claim{Kind: ClaimRatio, Of: "MPT", To: "OnvaKV", Min: 10, Max: 100}
	seed := []Point{{Engine: "MPT", N: 1e6, Value: 300}, {Engine: "OnvaKV", N: 1e6, Value: 10}}
	if v := Judge(c, seed, []Point{{Engine: "MPT", N: 1e6, Value: 50}, {Engine: "OnvaKV", N: 1e6, Value: 2}}); v.Outcome != Holds {
		t.Errorf("25× in 10–100×: %s", v.Summary(fmtN))
	}
	if v := Judge(c, seed, []Point{{Engine: "MPT", N: 1e6, Value: 5}, {Engine: "OnvaKV", N: 1e6, Value: 2}}); v.Outcome != Differs || !strings.Contains(v.Summary(fmtN), "outside the claim's 10–100×") {
		t.Errorf("2.5× in 10–100×: %s", v.Summary(fmtN))
	}
	f := Claim{Kind: ClaimFails, Of: "MongoDB", At: 64}
	if v := Judge(f, nil, []Point{{Engine: "MongoDB", N: 64, Failed: true}}); v.Outcome != Holds {
		t.Errorf("failed at 64: %+v", v)
	}
	if v := Judge(f, nil, []Point{{Engine: "MongoDB", N: 64, Value: 100}}); v.Outcome != Differs {
		t.Errorf("ran at 64: %+v", v)
	}
	if v := Judge(f, nil, []Point{{Engine: "MongoDB", N: 8, Value: 100}}); v.Outcome != NotComparable {
		t.Errorf("not run at 64: %+v", v)
	}
	// Node.js changes more with concurrency than Apache (+100% against
	// +10%): steeper holds; the other way round it differs.
	st := Claim{Kind: ClaimSteeper, Of: "Node.js", To: "Apache"}
	node := []Point{{Engine: "Node.js", N: 100, Value: 1000}, {Engine: "Node.js", N: 500, Value: 2000}, {Engine: "Apache", N: 100, Value: 1000}, {Engine: "Apache", N: 500, Value: 1100}}
	if v := Judge(st, nil, node); v.Outcome != Holds {
		t.Errorf("steeper: %s", v.Summary(fmtN))
	}
	if v := Judge(Claim{Kind: ClaimSteeper, Of: "Apache", To: "Node.js"}, nil, node); v.Outcome != Differs {
		t.Errorf("less steep: %s", v.Summary(fmtN))
	}
	// A rate during GC passes at 0.73 of the rate outside them is
	// outside "does not affect" (≥ 0.9).
	bd := Claim{Kind: ClaimBound, Min: 0.9}
	if v := Judge(bd, nil, []Point{{Engine: "geo", Value: 0.73}}); v.Outcome != Differs || !strings.Contains(v.Summary(fmtN), "outside ≥ 0.9") {
		t.Errorf("bound: %s", v.Summary(fmtN))
	}
	if v := Judge(bd, nil, []Point{{Engine: "geo", Value: 0.97}}); v.Outcome != Holds {
		t.Errorf("bound: %s", v.Summary(fmtN))
	}
}

// A finding set beside a run: ours is read from the steps the finding
// names, at the seed's sizes; an engine that did not run and a size not
// run are said so; a verdict that differs names as causes the
// conditions its finding depends on that results.json measured apart
// from the seed's (durability class, page cache, CPU count), and none
// it does not depend on.
func TestAgainstReadsOursFromTheRun(t *testing.T) {
	s, err := Load("000")
	if err != nil {
		t.Fatal(err)
	}
	s.Findings[0].DependsOn = []string{"durability", "page_cache", "cpus"}
	step := func(n int64, secs float64, cached bool) *results.Step {
		st := &results.Step{Workload: "ledger", Phase: "insert", N: n, Seconds: secs}
		st.Resources.CacheTotal = 1 << 20
		if cached {
			st.Resources.CacheResident = 1 << 20
		}
		return st
	}
	run := &results.Run{
		StudySource: "name: ledger\nseed_study: \"000\"  # the seed\n",
		Durability:  "sync",
		Host:        sysinfo.Host{LogicalCPUs: 2, MemTotalBytes: 8 << 30},
		Targets: []*results.Target{
			// LevelDB grows as the square root: the growth differs.
			{Name: "leveldb", Settings: map[string]string{"durability": "sync (fsync)"}, Steps: []*results.Step{step(10, 0.001, true), step(1000, 0.01, true), step(100000, 0.1, true)}},
			{Name: "pebble", Steps: []*results.Step{step(10, 1, false)}},
		},
	}
	if got := SeedOf(run); got != "000" {
		t.Fatalf("SeedOf = %q", got)
	}
	res := Against(s, run)
	var ins *FindingResult
	for i := range res.Findings {
		if res.Findings[i].Finding.ID == "insert" {
			ins = &res.Findings[i]
		}
	}
	if ins == nil {
		t.Fatal("no insert finding")
	}
	byKey := map[string]Row{}
	for _, r := range ins.Rows {
		byKey[r.Figure.Engine+"@"+formatN(r.Figure.N)] = r
	}
	if r := byKey["LevelDB@1000"]; !r.Have || r.Ours != 0.01 || r.Target != "leveldb" {
		t.Errorf("LevelDB at 1e3: %+v", r)
	}
	if r := byKey["LevelDB@100"]; r.Have || r.Missing != SizeNotRun {
		t.Errorf("LevelDB at 100: %+v", r)
	}
	if r := byKey["Cassandra@10"]; r.Have || r.Missing != EngineNotRun {
		t.Errorf("Cassandra at 10: %+v", r)
	}
	v := ins.Verdict
	if v.Outcome != Differs || v.Ordering != nil || len(v.Growth) != 1 || !near(v.Growth[0].Ours, 0.5) {
		t.Fatalf("verdict: %+v", v)
	}
	joined := strings.Join(v.Reasons, " | ")
	for _, want := range []string{"durability class: the seed's engines async", "ours sync", "the page cache held the data here", "leveldb at 1e5", "CPU count: the seed's 4 (nuc), ours 2"} {
		if !strings.Contains(joined, want) {
			t.Errorf("reasons %q lack %q", joined, want)
		}
	}
	// A finding that does not depend on the CPU count is not explained
	// by it.
	s.Findings[0].DependsOn = []string{"durability"}
	if v := Against(s, run).Findings[0].Verdict; len(v.Reasons) != 1 || strings.Contains(strings.Join(v.Reasons, " "), "CPU") {
		t.Errorf("reasons beyond what the finding depends on: %q", v.Reasons)
	}
	s.Findings[0].DependsOn = []string{"durability", "page_cache", "cpus"}
	if len(res.Elsewhere) != 0 {
		t.Errorf("elsewhere: %v", res.Elsewhere)
	}

	// The same growth in the seed's durability class, on its CPU count,
	// with the files not all cached: still differs, and nothing measured
	// explains it.
	run.Durability, run.Host.LogicalCPUs = "async", 4
	for _, st := range run.Targets[0].Steps {
		st.Resources.CacheResident = 0
	}
	res = Against(s, run)
	if v := res.Findings[0].Verdict; v.Outcome != Differs || len(v.Reasons) != 0 {
		t.Errorf("no measured reason applies: %+v", v)
	}
}

func formatN(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }
