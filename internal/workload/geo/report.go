package geo

import (
	"fmt"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
)

func init() {
	in := func(ph ...string) []string { return ph }
	ing := in(PhaseIngest)
	section.Register(Name, section.Def{
		Render:   render,
		Headline: &section.Headline{Figure: Name + "." + PhaseIngest, Metric: "throughput", What: "batches of GPS points inserted per second, with the GC beside"},
		Metrics: []section.Metric{
			{Name: "users", Agg: section.Max, What: "simulated users (the ladder)"},
			{Name: "batch", Phases: ing, Agg: section.Max, What: "points per insert request"},
			{Name: "points", Phases: ing, Agg: section.Sum, What: "points ingested"},
			{Name: "points_held", Phases: ing, Agg: section.Sum, What: "points held after the final GC pass"},
			{Name: "simulated_days", Phases: ing, Unit: "days", Agg: section.Max, What: "simulated time ingested"},
			{Name: "retention_hours", Phases: ing, Unit: "h", Agg: section.Max, What: "GC retention, simulated"},
			{Name: "final_gc_seconds", Phases: ing, Unit: "s", Agg: section.Max, Better: section.Lower, What: "the final GC pass after the ingest"},
			{Name: "raw_bytes_per_point", Phases: ing, Unit: "B", Agg: section.Max, What: "a point's raw bytes (user, time, lat, lon)"},
			{Name: "qps", Phases: ing, Unit: "points/s", Agg: section.Rate, Better: section.Higher, What: "points inserted per second, whole ingest"},
			{Name: "qps_last", Phases: ing, Unit: "points/s", Agg: section.Rate, Better: section.Higher, What: "points inserted per second over the last part of the ingest"},
			{Name: "moving_users", Phases: ing, Agg: section.Rate, Better: section.Higher, What: "users at one point a minute the last part's rate serves (QPS × 60)"},
			{Name: "gc_passes", Phases: ing, Agg: section.Sum, What: "GC passes during the ingest"},
			{Name: "gc_passes_cut", Phases: ing, Agg: section.Sum, What: "GC passes the end of the ingest cut short (the final pass finishes their work)"},
			{Name: "gc_pass_mean_s", Phases: ing, Unit: "s", Agg: section.Mean, Better: section.Lower, What: "mean duration of a GC pass"},
			{Name: "gc_pass_max_s", Phases: ing, Unit: "s", Agg: section.Max, Better: section.Lower, What: "longest GC pass"},
			{Name: "gc_deleted", Phases: ing, Agg: section.Sum, What: "points the GC passes deleted during the ingest"},
			{Name: "qps_during_gc", Phases: ing, Unit: "points/s", Agg: section.Rate, Better: section.Higher, What: "insert rate in the seconds a GC pass ran"},
			{Name: "qps_outside_gc", Phases: ing, Unit: "points/s", Agg: section.Rate, Better: section.Higher, What: "insert rate in the other seconds"},
			{Name: "window_hours", Phases: in(PhaseTimeline, PhaseCorrelate), Unit: "h", Agg: section.Max, What: "simulated window read"},
			{Name: "points_per_timeline", Phases: in(PhaseTimeline), Agg: section.Mean, What: "points in the timeline of a user who exists"},
			{Name: "threads", Phases: in(PhaseTimeline, PhaseCorrelate), Agg: section.Max, What: "concurrent queries"},
			{Name: "timelines", Phases: in(PhaseTimeline), Agg: section.Sum, What: "timelines read"},
			{Name: "timelines_existing", Phases: in(PhaseTimeline), Agg: section.Sum, What: "timelines of users who exist"},
			{Name: "timelines_nonexisting", Phases: in(PhaseTimeline), Agg: section.Sum, What: "timelines of users who do not"},
			{Name: "correlations", Phases: in(PhaseCorrelate), Agg: section.Sum, What: "correlations solved (users)"},
			{Name: "contacts", Phases: in(PhaseCorrelate), Agg: section.Sum, What: "contacts found (pairs within the distance long enough)"},
			{Name: "near_points", Phases: in(PhaseCorrelate), Agg: section.Sum, What: "nearby points the store returned"},
			{Name: "meters", Phases: in(PhaseCorrelate), Unit: "m", Agg: section.Max, What: "the correlation distance D"},
			{Name: "minutes", Phases: in(PhaseCorrelate), Unit: "min", Agg: section.Max, What: "consecutive minutes within D for a correlation"},
			{Name: "seconds_per_corr", Phases: in(PhaseCorrelate), Unit: "s", Agg: section.Mean, Better: section.Lower, What: "mean time to solve one correlation"},
		},
	})
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }

