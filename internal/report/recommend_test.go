package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/study"
)

// target builds a measured target: insert seconds at 1e4, stress p99 and
// throughput, and its memory and disk.
func target(title string, insertSecs float64, p99ns int64, opsPerS float64, mem, disk int64) *results.Target {
	res := results.Resources{After: procstat.Snapshot{RSSBytes: mem}, DiskAllocated: disk}
	return &results.Target{Name: strings.ToLower(title), Title: title, Status: "ok",
		Settings: map[string]string{"durability": "fsync per write batch"},
		Steps: []*results.Step{
			{Workload: "ledger", Phase: "insert", N: 100, Seconds: insertSecs / 50, Ops: 1, Resources: res},
			{Workload: "ledger", Phase: "insert", N: 10000, Seconds: insertSecs, Ops: 100, Resources: res},
			{Workload: "ledger", Phase: "stress", N: 10000, Seconds: 10, Ops: int64(opsPerS * 10), Rate: 2000,
				Latency:  latency.Summary{Count: 10, P99: p99ns / 2},
				Intended: &latency.Summary{Count: 10, P99: p99ns}, Resources: res},
		}}
}

func run(c *study.Constraints, ts ...*results.Target) *results.Run {
	return &results.Run{Study: "ledger", Durability: "sync", Ladder: []int64{100, 10000}, Targets: ts, Constraints: c}
}

func TestRecommendRanksByHeadlineWithoutConstraints(t *testing.T) {
	r := Recommend(run(nil,
		target("Slow", 3, 1e6, 2000, 100<<20, 10<<20),
		target("Fast", 1, 1e6, 2000, 100<<20, 10<<20),
		target("Mid", 2, 1e6, 2000, 100<<20, 10<<20)))
	if len(r.Ranked) != 3 || r.Ranked[0].Target.Title != "Fast" || r.Ranked[2].Target.Title != "Slow" {
		t.Fatalf("ranking %+v", r.Ranked)
	}
	if !strings.Contains(r.Basis, "states no constraints") || !strings.Contains(r.Basis, "seconds to insert") || !strings.Contains(r.Basis, "at 1e4") {
		t.Fatalf("basis %q", r.Basis)
	}
}

func TestRecommendNamesFirstBrokenConstraint(t *testing.T) {
	c := &study.Constraints{RAM: 200 << 20, Disk: 1 << 30, Durability: "sync",
		P99:        []study.Bound{{Figure: "ledger.stress", Value: 2e6}},
		Throughput: []study.Bound{{Figure: "ledger.stress", Value: 1900}}}
	memcached := target("Memcached", 0.5, 1e5, 2000, 10<<20, 0)
	memcached.Settings["durability"] = "none: memory only"
	short := target("Short", 0.8, 1e6, 2000, 10<<20, 0)
	short.Steps = short.Steps[:1] // stopped before the largest size
	short.Status, short.Reason = "partial", "time limit"
	r := Recommend(run(c,
		target("Fat", 1, 1e6, 2000, 300<<20, 10<<20),
		target("Laggy", 2, 5e6, 2000, 100<<20, 10<<20),
		target("Slowpoke", 3, 1e6, 1500, 100<<20, 10<<20),
		target("Good", 4, 1e6, 1990, 100<<20, 10<<20),
		target("Better", 3.5, 1.5e6, 2000, 150<<20, 10<<20),
		memcached, short))
	var ranked []string
	for _, v := range r.Ranked {
		ranked = append(ranked, v.Target.Title)
	}
	if strings.Join(ranked, ",") != "Better,Good" {
		t.Fatalf("ranked %v", ranked)
	}
	want := map[string]string{
		"Fat":       "RAM: peak 300.0 MiB > 200.0 MiB",
		"Laggy":     "p99 of ledger.stress at 1e4: 5.00 ms (from intended start) > 2.00 ms",
		"Slowpoke":  "throughput of ledger.stress at 1e4: 1500 ops/s < 1900 ops/s",
		"Memcached": "durability: writes were none, sync is required",
		"Short":     "p99 of ledger.stress: not measured at 1e4 (partial: time limit)",
	}
	for _, v := range r.Rejected {
		if want[v.Target.Title] != v.Broken {
			t.Errorf("%s: broken %q, want %q", v.Target.Title, v.Broken, want[v.Target.Title])
		}
		delete(want, v.Target.Title)
	}
	if len(want) != 0 {
		t.Errorf("not rejected: %v", want)
	}
	md := Markdown(run(c, target("Good", 4, 1e6, 1990, 100<<20, 10<<20)))
	if !strings.Contains(md, "## Recommendation") || !strings.Contains(md, "**Recommended: Good**") {
		t.Fatalf("markdown lacks the recommendation:\n%s", md)
	}
}

