package seedcmp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/measure/latency"
	"storebench/internal/results"
	"storebench/internal/sysinfo"
)

// mirror builds a run whose figures are the seed's own: for every
// figure of every finding with a figure of ours, a step (or rate search)
// of the first target standing for its engine, where ours is read,
// holding the seed's value in our unit. Figures it cannot place (two at
// one size and engine, two findings' figures read from the same value of
// the same step with different figures (the seed's machines differ: one
// run holds one of them),
// a size of CPUs but the run's, a percentile only a histogram holds, a
// finding ours is no one number of) are left out and returned.
func mirror(t *testing.T, s *Seed, cpus int) (*results.Run, map[string]bool) {
	run := &results.Run{Durability: s.Durability, Host: sysinfo.Host{LogicalCPUs: cpus}}
	targets := map[string]*results.Target{}
	steps := map[string]*results.Step{}
	skipped := map[string]bool{}
	// fieldKey is where a figure goes in the run: a target's step and
	// the value read from it.
	fieldKey := func(o *Ours, e Engine, n float64) string {
		if len(e.Targets) == 0 {
			return ""
		}
		return fmt.Sprint(e.Targets[0], o.Workload, o.Phase, o.Size, whereText(o.Where), n, "|", o.Value)
	}
	shared := map[string]map[string]bool{} // field → the figures it would hold
	for _, f := range s.Findings {
		// A conclusion reads the figures of the finding it names (Of):
		// that finding places them.
		if f.Ours == nil || f.Of != "" {
			continue
		}
		for _, g := range f.Figures {
			k := fieldKey(f.Ours, s.Engine(g.Engine), g.N)
			if shared[k] == nil {
				shared[k] = map[string]bool{}
			}
			shared[k][fmt.Sprint(g.Value, g.Unit, g.Hardware)] = true
		}
	}
	for fi := range s.Findings {
		f := &s.Findings[fi]
		o := f.Ours
		if o == nil || f.Of != "" {
			continue
		}
		seen := map[string]int{}
		for _, g := range f.Figures {
			seen[fmt.Sprint(g.Engine, g.N)]++
		}
		for _, g := range f.Figures {
			key := fmt.Sprint(f.ID, g.Engine, g.N)
			e := s.Engine(g.Engine)
			if len(e.Targets) == 0 || seen[fmt.Sprint(g.Engine, g.N)] > 1 || (o.Size == "cpus" && g.N != float64(cpus)) ||
				(strings.HasPrefix(o.Value, "latency.p") && !strings.Contains("latency.p50 latency.p90 latency.p99 latency.p999", o.Value)) ||
				len(shared[fieldKey(o, e, g.N)]) > 1 || o.Value == "gc_passes" {
				skipped[key] = true
				continue
			}
			name := e.Targets[0]
			tg := targets[name]
			if tg == nil {
				tg = &results.Target{Name: name, Title: name, Status: "ok"}
				targets[name] = tg
				run.Targets = append(run.Targets, tg)
			}
			v, err := convert(g.Value, g.Unit, o.unit())
			if err != nil {
				t.Fatal(err)
			}
			if o.Value == "sustainable" {
				tg.Searches = append(tg.Searches, results.RateSearch{Workload: o.Workload, Phase: o.Phase, N: int64(g.N), Sustainable: v})
				continue
			}
			skey := fmt.Sprint(name, o.Workload, o.Phase, o.Size, whereText(o.Where), g.N)
			st := steps[skey]
			if st == nil {
				st = &results.Step{Workload: o.Workload, Phase: o.Phase, Metrics: map[string]float64{}, Labels: results.Labels{}}
				for k, v := range o.Where {
					st.Labels[k] = v
				}
				switch {
				case o.Size == "n" || o.Size == "":
					st.N = int64(g.N)
				case strings.HasPrefix(o.Size, "metric:"):
					st.Metrics[strings.TrimPrefix(o.Size, "metric:")] = g.N
				case strings.HasPrefix(o.Size, "label:"):
					st.Labels[strings.TrimPrefix(o.Size, "label:")] = strconv.FormatFloat(g.N, 'f', -1, 64)
				}
				steps[skey] = st
				tg.Steps = append(tg.Steps, st)
			}
			switch o.Value {
			case "seconds":
				st.Seconds = v
			case "disk":
				st.Resources.DiskAllocated = int64(math.Round(v))
			case "mem":
				st.Resources.After.RSSBytes = int64(math.Round(v))
			case "cache":
				st.Resources.CacheResident, st.Resources.CacheTotal = int64(math.Round(v)), int64(math.Round(v))+1
			case "latency.mean":
				st.Latency.Mean, st.Latency.Count = v, 1
			case "latency.max":
				st.Latency.Max, st.Latency.Count = int64(math.Round(v)), 1
			case "latency.p50":
				st.Latency.P50, st.Latency.Count = int64(math.Round(v)), 1
			case "per_request_time":
				// ab's concurrency × time / requests: 500 requests at
				// the step's concurrency (its size, or 1).
				c := st.Metrics["concurrency"]
				if c == 0 {
					c = 1
					st.Metrics["concurrency"] = c
				}
				st.Metrics["requests"] = 500
				st.Seconds = v * 500 / c
			case "mem_growth":
				st.Resources.Before.RSSBytes = 1 << 30
				st.Resources.After.RSSBytes = 1<<30 + int64(math.Round(v))
			case "cpu":
				st.Resources.CPUPercent, st.Resources.Seconds = v, 1
			default:
				if op, ok := strings.CutPrefix(o.Value, "by_op."); ok && strings.HasSuffix(op, ".mean") {
					if st.ByOp == nil {
						st.ByOp = map[string]latency.Summary{}
					}
					st.ByOp[strings.TrimSuffix(op, ".mean")] = latency.Summary{Mean: v, Count: 1}
					break
				}
				name, ok := strings.CutPrefix(o.Value, "metric:")
				if !ok {
					t.Fatalf("%s: value %s not mirrored", f.ID, o.Value)
				}
				st.Metrics[name] = v
			}
		}
	}
	return run, skipped
}

