package documents

import (
	"fmt"
	"sort"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/workload"
)

func init() {
	modes := []string{ModeInsert, ModeIterate, ModeUpdate, ModeDelete}
	ns := func(name, what string) section.Metric {
		return section.Metric{Name: name, Phases: modes, Unit: "ns", Agg: section.Histogram, Better: section.Lower, What: what}
	}
	rate := func(name, what string) section.Metric {
		return section.Metric{Name: name, Phases: modes, Unit: "calls/s", Agg: section.Rate, Better: section.Higher, What: what}
	}
	section.Register("documents", section.Def{
		Render:   render,
		Headline: &section.Headline{Figure: "documents.iterate_one", Metric: "throughput", What: "finds of one document by its indexed _id per second (iterate_one)"},
		Metrics: []section.Metric{
			{Name: "documents", Phases: []string{PhasePrepare}, Agg: section.Max, What: "documents loaded, all collections"},
			{Name: "collections", Agg: section.Max, What: "collections"},
			{Name: "index_seconds", Phases: []string{PhasePrepare}, Unit: "s", Agg: section.Max, Better: section.Lower, What: "seconds to create the collections and their _id index"},
			{Name: "threads", Phases: modes, Agg: section.Max, What: "threads (the tool's -t)"},
			{Name: "count", Phases: modes, Agg: section.Sum, What: "operations timed (Dropwizard timer count)"},
			rate("mean_rate", "mean rate (count over the run's time)"),
			rate("m1_rate", "1-minute exponentially weighted rate (5 s ticks)"),
			rate("m5_rate", "5-minute exponentially weighted rate"),
			rate("m15_rate", "15-minute exponentially weighted rate"),
			ns("min_ns", "fastest operation in the timer's sample"),
			ns("max_ns", "slowest operation in the timer's sample"),
			ns("mean_ns", "weighted mean of the timer's sample"),
			{Name: "stddev_ns", Phases: modes, Unit: "ns", Agg: section.Max, Better: section.Lower, What: "weighted standard deviation of the timer's sample"},
			ns("median_ns", "median of the timer's sample"),
			ns("p75_ns", "75th percentile of the timer's sample"),
			ns("p95_ns", "95th percentile of the timer's sample"),
			ns("p98_ns", "98th percentile of the timer's sample"),
			ns("p99_ns", "99th percentile of the timer's sample"),
			ns("p999_ns", "99.9th percentile of the timer's sample"),
			workload.ItemBytesMetric,
		},
	})
}

var modeTitle = map[string]string{
	ModeInsert:  "INSERT: insertOne of a new document",
	ModeIterate: "ITERATE_ONE: find one document by its indexed _id",
	ModeUpdate:  "UPDATE_ONE: $set rnd, $inc v of one document by _id",
	ModeDelete:  "DELETE_ONE: delete one document by _id",
}

// ms prints nanoseconds in milliseconds with two decimals, as the tool.
func ms(v float64) string { return fmt.Sprintf("%.2f", v/1e6) }

