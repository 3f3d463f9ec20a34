package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/seedcmp"
)

// The built-in ledger study names seed 000: a real run of it on two
// embedded engines with a tiny ladder gets "Against the seed" in
// report.md and report.html, each finding's verdict as seedcmp computes
// it from results.json, and the insert's verdict as recomputed here from
// the steps' own seconds and the seed's own figures.
func TestReportSetsTheSeedBesideOurRun(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", "ledger", "--targets", "leveldb,goleveldb", "--ladder", "10,100,1000",
		"--set", "ledger.selects=50", "--set", "ledger.chains.lengths=[10,100]", "--set", "ledger.chains.samples=1",
		"--set", "ledger.stress.duration=1s", "--set", "ledger.stress.rate=200",
		"--set", "ledger.balance.addresses=2000", "--set", "ledger.balance.reads=100", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	report := string(md)
	if !strings.Contains(report, "## Against the seed") || !strings.Contains(string(html), "Against the seed") {
		t.Fatalf("no \"Against the seed\" section:\n%s", report)
	}
	if seedcmp.SeedOf(run) != "000" {
		t.Fatalf("the run's study names seed %q", seedcmp.SeedOf(run))
	}
	seed, err := seedcmp.Load("000")
	if err != nil {
		t.Fatal(err)
	}
	res := seedcmp.Against(seed, run)
	if len(res.Findings) != len(seed.Findings) {
		t.Fatalf("%d of the seed's %d findings set beside the run", len(res.Findings), len(seed.Findings))
	}
	count := func(n float64) string { return section.Count(int64(n)) }
	for _, fr := range res.Findings {
		want := "**Verdict: " + section.Cell(fr.Verdict.Summary(count)) + "**"
		if !strings.Contains(report, "### "+fr.Finding.Title+"\n") || !strings.Contains(report, want) {
			t.Errorf("finding %s: the report lacks %q", fr.Finding.ID, want)
		}
	}

	// The insert's verdict recomputed from the steps themselves: LevelDB
	// is the only seed engine that ran (leveldb stands for it), at the
	// ladder's sizes, in seconds.
	var seedPts, ours []seedcmp.Point
	for _, g := range seed.Findings[0].Figures {
		if g.Engine == "LevelDB" {
			seedPts = append(seedPts, seedcmp.Point{Engine: "LevelDB", N: g.N, Value: g.Value})
		}
	}
	for _, tr := range run.Targets {
		if tr.Name != "leveldb" {
			continue
		}
		for _, n := range []int64{10, 100, 1000} {
			st := tr.Find("ledger", "insert", n)
			if st == nil || st.Seconds <= 0 {
				t.Fatalf("leveldb: no insert at %d", n)
			}
			ours = append(ours, seedcmp.Point{Engine: "LevelDB", N: float64(n), Value: st.Seconds})
		}
	}
	v := seedcmp.Compare(seedPts, ours)
	got := res.Findings[0].Verdict
	if res.Findings[0].Finding.ID != "insert" || v.Outcome != got.Outcome || len(v.Growth) != 1 || len(got.Growth) != 1 || math.Abs(v.Growth[0].Ours-got.Growth[0].Ours) > 1e-12 || v.Ordering != nil {
		t.Fatalf("insert verdict: recomputed %+v, reported %+v", v, got)
	}
	// The exponent itself, from the three points by hand.
	var sx, sy, sxx, sxy float64
	for _, p := range ours {
		x, y := math.Log10(p.N), math.Log10(p.Value)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	slope := (3*sxy - sx*sy) / (3*sxx - sx*sx)
	if math.Abs(slope-got.Growth[0].Ours) > 1e-9 {
		t.Fatalf("exponent %v reported, %v by hand", got.Growth[0].Ours, slope)
	}
	// The cells: the seed's LevelDB figure at 1e3 (line 35) beside ours,
	// an engine that did not run, a size not run.
	for _, want := range []string{"seed 0.468 s (l. 35)<br>ours ", "engine not run", "not run at this size", "LevelDB (ours: leveldb)"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if got.Outcome == seedcmp.Differs && !strings.Contains(report, "durability class: the seed's engines async") {
		t.Errorf("a differing verdict without the measured durability class")
	}
}

// `run ledger --scale seed` is seed 000's method: its ladder to 1e8 is
// refused with the estimate and the flag that accepts it; cut with
// --ladder (and accepted with --accept-estimate), it runs the seed's engines each as it ships (here LevelDB and
// FerretDB, small), one txn per write by address only (no chain index),
// chains walked prev to prev, and the
// report says each engine's default and why FerretDB's reads are slow:
// its own explain of the point lookup, a collection scan.
func TestLedgerSeedScale(t *testing.T) {
	out := t.TempDir()
	_, stderr, code := runCLI(t, "run", "ledger", "--scale", "seed", "--out", out)
	if code != 2 || !strings.Contains(stderr, "estimate for ledger --scale seed: about") || !strings.Contains(stderr, "does not fit this machine") ||
		!strings.Contains(stderr, "--accept-estimate") || !strings.Contains(stderr, "--ladder") {
		t.Fatalf("the seed's ladder: exit %d, %s", code, stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("a refused run left %v", ents)
	}
	// Cut, at an hour a transaction it would still not fit (310 txns on
	// 2 targets: 620 h); --accept-estimate runs it.
	stdout, stderr, code := runCLI(t, "run", "ledger", "--scale", "seed", "--ladder", "10,300", "--targets", "leveldb,ferretdb",
		"--set", "ledger.chains.lengths=[10,100]", "--set", "ledger.stress.duration=1s", "--set", "ledger.balance.reads=50",
		"--set", "ledger.budget=20s", "--set", "ledger.estimate.txn_time=1h", "--accept-estimate", "--out", out)
	if code != 0 || !strings.Contains(stderr, "estimate accepted (--accept-estimate)") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Durability != "default" {
		t.Fatalf("durability %q", run.Durability)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	report := string(md)
	for _, tr := range run.Targets {
		if tr.Settings["durability_default"] == "" || !strings.Contains(report, "engine default: "+tr.Settings["durability_default"]) {
			t.Errorf("%s: its engine's default is not in the report (%q)", tr.Name, tr.Settings["durability_default"])
		}
		if st := tr.Find("ledger", "insert", 300); st == nil || st.Ops != 300 {
			t.Errorf("%s: the insert of 300 was not one write per txn: %+v", tr.Name, st)
		} else if !strings.HasSuffix(st.Unit, "by address only (no chain index)") {
			t.Errorf("%s: the insert wrote the chain index the seed did not (unit %q)", tr.Name, st.Unit)
		}
		for _, st := range tr.Steps {
			if st.Phase == "chain" && (!strings.HasPrefix(st.Unit, "walk") || st.Verify.Checked == 0) {
				t.Errorf("%s: chain step %q, checked %d", tr.Name, st.Unit, st.Verify.Checked)
			}
		}
		if tr.Machine != "name=nuc-scaled,cache=1MiB" {
			t.Errorf("%s: machine %q, want the seed's node scaled to 300 txns (8 GB × 300 / 1e8, at least 1 MiB)", tr.Name, tr.Machine)
		}
		switch base, _, _ := strings.Cut(tr.Name, "@"); base {
		case "leveldb":
			if tr.Settings["durability_class"] != "async" {
				t.Errorf("leveldb's default ran as %q", tr.Settings["durability_class"])
			}
		case "ferretdb":
			lookup := tr.Settings["point_lookup"]
			if !strings.Contains(lookup, "scans the collection per _id lookup") || !strings.Contains(lookup, `SQLite plan "SCAN `) ||
				!strings.Contains(report, "point_lookup: "+strings.ReplaceAll(lookup, "<string>", "&lt;string>")) {
				// (report.md writes a "<" that would open a tag as an
				// entity: the run's strings stay text.)
				t.Errorf("ferretdb: the scan is not said with its plan: %q", lookup)
			}
		}
	}
	if !strings.Contains(report, "no chain index (`ledger.chains.index: false`)") {
		t.Error("the report does not say the inserts wrote no chain index")
	}
	if !strings.Contains(report, "## Against the seed") {
		t.Fatal("no \"Against the seed\" section")
	}
}
