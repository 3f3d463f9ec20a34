package seedcmp

import (
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

// keptRun reads docs/runs/NAME and its seed, and returns the verdict of
// finding id set against it.
func keptRun(t *testing.T, name, id string) (*results.Run, FindingResult) {
	t.Helper()
	run, err := results.Read(filepath.Join("..", "..", "docs", "runs", name, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(SeedOf(run))
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range Against(s, run).Findings {
		if fr.Finding.ID == id {
			return run, fr
		}
	}
	t.Fatalf("%s: no finding %s set against it", name, id)
	return nil, FindingResult{}
}

// Seed 003's MySQL write_only rose 20.7% from 8 to 64 threads (1172 →
// 1415 tps); ours fell 5.6% (1832 → 1729) in the kept uncut run: the
// direction flips, so the verdict differs (it said "holds": a growth
// tolerance of 0.25 over an 8× step allowed it). Recomputed here from
// the steps' own tps.
func TestWriteOnlyDirectionFlipDiffers(t *testing.T) {
	run, fr := keptRun(t, "web-oltp-seed-uncut-20261127", "oltp_write_only_tps")
	tps := map[float64]float64{}
	for _, tr := range run.Targets {
		if tr.Name != "mariadb" {
			continue
		}
		for _, st := range tr.Steps {
			if st.Workload == "oltp" && st.Phase == "write_only" && st.Error == "" {
				tps[st.Metrics["threads"]] = st.Metrics["tps"]
			}
		}
	}
	if tps[8] == 0 || tps[64] == 0 {
		t.Fatalf("no write_only tps at 8 and 64 threads: %v", tps)
	}
	ours := tps[64]/tps[8] - 1
	v := fr.Verdict
	if v.Outcome != Differs || len(v.Growth) != 1 || v.Growth[0].SeedDir != 1 || v.Growth[0].OurDir != -1 || !near(v.Growth[0].OurChange, ours) {
		t.Fatalf("write_only: %s (ours %+.3f by hand)", v.Summary(fmtN), ours)
	}
	if !strings.Contains(v.Summary(fmtN), "rises +20.7% in the seed, falls -5.6% here") {
		t.Errorf("summary: %s", v.Summary(fmtN))
	}
}

// Seed 000's insert at 1e5: Aerospike 53.18 s against LevelDB 53.79 s,
// 1.1% apart, is a tie, which matches either order: it is no reversed
// pair, whatever order ours has (it alone made the verdict "differs",
// ρ −1 at that size). The kept run's Cassandra and FerretDB were cut
// at 1e5, so the full ranking skips that size; the two engines' own
// claim, on the kept run's figures, ranks them there.
func TestSeedTieIsNoReversal(t *testing.T) {
	_, fr := keptRun(t, "ledger-seed", "insert")
	for _, d := range fr.Verdict.Ordering.Discordant(fmtN) {
		if strings.Contains(d, "at 1e+05") {
			t.Errorf("a reversal at 1e5: %s", d)
		}
	}
	var seed []Point
	for _, r := range fr.Rows {
		seed = append(seed, Point{Engine: r.Figure.Engine, N: r.Figure.N, Value: r.Figure.Value, Precision: PrecisionOf(r.Figure.Value)})
	}
	v := Judge(Claim{Kind: ClaimOrdering, Engines: []string{"Aerospike", "LevelDB"}}, seed, fr.Ours)
	var at1e5 *Pair
	for _, sz := range v.Ordering.Sizes {
		for i, p := range sz.Pairs {
			if sz.SeedN == 1e5 {
				at1e5 = &sz.Pairs[i]
				if p.Seed != 0 || p.Ours == 0 {
					t.Errorf("at 1e5: %+v, want the seed tied and ours ordered", p)
				}
			}
		}
	}
	if at1e5 == nil || v.Outcome != Holds {
		t.Errorf("Aerospike against LevelDB: %s", v.Summary(fmtN))
	}
}

// Seed 000's memory finding is at 1e8 txns on four engines; the kept
// run's largest size is 1e5 on two of them: not comparable, saying
// how far apart the sizes are (it said "holds", comparing the seed at
// 1e8 with ours at 1e5).
func TestMemoryAcrossSizesIsNotComparable(t *testing.T) {
	for _, id := range []string{"ram_me", "ram_cache"} {
		_, fr := keptRun(t, "ledger-seed", id)
		if v := fr.Verdict; v.Outcome != NotComparable || !strings.Contains(v.Why, "1e+03× apart") {
			t.Errorf("%s: %s", id, v.Summary(fmtN))
		}
	}
}
