package tripcache

import (
	"fmt"
	"strconv"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/workload"
)

func init() {
	section.Register("tripcache", section.Def{
		Render:   render,
		Headline: &section.Headline{Figure: "tripcache.socket", Metric: "throughput", What: "ticks per second processed at the study's rate over the socket (the sustainable rate is in the trip-builder table)"},
		Metrics: []section.Metric{
			{Name: "ticks", Agg: section.Sum, What: "ticks processed"},
			{Name: "ticks_offered", Agg: section.Sum, What: "ticks the generator was to send"},
			{Name: "ticks_read", Agg: section.Sum, What: "ticks the consumer read"},
			{Name: "ticks_per_s", Unit: "ticks/s", Agg: section.Rate, Better: section.Higher, What: "ticks processed per second"},
			{Name: "offered_per_s", Unit: "ticks/s", Agg: section.Max, What: "ticks offered per second [packet.size]"},
			{Name: "cache_ops", Agg: section.Sum, What: "cache operations (gets and puts)"},
			{Name: "cache_ops_per_s", Unit: "ops/s", Agg: section.Rate, Better: section.Higher, What: "cache operations per second"},
			{Name: "e2e_p99_ns", Unit: "ns", Agg: section.Max, Better: section.Lower, What: "p99 end-to-end latency (tick due → trip updated)"},
			{Name: "queue_max", Unit: "ticks", Agg: section.Max, Better: section.Lower, What: "longest in-process queue sampled (the seed's indicator)"},
			{Name: "queue_mean", Unit: "ticks", Agg: section.Mean, Better: section.Lower, What: "mean in-process queue sampled"},
			{Name: "queue_capacity", Unit: "ticks", Agg: section.Max, What: "bound of the in-process queue"},
			{Name: "backlog_end", Unit: "ticks", Agg: section.Max, Better: section.Lower, What: "ticks due and not processed at the last sample"},
			{Name: "trips_created", Agg: section.Sum, What: "trips created"},
			{Name: "trips_completed", Agg: section.Sum, What: "trips completed"},
			{Name: "trips_verified", Agg: section.Sum, What: "completed trips read back and matched"},
			{Name: "generator_cpu_s", Unit: "s", Agg: section.Sum, What: "CPU time of the generator's process"},
			{Name: "transport_cpu_s", Unit: "s", Agg: section.Sum, What: "CPU time of the managed Kafka broker over the step"},
			{Name: "machine_cpu_percent", Unit: "%", Agg: section.Mean, What: "the whole machine's busy CPU over the stream (100% = one core), ours and others'"},
			{Name: "machine_iowait_percent", Unit: "%", Agg: section.Mean, What: "the whole machine's CPU waiting on I/O over the stream (100% = one core)"},
			// "workers" in results of schema version 4 (results.Decode
			// renames it).
			{Name: "goroutines", Agg: section.Max, What: "processing goroutines"},
			{Name: "sensors", Agg: section.Max, What: "sensors (trips under way at once)"},
			workload.ItemBytesMetric,
		},
	})
}

// seedFigures are the seed's one-line results (8 vCPU r3.2xlarge, SSD).
var seedFigures = map[string]string{"rocksdb": "70K tps", "aerospike": "40K tps"}

