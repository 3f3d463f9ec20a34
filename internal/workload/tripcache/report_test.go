package tripcache

import (
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/report"
	"storebench/internal/results"
)

func trialStep(phase string, rate float64, trial string, ops int64, p99 int64, queue []int64, genCPU float64) *results.Step {
	s := &results.Step{Workload: "tripcache", Phase: phase, N: 1000, Seconds: 6, Ops: ops, Rate: rate,
		Intended: &latency.Summary{P50: 1e6, P99: p99},
		Metrics:  map[string]float64{"cache_ops_per_s": 1.8 * float64(ops) / 6, "generator_cpu_s": genCPU, "queue_max": 5, "queue_capacity": 10000, "trips_verified": 100},
		Facts:    map[string]string{"transport": phase + " transport as run"}}
	s.Labels = results.StepLabels("tripcache", phase, 1000)
	if trial != "" {
		s.Labels = s.Labels.With(results.LRate, strings.TrimSuffix(strings.TrimSuffix(trial, "/1"), "/2")).With(results.LTrial, trial[len(trial)-1:])
	}
	for _, q := range queue {
		s.Series = append(s.Series, results.Tick{Counts: map[string]int64{"queue": q, "backlog": q + 1}})
	}
	s.Resources.CPUPercent = 60
	return s
}

// The trip-builder tables: the sustainable rate per target and
// transport with the cache ops at it and what limited it above, the
// seed's figure beside RocksDB's, the queue over time of the held and the
// failed trial.
func TestTripcacheReport(t *testing.T) {
	own := trialStep("socket", 2000, "", 12000, 2e6, []int64{0, 1, 0}, 1)
	held := trialStep("socket", 8000, "8000/1", 48000, 20e6, []int64{3, 4, 2}, 3)
	failed := trialStep("socket", 16000, "16000/2", 60000, 900e6, []int64{800, 4000, 9000}, 5.4)
	failed.Resources.CPUPercent = 120 // with the generator's 90%: the machine's 2 cores
	rs := results.RateSearch{Workload: "tripcache", Phase: "socket", N: 1000, Sustainable: 8000, FailedAbove: 16000, Converged: true, Done: true,
		Trials: []results.RateTrial{
			{Step: held.Name(), Offered: 8000, Achieved: 8000, Sustained: true},
			{Step: failed.Name(), Offered: 16000, Achieved: 10000, Why: "achieved 10000/s < 99% of 16000/s"},
		}}
	run := &results.Run{Study: "tripcache", Ladder: []int64{1}, Targets: []*results.Target{{Name: "rocksdb", Title: "RocksDB",
		Steps: []*results.Step{own, held, failed}, Searches: []results.RateSearch{rs}}}}
	// Pebble failed with its own processes far from the cores' limit
	// while the machine was busy: the neighbours' load is named.
	pheld := trialStep("socket", 8000, "8000/1", 48000, 20e6, []int64{3}, 3)
	pfailed := trialStep("socket", 16000, "16000/2", 60000, 900e6, []int64{9000}, 0.6)
	pfailed.Resources.CPUPercent = 40
	pfailed.Metrics["machine_cpu_percent"] = 190
	prs := rs
	prs.Trials = []results.RateTrial{{Step: pheld.Name(), Offered: 8000, Sustained: true}, {Step: pfailed.Name(), Offered: 16000, Why: "p99 from intended start 900ms > 100ms"}}
	run.Targets = append(run.Targets, &results.Target{Name: "pebble", Title: "Pebble", Steps: []*results.Step{own, pheld, pfailed}, Searches: []results.RateSearch{prs}})
	// Redis: 4 goroutines at 2 ms a tick cannot do more than 2000/s.
	rheld := trialStep("socket", 1000, "1000/1", 6000, 20e6, []int64{3}, 1)
	rfailed := trialStep("socket", 2000, "2000/2", 9000, 900e6, []int64{9000}, 1)
	rfailed.Resources.CPUPercent = 30
	rfailed.Metrics["goroutines"] = 4
	rfailed.Latency.Mean = 2e6
	rrs := rs
	rrs.Sustainable, rrs.FailedAbove = 1000, 2000
	rrs.Trials = []results.RateTrial{{Step: rheld.Name(), Offered: 1000, Sustained: true}, {Step: rfailed.Name(), Offered: 2000, Why: "achieved 1500/s < 99% of 2000/s"}}
	run.Targets = append(run.Targets, &results.Target{Name: "redis", Title: "Redis", Server: &results.Server{Name: "redis"}, Steps: []*results.Step{own, rheld, rfailed}, Searches: []results.RateSearch{rrs}})
	run.Host.LogicalCPUs = 2
	md := report.Markdown(run)
	for _, want := range []string{
		"| RocksDB | socket | **8.0K** | 14K | 20.00 ms | 16K: achieved 10000/s < 99% of 16000/s | CPU: the machine's 2 cores are used up (consumer+cache 120%, generator 90%) | 70K tps |",
		"- RocksDB: 8.0K tps (socket) — seed: 70K tps",
		"| RocksDB | socket | held at 8.0K/s | 3 4 2 | 4 5 3 |",
		"| RocksDB | socket | failed at 16K/s | 800 4000 9000 | 801 4001 9001 |",
		"| RocksDB | socket | 2.0K / 2.0K | 1.00 ms / 2.00 ms |",
		"- socket: socket transport as run",
		"the consumer's 4 processing goroutines: a tick takes 2.00 ms on average (get and put one after the other), so at most ~2.0K ticks/s (consumer 30%, cache server 0%, generator 17%)",
		"CPU: the machine's 2 cores are busy (190%), 140% of it other processes' (consumer+cache 40%, generator 10%)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// A search stopped before it ended (interrupted, killed, a limit) is
// "cut short", never "trials ran out": its rate is the best found so far,
// not the search's answer.
func TestTripcacheReportSaysASearchWasCutShort(t *testing.T) {
	held := trialStep("socket", 2000, "2000/1", 12000, 2e6, []int64{0}, 1)
	rs := results.RateSearch{Workload: "tripcache", Phase: "socket", N: 1000, Sustainable: 2000, Converged: false, Done: false,
		Trials: []results.RateTrial{{Step: held.Name(), Offered: 2000, Achieved: 2000, Sustained: true}}}
	run := &results.Run{Study: "tripcache", Ladder: []int64{1}, Status: "interrupted", Targets: []*results.Target{{Name: "rocksdb", Title: "RocksDB",
		Status: "interrupted", Steps: []*results.Step{held}, Searches: []results.RateSearch{rs}}}}
	md := report.Markdown(run)
	if !strings.Contains(md, "| RocksDB | socket | **2.0K** (search cut short) |") || strings.Contains(md, "trials ran out") {
		t.Errorf("a search cut short:\n%s", md)
	}
	// One that spent its trials says so.
	rs.Done = true
	run.Targets[0].Searches = []results.RateSearch{rs}
	if md := report.Markdown(run); !strings.Contains(md, "**2.0K** (trials ran out)") {
		t.Errorf("a search that spent its trials:\n%s", md)
	}
}