func render(b *strings.Builder, run *results.Run) {
	ts := section.Participants(run, "documents")
	if len(ts) == 0 {
		return
	}
	for _, n := range run.Ladder {
		fmt.Fprintf(b, "## Documents (mongodb-performance-test modes), %s documents per collection\n\n", section.Count(n))
		b.WriteString("Prepare drops and creates the collections, creates an ascending index on `_id` (the queried field of the tool's *_ONE modes) before loading, then loads the documents in batches. Documents have the tool's shape `{_id: long, threadId, threadRunCount, rnd, [rndTxt], v}`. Every document found is checked against what was written; inserts and deletes are checked by counting the collections afterwards.\n\n")
		prep := section.Table{Head: []string{"Target", "Index", "Index created in", "Documents loaded", "Load rate"}, Left: 2}
		for _, t := range ts {
			s := t.Find("documents", PhasePrepare, n)
			if s == nil || s.Ops == 0 {
				prep.Rows = append(prep.Rows, []string{t.Title, section.Missing(t, "documents", PhasePrepare, n), "", "", ""})
				continue
			}
			prep.Rows = append(prep.Rows, []string{t.Title, section.Cell(s.Facts["index"]), section.Seconds(s.Metrics["index_seconds"]),
				section.Count(int64(s.Metrics["documents"])), fmt.Sprintf("%.0f docs/s", s.Metrics["documents"]/s.Seconds)})
		}
		prep.Write(b)
		for _, m := range modeOrder {
			rows := modeRows(ts, m, n, run.Concurrency)
			if len(rows) == 0 {
				continue
			}
			fmt.Fprintf(b, "### %s\n\n", modeTitle[m])
			b.WriteString("What mongodb-performance-test prints (Dropwizard Metrics timer `stats-per-run`): rates in calls/second, the 1-, 5- and 15-minute rates exponentially weighted over 5 s ticks; durations in milliseconds from the timer's sample of 1028 operations (exponentially decaying, favouring recent ones). HDR columns: every operation.\n\n")
			rt := section.Table{Head: []string{"Target", "Threads", "count", "mean rate", "1-minute rate", "5-minute rate", "15-minute rate"}, Left: 2}
			lt := section.Table{Head: []string{"Target", "Threads", "min", "max", "mean", "stddev", "median", "75%", "95%", "98%", "99%", "99.9%",
				"HDR p50", "HDR p99", "HDR p99.9", "HDR max"}, Left: 2}
			for _, r := range rows {
				if r.step == nil {
					rt.Rows = append(rt.Rows, []string{r.title, r.threads, r.missing, "", "", "", ""})
					lt.Rows = append(lt.Rows, []string{r.title, r.threads, r.missing, "", "", "", "", "", "", "", "", "", "", "", "", ""})
					continue
				}
				mt := r.step.Metrics
				rt.Rows = append(rt.Rows, []string{r.title, r.threads, fmt.Sprintf("%.0f", mt["count"]),
					fmt.Sprintf("%.2f", mt["mean_rate"]), fmt.Sprintf("%.2f", mt["m1_rate"]), fmt.Sprintf("%.2f", mt["m5_rate"]), fmt.Sprintf("%.2f", mt["m15_rate"])})
				l := r.step.Latency
				lt.Rows = append(lt.Rows, []string{r.title, r.threads, ms(mt["min_ns"]), ms(mt["max_ns"]), ms(mt["mean_ns"]), ms(mt["stddev_ns"]),
					ms(mt["median_ns"]), ms(mt["p75_ns"]), ms(mt["p95_ns"]), ms(mt["p98_ns"]), ms(mt["p99_ns"]), ms(mt["p999_ns"]),
					ms(float64(l.P50)), ms(float64(l.P99)), ms(float64(l.P999)), ms(float64(l.Max))})
			}
			rt.Write(b)
			lt.Write(b)
		}
	}
}

type modeRow struct {
	title, threads, missing string
	step                    *results.Step
	order                   int
}

// modeRows are a mode's rows: per target, one per step of it (the
// study's threads, then each level of a concurrency sweep), or one "n/a"
// row.
func modeRows(ts []*results.Target, mode string, n int64, studyThreads int) []modeRow {
	var out []modeRow
	for _, t := range ts {
		var rows []modeRow
		for _, s := range t.Steps {
			if s.Workload != "documents" || s.Phase != mode || s.N != n || s.Ops == 0 {
				continue
			}
			th := int(s.Metrics["threads"])
			if th == 0 {
				th = studyThreads
			}
			label := fmt.Sprint(th)
			if _, swept := s.Labels[results.LConcurrency]; !swept {
				label += " (study)"
			}
			rows = append(rows, modeRow{title: t.Title, threads: label, step: s, order: th})
		}
		if len(rows) == 0 {
			c := section.Missing(t, "documents", mode, n)
			if c == "—" {
				continue
			}
			rows = append(rows, modeRow{title: t.Title, threads: "", missing: c})
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].order < rows[j].order })
		out = append(out, rows...)
	}
	return out
}