func kilo(v float64) string {
	switch {
	case v >= 1e4:
		return fmt.Sprintf("%.0fK", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// stepNamed finds a trial's step.
func stepNamed(t *results.Target, name string) *results.Step {
	for _, s := range t.Steps {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

func searchOf(t *results.Target, phase string) *results.RateSearch {
	for i := range t.Searches {
		if rs := &t.Searches[i]; rs.Workload == "tripcache" && rs.Phase == phase {
			return rs
		}
	}
	return nil
}

// trialStep is the step of the highest sustained trial and of the lowest
// failed one above it.
func trialSteps(t *results.Target, rs *results.RateSearch) (good, bad *results.Step, badWhy string) {
	for _, tr := range rs.Trials {
		if tr.Sustained && tr.Offered == rs.Sustainable {
			good = stepNamed(t, tr.Step)
		}
		if !tr.Sustained && tr.Offered == rs.FailedAbove {
			bad, badWhy = stepNamed(t, tr.Step), tr.Why
		}
	}
	return good, bad, badWhy
}

// cpu is the step's CPU percentages: the worker (consumer, and the cache
// when embedded), the cache's server, and the generator's process.
func cpu(s *results.Step) (consumer, server, gen float64) {
	consumer = s.Resources.CPUPercent
	if s.Resources.Timed != nil {
		consumer = s.Resources.Timed.CPUPercent
	}
	if s.ServerResources != nil {
		server = s.ServerResources.CPUPercent
	}
	if s.Seconds > 0 {
		gen = 100 * s.Metrics["generator_cpu_s"] / s.Seconds
	}
	return
}

// limit names what stopped a target at the lowest failed rate: the
// machine's CPU when the generator, consumer and cache together use it
// up, one core when a single process is pinned at 100%, else the
// latency or queue that failed with the CPU to spare (waiting: disk,
// locks, the transport).
func limit(run *results.Run, s *results.Step, why string, embedded bool) string {
	if s == nil {
		return "—"
	}
	c, sv, g := cpu(s)
	cores := float64(max(run.Host.LogicalCPUs, 1))
	split := fmt.Sprintf("consumer%s %.0f%%", map[bool]string{true: "+cache", false: ""}[embedded], c)
	if !embedded {
		split += fmt.Sprintf(", cache server %.0f%%", sv)
	}
	split += fmt.Sprintf(", generator %.0f%%", g)
	var broker float64
	if s.Seconds > 0 {
		broker = 100 * s.Metrics["transport_cpu_s"] / s.Seconds
	}
	if broker > 0 {
		split += fmt.Sprintf(", Kafka broker %.0f%%", broker)
	}
	total := c + sv + g + broker
	machine := s.Metrics["machine_cpu_percent"]
	switch {
	case total >= 85*cores:
		return fmt.Sprintf("CPU: the machine's %.0f cores are used up (%s)", cores, split)
	case machine >= 85*cores:
		// Busy with work that is not the study's: on a shared machine
		// the neighbours' load is what the stream waited for.
		return fmt.Sprintf("CPU: the machine's %.0f cores are busy (%.0f%%), %.0f%% of it other processes' (%s)", cores, machine, max(0, machine-total), split)
	case goroutines(s) > 0 && s.Latency.Mean > 0 && goroutines(s)*1e9/s.Latency.Mean < 1.25*s.Rate:
		// Each processing goroutine does one tick at a time, its cache
		// operations one round trip after the other: the goroutines
		// over the mean time per tick bound the rate, whatever the CPU.
		return fmt.Sprintf("the consumer's %.0f processing goroutines: a tick takes %s on average (get and put one after the other), so at most ~%s ticks/s (%s)",
			goroutines(s), section.Latency(int64(s.Latency.Mean)), kilo(goroutines(s)*1e9/s.Latency.Mean), split)
	case s.Metrics["machine_iowait_percent"] >= 50:
		return fmt.Sprintf("disk: the machine waits on I/O %.0f%% of a core (%s)", s.Metrics["machine_iowait_percent"], split)
	case c >= 90 && !embedded:
		return fmt.Sprintf("the consumer's CPU (%s)", split)
	case sv >= 90:
		return fmt.Sprintf("the cache server's CPU, one core (%s)", split)
	case g >= 90:
		return fmt.Sprintf("the generator and transport (%s)", split)
	case broker >= 90:
		return fmt.Sprintf("the transport: the Kafka broker's CPU (%s)", split)
	}
	return fmt.Sprintf("waiting with CPU to spare (%s): %s", split, why)
}

// goroutines is step s's processing goroutines ("workers" in results of
// schema version 4, which results.Decode renames).
func goroutines(s *results.Step) float64 { return s.Metrics["goroutines"] }

func render(b *strings.Builder, run *results.Run) {
	ts := section.Participants(run, "tripcache")
	if len(ts) == 0 {
		return
	}
	phases := tripPhases(ts)
	fmt.Fprintf(b, "## Trip builder: GPS ticks into a persistent cache (seed 004)\n\n")
	fmt.Fprintf(b, "A generator process sends GPS ticks; the consumer finds each tick's trip in the cache and creates it (one operation), or updates or completes it (get, then put). The generator, the consumer and the cache share this machine's %d CPUs. A rate is sustained while the consumer achieves it, p99 end-to-end latency (tick due → trip updated) stays under the SLO and late ticks do not keep growing. Every completed trip is read back and compared with the generator's.\n\n", run.Host.LogicalCPUs)
	tab := sustainableTable(run, ts, phases)
	fmt.Fprintf(b, "### Highest sustainable tick rate\n\n")
	tab.Write(b)
	// The seed's one line per engine, with this machine's.
	if lines := seedLines(ts, phases); len(lines) > 0 {
		fmt.Fprintf(b, "The seed's results, RocksDB 70K tps and Aerospike 40K tps, came from an 8-vCPU r3.2xlarge with the generator on the same host; this machine:\n\n%s\n\n", strings.Join(lines, "\n"))
	}

	st := streamTable(ts, phases)
	fmt.Fprintf(b, "### The stream at the study's rate\n\n")
	st.Write(b)
	if n := streamTrips(run); n > 0 {
		fmt.Fprintf(b, "The stream keeps %s trips under way; a tick comes back to its trip only after %s others, so a phase or trial of fewer ticks creates a trip with nearly every tick (one cache operation) and reaches the find-and-update path (two) rarely: compare trips created with ticks.\n\n", study.FormatCount(int64(n)), study.FormatCount(int64(n)))
	}

	// Queue length over time: the seed's indicator, per second, in the
	// highest sustained trial and the lowest failed one.
	if qt := queueTable(ts, phases); len(qt.Rows) > 0 {
		fmt.Fprintf(b, "### Queue length over time\n\n")
		qt.Write(b)
	}
	// The transports as run.
	facts := map[string]bool{}
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload == "tripcache" && s.Facts["transport"] != "" && !facts[s.Facts["transport"]] {
				facts[s.Facts["transport"]] = true
				fmt.Fprintf(b, "- %s: %s\n", s.Phase, s.Facts["transport"])
			}
		}
	}
	if len(facts) > 0 {
		b.WriteString("\n")
	}
}

// tripPhases are the transports the targets ran tripcache over, in the
// order they first appear.
func tripPhases(ts []*results.Target) []string {
	var phases []string
	seen := map[string]bool{}
	for _, t := range ts {
		for _, s := range t.Steps {
			if s.Workload == "tripcache" && !seen[s.Phase] {
				seen[s.Phase] = true
				phases = append(phases, s.Phase)
			}
		}
	}
	return phases
}

// sustainableTable is the highest sustainable rate of each target over
// each transport, what limited it and the seed's figure.
func sustainableTable(run *results.Run, ts []*results.Target, phases []string) section.Table {
	tab := section.Table{Head: []string{"Target", "Transport", "Highest sustainable rate (ticks/s)", "Cache ops/s at it", "p99 e2e at it", "Failed above", "Limited by", "Seed (r3.2xlarge, 8 vCPU)"}, Left: 2}
	for _, t := range ts {
		for _, ph := range phases {
			rs := searchOf(t, ph)
			if rs == nil {
				if t.Find("tripcache", ph, -1) == nil {
					tab.Rows = append(tab.Rows, []string{t.Title, ph, section.Missing(t, "tripcache", ph, -1), "", "", "", "", ""})
				}
				continue
			}
			tab.Rows = append(tab.Rows, sustainableRow(run, t, ph, rs))
		}
	}
	return tab
}

// sustainableRow is one target's rate search over transport ph.
func sustainableRow(run *results.Run, t *results.Target, ph string, rs *results.RateSearch) []string {
	good, bad, why := trialSteps(t, rs)
	r := []string{t.Title, ph, "none held", "—", "—", "—", "—", seedFigures[t.Name]}
	if rs.Sustainable > 0 {
		r[2] = fmt.Sprintf("**%s**", kilo(rs.Sustainable))
		if rs.Done && !rs.Converged {
			r[2] += " (trials ran out)"
		}
	}
	if !rs.Done {
		// Stopped (interrupted, a limit, a failed trial) or never
		// finished: the best found so far, not the search's answer.
		r[2] += " (search cut short)"
	}
	if good != nil {
		r[3] = kilo(good.Metrics["cache_ops_per_s"])
		if good.Intended != nil {
			r[4] = section.Latency(good.Intended.P99)
		}
	}
	if rs.FailedAbove > 0 {
		r[5] = fmt.Sprintf("%s: %s", kilo(rs.FailedAbove), section.Cell(why))
		r[6] = section.Cell(limit(run, bad, why, t.Server == nil))
	}
	if r[7] == "" {
		r[7] = "—"
	}
	return r
}

// seedLines are this machine's sustainable rates, one line per target,
// beside the seed's figure for its engine.
func seedLines(ts []*results.Target, phases []string) []string {
	var lines []string
	for _, t := range ts {
		var mine []string
		for _, ph := range phases {
			if rs := searchOf(t, ph); rs != nil {
				mine = append(mine, fmt.Sprintf("%s tps (%s)", kilo(rs.Sustainable), ph))
			}
		}
		if len(mine) == 0 {
			continue
		}
		l := fmt.Sprintf("- %s: %s", t.Title, strings.Join(mine, ", "))
		if f := seedFigures[t.Name]; f != "" {
			l += " — seed: " + f
		}
		lines = append(lines, l)
	}
	return lines
}

// streamTable is each target's step at the study's rate over each
// transport.
func streamTable(ts []*results.Target, phases []string) section.Table {
	st := section.Table{Head: []string{"Target", "Transport", "Offered / achieved (ticks/s)", "p50 / p99 e2e", "get p99", "put p99", "Queue max / mean (of cap)", "Trips created / completed / verified", "CPU consumer / server / generator"}, Left: 2}
	for _, t := range ts {
		for _, ph := range phases {
			s := t.Find("tripcache", ph, -1)
			if s == nil {
				continue
			}
			c, sv, g := cpu(s)
			e2e := "—"
			if s.Intended != nil {
				e2e = fmt.Sprintf("%s / %s", section.Latency(s.Intended.P50), section.Latency(s.Intended.P99))
			}
			op := func(n string) string {
				if v, ok := s.ByOp[n]; ok {
					return section.Latency(v.P99)
				}
				return "—"
			}
			st.Rows = append(st.Rows, []string{t.Title, ph,
				fmt.Sprintf("%s / %s", kilo(s.Rate), kilo(float64(s.Ops)/max(s.Seconds, 1e-9))), e2e, op("get"), op("put"),
				fmt.Sprintf("%.0f / %.0f (%.0f)", s.Metrics["queue_max"], s.Metrics["queue_mean"], s.Metrics["queue_capacity"]),
				fmt.Sprintf("%.0f / %.0f / %.0f", s.Metrics["trips_created"], s.Metrics["trips_completed"], s.Metrics["trips_verified"]), fmt.Sprintf("%.0f%% / %.0f%% / %.0f%%", c, sv, g)})
		}
	}
	return st
}

// queueTable is the queue length and the backlog each second of the
// highest sustained trial and the lowest failed one (without a search,
// of the step at the study's rate).
func queueTable(ts []*results.Target, phases []string) section.Table {
	qt := section.Table{Head: []string{"Target", "Transport", "Trial", "Queue length each second", "Backlog each second (due − processed)"}, Left: 3}
	for _, t := range ts {
		for _, ph := range phases {
			list, names := queueTrials(t, ph)
			for i, s := range list {
				var q, bl []string
				for _, tk := range s.Series {
					if tk.Counts == nil {
						continue
					}
					q = append(q, strconv.FormatInt(tk.Counts["queue"], 10))
					bl = append(bl, strconv.FormatInt(tk.Counts["backlog"], 10))
				}
				qt.Rows = append(qt.Rows, []string{t.Title, ph, names[i], strings.Join(q, " "), strings.Join(bl, " ")})
			}
		}
	}
	return qt
}

// queueTrials are the steps of target t over transport ph whose queues
// the report shows, and their names.
func queueTrials(t *results.Target, ph string) (list []*results.Step, names []string) {
	if rs := searchOf(t, ph); rs != nil {
		good, bad, _ := trialSteps(t, rs)
		if good != nil {
			list, names = append(list, good), append(names, fmt.Sprintf("held at %s/s", kilo(good.Rate)))
		}
		if bad != nil {
			list, names = append(list, bad), append(names, fmt.Sprintf("failed at %s/s", kilo(bad.Rate)))
		}
	} else if s := t.Find("tripcache", ph, -1); s != nil {
		list, names = append(list, s), append(names, fmt.Sprintf("study rate %s/s", kilo(s.Rate)))
	}
	return list, names
}

// streamTrips is the most trips under way at once (the sensors metric:
// base sensors × clones) among the run's tripcache steps that read
// fewer ticks than that: steps where a tick seldom finds its trip. 0:
// none.
func streamTrips(run *results.Run) float64 {
	n := 0.0
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Workload == "tripcache" && s.Metrics["ticks_read"] < s.Metrics["sensors"] {
				n = max(n, s.Metrics["sensors"])
			}
		}
	}
	return n
}