// render writes the seed-shaped tables of the geo workload.
func render(b *strings.Builder, run *results.Run) {
	ts := section.Participants(run, Name)
	if len(ts) == 0 {
		return
	}
	for _, n := range run.Ladder {
		fmt.Fprintf(b, "## GPS points (seed 002, geo-backtracer), %s simulated users\n\n", section.Count(n))
		b.WriteString("Each simulated user emits one point per simulated minute (user, time, latitude, longitude) in a 10 km city; groups of users meet, so correlations exist. Points are inserted in batches for the ingest's duration while a GC pass drops, every few seconds, the time blocks older than the retention (simulated time). After the ingest a final pass runs and the store must hold exactly the points younger than its cutoff: counted, oldest and newest checked. Every timeline is compared point by point with the generator; every correlation with a brute-force reference. QPS is GPS points per second on this one machine (the seed's R=2 doubles its writes; here there is one copy); moving users = QPS × 60, as the seed derives them.\n\n")

		ins := section.Table{Head: []string{"Target", "Layout", "Ingest", "Simulated", "Points", "QPS (whole)", "QPS (last part)", "Moving users", "Disk after GC (MiB)", "Points held", "Disk per point held"}, Left: 2}
		gc := section.Table{Head: []string{"Target", "Retention", "GC passes", "Pass (mean)", "Pass (max)", "Deleted during ingest", "QPS during GC", "QPS outside GC", "Final pass"}, Left: 1}
		tl := section.Table{Head: []string{"Target", "Window", "Existing p50", "p99", "max", "Non-existing p50", "p99", "max", "Points per timeline"}, Left: 1}
		co := section.Table{Head: []string{"Target", "Window", "Correlations solved", "Contacts found", "Time per correlation (mean)", "p99", "All correlations", "Threads"}, Left: 1}
		var answers, answersOf string
		for _, t := range ts {
			s := t.Find(Name, PhaseIngest, n)
			if s == nil || s.Ops == 0 {
				miss := section.Missing(t, Name, PhaseIngest, n)
				ins.Rows = append(ins.Rows, section.NARow(t.Title, strings.TrimPrefix(miss, "n/a: "), len(ins.Head)-1))
				gc.Rows = append(gc.Rows, []string{t.Title, miss, "", "", "", "", "", "", ""})
			} else {
				m := s.Metrics
				disk := s.Footprint().DiskAllocated
				perPoint := "—"
				if m["points_held"] > 0 && disk > 0 {
					perPoint = fmt.Sprintf("%.0f B", float64(disk)/m["points_held"])
				}
				ins.Rows = append(ins.Rows, []string{t.Title, section.Cell(s.Facts["layout"]), section.SecondsCell(s),
					fmt.Sprintf("%.1f days", m["simulated_days"]), section.Count(int64(m["points"])), f0(m["qps"]), f0(m["qps_last"]),
					f0(m["moving_users"]), section.DiskCell(s), section.Count(int64(m["points_held"])), perPoint})
				during, outside := "—", "—"
				if v, ok := m["qps_during_gc"]; ok {
					during = f0(v)
				}
				if v, ok := m["qps_outside_gc"]; ok {
					outside = f0(v)
				}
				mean, mx := "—", "—"
				if m["gc_passes"] > 0 {
					mean, mx = section.Seconds(m["gc_pass_mean_s"]), section.Seconds(m["gc_pass_max_s"])
				}
				gc.Rows = append(gc.Rows, []string{t.Title, fmt.Sprintf("%.0f h", m["retention_hours"]), f0(m["gc_passes"]), mean, mx,
					section.Count(int64(m["gc_deleted"])), during, outside, section.Seconds(m["final_gc_seconds"])})
			}
			if s := t.Find(Name, PhaseTimeline, n); s != nil && s.Ops > 0 {
				e, x := s.ByOp["existing"], s.ByOp["missing"]
				tl.Rows = append(tl.Rows, []string{t.Title, fmt.Sprintf("%.0f h", s.Metrics["window_hours"]),
					section.Latency(e.P50), section.Latency(e.P99), section.Latency(e.Max),
					section.Latency(x.P50), section.Latency(x.P99), section.Latency(x.Max), f0(s.Metrics["points_per_timeline"])})
			} else {
				tl.Rows = append(tl.Rows, []string{t.Title, section.Missing(t, Name, PhaseTimeline, n), "", "", "", "", "", "", ""})
			}
			if s := t.Find(Name, PhaseCorrelate, n); s != nil && s.Ops > 0 {
				m := s.Metrics
				co.Rows = append(co.Rows, []string{t.Title, fmt.Sprintf("%.0f h", m["window_hours"]), f0(m["correlations"]), f0(m["contacts"]),
					section.Latency(int64(s.Latency.Mean)), section.Latency(s.Latency.P99), section.SecondsCell(s), f0(m["threads"])})
				if answers == "" {
					answers, answersOf = s.Facts["answers"], t.Title
				}
			} else {
				co.Rows = append(co.Rows, []string{t.Title, section.Missing(t, Name, PhaseCorrelate, n), "", "", "", "", "", ""})
			}
		}
		b.WriteString("### Insert rate (seed: \"Insert rate over 1 hour: N QPS per machine (M moving users)\")\n\n")
		ins.Write(b)
		b.WriteString("### Garbage collector (seed: \"GC pass takes about 2 minutes and does not affect QPS\", \"database size is controlled with GC\")\n\n")
		gc.Write(b)
		b.WriteString("### Timeline of a user (seed: \"getting timeline of a non-existing user takes 2 seconds\")\n\n")
		tl.Write(b)
		b.WriteString("### Correlations (seed: \"solving 120 correlations takes about 30 minutes, and is CPU bound\")\n\n")
		co.Write(b)
		if answers != "" {
			fmt.Fprintf(b, "Answers on %s (user: contacts, longest run in minutes), equal to the brute-force reference over the points it holds; every target's answers were checked the same way, over its own window (each ingested as much as it could in the duration): %s\n\n", answersOf, section.Cell(answers))
		}
	}
}
