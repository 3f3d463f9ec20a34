package report

import (
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/study"
)

func ycsbTarget(name string, phases ...string) *results.Target {
	t := &results.Target{Name: name, Title: name, Status: "ok", Settings: map[string]string{"durability": "sync"}}
	for _, n := range []int64{100, 1000} {
		for _, ph := range phases {
			t.Steps = append(t.Steps, &results.Step{Workload: "ycsb", Phase: ph, N: n, Seconds: 1, Ops: n, Unit: "operation",
				Latency: latency.Summary{Count: n, P50: 1000, P99: 5000}, ByOp: map[string]latency.Summary{"READ": {Count: n, P99: 5000}}})
		}
	}
	return t
}

// A step a target cannot run is "n/a" with its reason in every table that
// has its cell: the workload's own table, the targets table, the
// bottlenecks, the recommendation (when a constraint needs the figure)
// and the charts' legends.
func TestNAIsShownWithItsReasonEverywhere(t *testing.T) {
	redis := ycsbTarget("Redis", "load", "a")
	for _, n := range []int64{100, 1000} {
		redis.NA = append(redis.NA, results.NA{Workload: "ycsb", Phase: "e", N: n, Status: "n/a", Reason: "no ordered scans"})
	}
	pebble := ycsbTarget("Pebble", "load", "a", "e")
	r := &results.Run{Study: "ycsb", Durability: "sync", Ladder: []int64{100, 1000}, Targets: []*results.Target{redis, pebble},
		Constraints: &study.Constraints{Throughput: []study.Bound{{Figure: "ycsb.e", Value: 10}}}}
	md := Markdown(r)
	rows := map[string]string{}
	for _, l := range strings.Split(md, "\n") {
		for _, k := range []string{"| E: ", "| ycsb e at ", "| Redis | ", "| Redis |"} {
			if strings.HasPrefix(l, k) {
				rows[k] = l
			}
		}
	}
	if !strings.Contains(rows["| E: "], "n/a: no ordered scans") {
		t.Errorf("YCSB table, row E: %q", rows["| E: "])
	}
	if !strings.Contains(rows["| ycsb e at "], "n/a: no ordered scans") {
		t.Errorf("bottlenecks, row ycsb e: %q", rows["| ycsb e at "])
	}
	if !strings.Contains(md, "n/a: ycsb e (no ordered scans)") {
		t.Errorf("targets table lacks the n/a summary")
	}
	if !strings.Contains(md, "throughput of ycsb.e: n/a (no ordered scans)") {
		t.Errorf("recommendation does not say why Redis has no figure:\n%s", md)
	}
	legend := false
	for _, c := range Charts(r) {
		for _, p := range c.Panels {
			for _, s := range p.Series {
				legend = legend || strings.Contains(s.Legend, "Redis: n/a (no ordered scans)") && strings.Contains(c.Title, " e")
			}
		}
	}
	if !legend {
		t.Errorf("no chart of phase e has Redis as n/a in its legend")
	}
}
