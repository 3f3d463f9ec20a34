package oltp

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// drawLua prints DRAWS draws of sysbench.rand.<DIST>(1, ROWS) on one
// line after "draws:", from sysbench's own generator.
const drawLua = `function event()
   local n = tonumber(os.getenv("DRAWS"))
   local rows = tonumber(os.getenv("ROWS"))
   local f = sysbench.rand[os.getenv("DIST")]
   local out = {}
   for i = 1, n do out[#out + 1] = f(1, rows) end
   io.write("draws:", table.concat(out, " "), "\n")
end
`

// sysbenchDraws runs the installed sysbench (1.0, the seed's) with a
// fixed --rand-seed and its options opts, and returns n draws of
// sysbench.rand.<fn>(1, rows).
func sysbenchDraws(t *testing.T, fn string, rows int64, n int, opts ...string) []float64 {
	t.Helper()
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Fatalf("sysbench is not installed (scripts/install-servers.sh installs it): %v", err)
	}
	script := filepath.Join(t.TempDir(), "draw.lua")
	if err := os.WriteFile(script, []byte(drawLua), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--rand-seed=7", "--events=1", "--threads=1"}, opts...)
	cmd := exec.Command("sysbench", append(args, script, "run")...)
	cmd.Env = append(os.Environ(), "DRAWS="+strconv.Itoa(n), "ROWS="+strconv.FormatInt(rows, 10), "DIST="+fn)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sysbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "draws:"); ok {
			var v []float64
			for _, f := range strings.Fields(rest) {
				x, err := strconv.ParseFloat(f, 64)
				if err != nil {
					t.Fatalf("sysbench printed %q: %v", f, err)
				}
				v = append(v, x)
			}
			if len(v) != n {
				t.Fatalf("sysbench printed %d draws, want %d", len(v), n)
			}
			return v
		}
	}
	t.Fatalf("sysbench printed no draws:\n%s", out)
	return nil
}

// plannedIDs are the point selects' ids of oltp_read_only transactions as
// the workload plans them (seed 1), n in all: the draws under test are the
// workload's own.
func plannedIDs(t *testing.T, p Params, rows int64, n int) []float64 {
	t.Helper()
	r := &run{p: p, seed: 1, rows: rows, threads: 1, dist: newDist(p)}
	tx := newTx(r, PhaseReadOnly, &counters{})
	var ids []float64
	for seq := int64(0); len(ids) < n; seq++ {
		tx.plan(seq, 0)
		for _, s := range tx.stmts {
			if s.Kind == PointSelect && len(ids) < n {
				if s.Lo < 1 || s.Lo > rows {
					t.Fatalf("id %d drawn outside [1, %d]", s.Lo, rows)
				}
				ids = append(ids, float64(s.Lo))
			}
		}
	}
	return ids
}

// sameDist compares two samples of ids in [1, rows] and says why they do
// not come from the same distribution ("" when nothing tells them
// apart): the share of draws on the hottest 1% of ids (each sample's
// own) within 2 points, the two-sample Kolmogorov–Smirnov statistic
// under its critical value at α = 0.001, and a chi-square test of
// homogeneity over bins of ids (adjacent bins merged until each holds
// 20 draws of the two) at p ≥ 0.001.
func sameDist(t *testing.T, ours, theirs []float64, rows int64) string {
	t.Helper()
	ho, ht := hotShare(ours, rows), hotShare(theirs, rows)
	ours, theirs = slices.Clone(ours), slices.Clone(theirs)
	slices.Sort(ours)
	slices.Sort(theirs)
	d := stat.KolmogorovSmirnov(ours, nil, theirs, nil)
	n, m := float64(len(ours)), float64(len(theirs))
	crit := 1.949 * math.Sqrt((n+m)/(n*m))

	const bins = 400
	binOf := func(x float64) int { return min(int((x-1)*bins/float64(rows)), bins-1) }
	var co, ct [bins]float64
	for _, x := range ours {
		co[binOf(x)]++
	}
	for _, x := range theirs {
		ct[binOf(x)]++
	}
	// Equal sample sizes: sum over bins of (R-S)²/(R+S), df bins-1.
	chi, df, ro, rt := 0.0, -1, 0.0, 0.0
	for i := range co {
		ro, rt = ro+co[i], rt+ct[i]
		if ro+rt >= 20 || i == bins-1 {
			if ro+rt > 0 {
				chi += (ro - rt) * (ro - rt) / (ro + rt)
				df++
			}
			ro, rt = 0, 0
		}
	}
	pv := 1 - distuv.ChiSquared{K: float64(df)}.CDF(chi)
	t.Logf("hottest 1%% of ids: ours %.4f, sysbench %.4f; KS D %.4f (critical %.4f); chi-square %.1f on %d df, p %.3g", ho, ht, d, crit, chi, df, pv)
	var why []string
	if math.Abs(ho-ht) > 0.02 {
		why = append(why, "hot share differs")
	}
	if d > crit {
		why = append(why, "KS rejects")
	}
	if pv < 0.001 {
		why = append(why, "chi-square rejects")
	}
	return strings.Join(why, ", ")
}

