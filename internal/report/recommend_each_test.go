package report

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// A study of web servers and databases ranks each workload on its own
// headline among the targets that can run it: the web servers are not
// "not ranked" for lack of SQL, and the databases not for lack of HTTP.
func TestRecommendEachRanksEveryWorkloadOnItsOwnHeadline(t *testing.T) {
	web := func(title string, rps float64) *results.Target {
		return &results.Target{Name: strings.ToLower(title), Title: title, Status: "ok",
			Steps: []*results.Step{{Workload: "http", Phase: "close", N: 1, Seconds: 1, Ops: int64(rps)}},
			NA:    []results.NA{{Workload: "oltp", Phase: "read_only", N: 1, Status: "n/a", Reason: "no SQL"}}}
	}
	db := func(title string, tps float64) *results.Target {
		return &results.Target{Name: strings.ToLower(title), Title: title, Status: "ok",
			Steps: []*results.Step{{Workload: "oltp", Phase: "read_only", N: 1, Seconds: 2, Ops: int64(2 * tps)}},
			NA:    []results.NA{{Workload: "http", Phase: "close", N: 1, Status: "n/a", Reason: "no HTTP"}}}
	}
	r := &results.Run{Study: "web-oltp", Ladder: []int64{1}, Targets: []*results.Target{
		web("Apache", 900), web("nginx", 1200), db("MariaDB", 300), db("PostgreSQL", 500)}}
	recs := RecommendEach(r)
	if len(recs) != 2 {
		t.Fatalf("%d rankings, want one per workload", len(recs))
	}
	for i, want := range []struct {
		workload, best, second, na string
	}{{"http", "nginx", "Apache", "MariaDB"}, {"oltp", "PostgreSQL", "MariaDB", "Apache"}} {
		rec := recs[i]
		if rec.Workload != want.workload || len(rec.Ranked) != 2 || rec.Ranked[0].Target.Title != want.best || rec.Ranked[1].Target.Title != want.second {
			t.Fatalf("ranking %d: workload %q, ranked %+v", i, rec.Workload, rec.Ranked)
		}
		if len(rec.Rejected) != 0 || len(rec.NA) != 2 || rec.NA[0].Target.Title != want.na {
			t.Fatalf("ranking %s: rejected %+v, n/a %+v", rec.Workload, rec.Rejected, rec.NA)
		}
	}
	var b strings.Builder
	recommendation(&b, r)
	md := b.String()
	for _, want := range []string{"### http", "### oltp", "**Best on this figure: nginx** (1200 ops/s)", "**Best on this figure: PostgreSQL** (500 ops/s)", "Not applicable: MariaDB (no HTTP), PostgreSQL (no HTTP)."} {
		if !strings.Contains(md, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Not ranked") {
		t.Errorf("a target that cannot run a workload is listed as not ranked:\n%s", md)
	}
	// With one workload, the single ranking of before.
	r.Targets = r.Targets[:2]
	if recs := RecommendEach(r); len(recs) != 1 || recs[0].Workload != "" {
		t.Fatalf("one workload: %d rankings", len(recs))
	}
}