// A sweep's steps are not the phase's figure: a constraint reads the
// phase's own step, or with a label selector the sweep's level it names.
func TestConstraintsReadStepsByLabels(t *testing.T) {
	swept := func(tr *results.Target, level string, p99ns int64) *results.Target {
		tr.Steps = append(tr.Steps, &results.Step{Workload: "ledger", Phase: "stress", N: 10000, Seconds: 10, Ops: 100,
			Labels:   results.StepLabels("ledger", "stress", 10000).With(results.LConcurrency, level),
			Latency:  latency.Summary{Count: 10, P99: p99ns},
			Intended: &latency.Summary{Count: 10, P99: p99ns}})
		return tr
	}
	own := &study.Constraints{P99: []study.Bound{{Figure: "ledger.stress", Value: 2e6}}}
	r := Recommend(run(own, swept(target("A", 1, 1e6, 2000, 1, 1), "64", 9e6)))
	if len(r.Ranked) != 1 {
		t.Fatalf("the level at concurrency 64 was read as the phase's figure: %+v", r.Rejected)
	}
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("p99:\n  ledger.stress[concurrency=64]: 2ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sel, err := study.LoadConstraints(file)
	if err != nil {
		t.Fatal(err)
	}
	r = Recommend(run(sel, swept(target("A", 1, 1e6, 2000, 1, 1), "64", 9e6)))
	if len(r.Rejected) != 1 || !strings.Contains(r.Rejected[0].Broken, "ledger.stress[concurrency=64] at 1e4: 9.00 ms") {
		t.Fatalf("the selector did not read the level: %+v %+v", r.Ranked, r.Rejected)
	}
}

// A server that cannot fsync per write (Aerospike Community Edition) runs
// a sync study with its best setting and says async: a sync constraint
// rejects it, and without constraints the recommendation says what its
// writes were instead.
func TestAsyncServerUnderSyncStudy(t *testing.T) {
	as := func() *results.Target {
		tr := target("Aerospike", 1, 1e6, 2000, 100<<20, 10<<20)
		tr.Server = &results.Server{Name: "aerospike", Managed: true, Settings: map[string]string{
			"durability":         "async (the study asked for sync: no fsync per write)",
			"durability_mapping": "sync asked, async given: flush-max-ms 1",
		}}
		return tr
	}
	r := Recommend(run(&study.Constraints{Durability: "sync"}, as(), target("Good", 2, 1e6, 2000, 100<<20, 10<<20)))
	if len(r.Rejected) != 1 || r.Rejected[0].Broken != "durability: writes were async, sync is required" {
		t.Fatalf("rejected %+v", r.Rejected)
	}
	md := Markdown(run(nil, as(), target("Good", 2, 1e6, 2000, 100<<20, 10<<20)))
	if !strings.Contains(md, "Durability: Aerospike's writes were async although the study asks for sync (sync asked, async given: flush-max-ms 1)") {
		t.Fatalf("markdown does not say Aerospike's writes were async:\n%s", md)
	}
	if strings.Contains(md, "Durability: Good") {
		t.Fatalf("a sync target is said to be async:\n%s", md)
	}
}

// The durability constraint is judged on what the crash trials verified,
// not on what the target declares: a target whose settings say sync but
// that lost acknowledged writes after a power failure is rejected, and
// one that lost none is ranked.
func TestRecommendUsesVerifiedDurability(t *testing.T) {
	crashed := func(title string, lost float64) *results.Target {
		tg := target(title, 1, 1e6, 2000, 100<<20, 10<<20)
		tg.Steps = append(tg.Steps, &results.Step{Workload: "durability", Phase: "power-loss", N: 1000, Seconds: 1, Ops: 1000,
			Facts:   map[string]string{"durability": "sync", "crash": "power-loss"},
			Metrics: map[string]float64{"trials": 5, "acked": 5000, "lost": lost, "lost_trials": min(lost, 5)}})
		return tg
	}
	liar, honest := crashed("Liar", 120), crashed("Honest", 0)
	if targetDurability(run(nil), liar) != "sync" {
		t.Fatalf("the liar's declared durability is %q: the test needs it to declare sync", targetDurability(run(nil), liar))
	}
	r := Recommend(run(&study.Constraints{Durability: "sync"}, liar, honest))
	if len(r.Ranked) != 1 || r.Ranked[0].Target.Title != "Honest" {
		t.Fatalf("ranked %+v: want Honest alone (Liar declared sync and lost acknowledged writes)", r.Ranked)
	}
	if len(r.Rejected) != 1 || !strings.Contains(r.Rejected[0].Broken, "120 acknowledged writes lost after power failure") ||
		!strings.Contains(r.Rejected[0].Broken, "declared sync") {
		t.Fatalf("rejected %+v: want Liar rejected for its verified loss", r.Rejected)
	}
}