// A run whose figures are the seed's own reads back, through each
// finding's mapping to results.json, as the seed's figures at the seed's
// sizes, and every verdict computed on them holds: the mapping of all
// five seeds to our workloads, phases, sizes and units is checked here,
// not only on the studies a test runs for real.
func TestTheSeedsOwnFiguresHoldAgainstThemselves(t *testing.T) {
	for _, id := range IDs() {
		s, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		run, skipped := mirror(t, s, 2)
		res := Against(s, run)
		placed, holds := 0, 0
		for _, fr := range res.Findings {
			for _, r := range fr.Rows {
				key := fmt.Sprint(fr.Finding.ID, r.Figure.Engine, r.Figure.N)
				if fr.Finding.Ours == nil || fr.Finding.Of != "" || skipped[key] || len(s.Engine(r.Figure.Engine).Targets) == 0 {
					continue
				}
				placed++
				// Bytes are whole: a figure in MB or GiB comes back within a byte.
				if !r.Have || math.Abs(r.Ours-r.Figure.Value) > 1e-9*math.Abs(r.Figure.Value)+2e-6 {
					t.Errorf("seed %s, %s, %s at %v: ours %v (have %v, %s), seed %v", id, fr.Finding.ID, r.Figure.Engine, r.Figure.N, r.Ours, r.Have, r.Missing, r.Figure.Value)
				}
			}
			switch fr.Verdict.Outcome {
			case Holds:
				holds++
			case Differs:
				// Only a conclusion whose words state a direction its
				// own figures do not show ("MySQL improves" over +0.5%)
				// may differ from the seed's figures.
				if fr.Finding.Claim.Expect == "" {
					t.Errorf("seed %s, %s: the seed against itself: %s", id, fr.Finding.ID, fr.Verdict.Summary(func(n float64) string { return fmt.Sprint(n) }))
				} else {
					t.Logf("seed %s, %s: the seed's words against its own figures: %s", id, fr.Finding.ID, fr.Verdict.Summary(func(n float64) string { return fmt.Sprint(n) }))
				}
			}
		}
		if len(res.Elsewhere) != 0 {
			t.Errorf("seed %s: findings not placed: %d", id, len(res.Elsewhere))
		}
		t.Logf("seed %s: %d figures read back through their mapping, %d verdicts hold", id, placed, holds)
	}
}