// hotShare is the share of the draws on the hottest 1% of the ids.
func hotShare(v []float64, rows int64) float64 {
	count := map[float64]int{}
	for _, x := range v {
		count[x]++
	}
	var c []int
	for _, k := range count {
		c = append(c, k)
	}
	slices.Sort(c)
	slices.Reverse(c)
	hot := 0
	for i := 0; i < len(c) && int64(i) < rows/100; i++ {
		hot += c[i]
	}
	return float64(hot) / float64(len(v))
}

// textbookSpecial is the special distribution as its help text reads
// (75% of draws uniform over the middle 1% of ids, with a fresh uniform,
// the rest uniform over all): the fault a reimplementation from the
// description makes.
func textbookSpecial(rows int64, n int) []float64 {
	g := rand{s: 99}
	var v []float64
	for len(v) < n {
		if g.float() < 0.75 {
			lo := rows/2 - rows/200
			v = append(v, float64(lo+int64(g.float()*float64(rows/100+1))))
		} else {
			v = append(v, float64(g.intn(rows)))
		}
	}
	return v
}

// The workload's ids against sysbench's own draws, with sysbench's
// defaults (rand.default is the special distribution) and with other
// parameters: the same distribution; and the checker tells apart the
// faults it exists to catch (uniform draws, the textbook special, the
// wrong parameters).
func TestSpecialDrawsMatchSysbench(t *testing.T) {
	const n = 200_000
	special := defaults()
	special.RandType = RandSpecial
	uniform := defaults()
	other := special
	other.RandSpecPct, other.RandSpecRes = 5, 50

	for _, rows := range []int64{10_000, 1_000_000} {
		theirs := sysbenchDraws(t, "default", rows, n)
		t.Run("special/"+strconv.FormatInt(rows, 10), func(t *testing.T) {
			if why := sameDist(t, plannedIDs(t, special, rows, n), theirs, rows); why != "" {
				t.Errorf("our special draws differ from sysbench's: %s", why)
			}
		})
		t.Run("uniform_is_caught/"+strconv.FormatInt(rows, 10), func(t *testing.T) {
			if sameDist(t, plannedIDs(t, uniform, rows, n), theirs, rows) == "" {
				t.Error("uniform draws passed for sysbench's special distribution")
			}
		})
		t.Run("textbook_is_caught/"+strconv.FormatInt(rows, 10), func(t *testing.T) {
			if sameDist(t, textbookSpecial(rows, n), theirs, rows) == "" {
				t.Error("the textbook special distribution passed for sysbench's")
			}
		})
	}
	const rows = 10_000
	t.Run("uniform", func(t *testing.T) {
		theirs := sysbenchDraws(t, "default", rows, n, "--rand-type=uniform")
		if why := sameDist(t, plannedIDs(t, uniform, rows, n), theirs, rows); why != "" {
			t.Errorf("our uniform draws differ from sysbench's --rand-type=uniform: %s", why)
		}
	})
	t.Run("pct5_res50", func(t *testing.T) {
		theirs := sysbenchDraws(t, "special", rows, n, "--rand-spec-pct=5", "--rand-spec-res=50")
		if why := sameDist(t, plannedIDs(t, other, rows, n), theirs, rows); why != "" {
			t.Errorf("our special draws (pct 5, res 50) differ from sysbench's: %s", why)
		}
		if sameDist(t, plannedIDs(t, special, rows, n), theirs, rows) == "" {
			t.Error("the default parameters passed for --rand-spec-pct=5 --rand-spec-res=50")
		}
	})
}
