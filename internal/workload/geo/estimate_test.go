package geo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// The estimate, figure by figure from the params: the seed scale's
// settings (10,000 users, 3 h, a GC pass an hour of simulated time, 120
// correlations under both rules) and a small run ended by
// ingest.points with a wall-clock GC.
func TestEstimateFromParams(t *testing.T) {
	p := defaults()
	p.Ingest.Duration = study.Duration(3 * time.Hour)
	p.GC.EverySimulated = study.Duration(time.Hour)
	p.Correlate.Users = 120
	p.Correlate.Rule = RuleBoth
	e, how := p.estimate(10000, 4)
	// Held after the final pass: 24 h and a 1000 s block, 1457 minutes;
	// during the ingest an hour more between passes.
	track := 1457.0
	ref := 120 * 10000 * track // evaluations of each rule's reference
	want := 3*time.Hour +
		time.Duration(400*1.756e9/4) + // timelines
		2*time.Duration(120*track*1.92e6/4) + // both correlate steps, 4 goroutines
		time.Duration(ref*15) + time.Duration(ref*20) // references: 15 ns, 20 ns (all users at once)
	if e.Time != want {
		t.Errorf("time %s, want %s (%s)", e.Time, want, how)
	}
	if want := 10000 * (1457.0 + 60) * 172; e.DiskBytes != want {
		t.Errorf("disk %g, want %g (%s)", e.DiskBytes, want, how)
	}
	// The point-by-point GC adds its final pass: every point the
	// retention does not keep, at the slowest kept pace.
	p.GC.Delete = GCPoint
	e2, how2 := p.estimate(10000, 4)
	gone := 3*3600*146202.0 - 10000*track
	if got, want := e2.Time-e.Time, time.Duration(gone/26000*1e9); got != want || !strings.Contains(how2, "the point-by-point GC's final pass") {
		t.Errorf("point GC adds %s, want %s (%s)", got, want, how2)
	}
	// Written point by point, the ingest's fastest kept rate is that of
	// single Puts: fewer points ingested, fewer for the final pass.
	p.Ingest.Write = WritePoint
	e3, how3 := p.estimate(10000, 4)
	gone3 := 3*3600*69421.0 - 10000*track
	if got, want := e3.Time-e.Time, time.Duration(gone3/26000*1e9); got != want || !strings.Contains(how3, "docs/runs/geo-seed-point-writes-3m") {
		t.Errorf("point writes and GC add %s, want %s (%s)", got, want, how3)
	}
	// Its disk: every point ingested held, at the fresh disk per point,
	// when that is more than the retention's points at the most per
	// point held.
	if want := 3 * 3600 * 69421.0 * 31; e3.DiskBytes != want || !strings.Contains(how3, "falling behind") {
		t.Errorf("point GC disk %g, want %g (%s)", e3.DiskBytes, want, how3)
	}
	p.Ingest.Write = WriteBatch
	for _, s := range []string{"ingest 3h0m0s", "172 B", "docs/runs/geo-seed-storebench-layout", "BenchmarkReferenceAll", "2 correlate step(s)", "1.75e+09 evaluations"} {
		if !strings.Contains(how, s) {
			t.Errorf("how lacks %q: %s", s, how)
		}
	}

	// ingest.points ends the ingest at the slowest kept rate; the points
	// held are at most those ingested; the track at most the window.
	p = defaults()
	p.Ingest.Duration = study.Duration(75 * time.Second)
	p.Ingest.Points = 1e6
	p.Timeline.Queries = 10
	p.Correlate.Window = study.Duration(2 * time.Hour)
	e, how = p.estimate(200, 2)
	pts := 1e6
	want = time.Duration(pts/29803*1e9) +
		time.Duration(10*1.756e9/2) +
		time.Duration(20*120*1.92e6/2) +
		time.Duration(20*200*120*15)
	if e.Time != want {
		t.Errorf("points: time %s, want %s (%s)", e.Time, want, how)
	}
	if e.DiskBytes != 1e6*172 {
		t.Errorf("points: disk %g (%s)", e.DiskBytes, how)
	}
	if !strings.Contains(how, "1e6 points at 29803 points/s") {
		t.Errorf("points: %s", how)
	}
	// A wall-clock GC every 5 s lets the fastest kept rate ingest
	// ceil(5 × 146202 / 200) = 3656 simulated minutes between passes.
	p.Ingest.Points = 0
	if e, how = p.estimate(200, 2); e.DiskBytes != 200*(1457+3656)*172 {
		t.Errorf("wall GC: disk %g (%s)", e.DiskBytes, how)
	}
	// No GC pass during the ingest: every point ingested is held.
	p.GC.Every = 0
	if e, how = p.estimate(200, 2); e.DiskBytes != 75*146202*172 || !strings.Contains(how, "no GC pass") {
		t.Errorf("no GC: disk %g (%s)", e.DiskBytes, how)
	}

	// A ladder: its steps' times add up, the largest disk counts.
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.estimate(200, 3)
	b, _ := p.estimate(400, 3)
	got, err := Workload{}.Estimate(workload.Planning{Ladder: []int64{200, 400}, Concurrency: 3}, study.Entry{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Time != a.Time+b.Time || got.DiskBytes != max(a.DiskBytes, b.DiskBytes) || !strings.Contains(got.How, " | 400 users") {
		t.Errorf("ladder: %+v", got)
	}
}

// BenchmarkReference measures the brute-force reference the correlate
// step computes before its timed part, per other user per track minute
// (ns/eval): the figures refEval and refEvalBT are from it.
func BenchmarkReference(b *testing.B) {
	s := Sim{Seed: 1, Users: 2000, GroupSize: 4}
	h := Held{Points: 2000 * 1500, Cutoff: TS(40)}
	from, to := h.Cutoff, TS(1500)
	evals := float64(s.Users * int64(len(s.Timeline(h, 0, from, to))))
	b.Run("storebench", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.Correlations(h, int64(i)%s.Users, from, to, Rule{Meters: 100, MinMinutes: 15})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/evals, "ns/eval")
	})
	b.Run("backtracer", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.BTCorrelations(h, int64(i)%s.Users, from, to, SeedBTRule())
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/evals, "ns/eval")
	})
}
