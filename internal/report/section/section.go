// Package section is what a workload registers about its results, from
// its own package: the report's tables for it (a Markdown section), its
// headline figure (what the recommendation ranks by when the study states
// no rank_by), and its typed metrics (unit, direction, and how values
// combine across workers or repeated runs). The report, compare and the
// coordinator read this registry and hold nothing specific to one study.
//
// The package also holds the small toolkit a section is written with
// (tables, units, "n/a" cells), so workload packages import it and never
// the report itself: internal/report imports no workload.
package section

import (
	"fmt"
	"sort"
	"strings"

	"storebench/internal/results"
)

// Render writes the tables of one workload for a whole run: every target
// that ran a step of it (or for which its steps are n/a) is a column or
// a row. It writes nothing when no target took part.
type Render func(b *strings.Builder, run *results.Run)

// Headline is the figure a workload's study is decided by when the user
// states no constraint to rank by: the seeds each lead with one (seconds
// to insert the chain, TPS of the transfers, ...).
type Headline struct {
	// Figure is "workload.phase" or "workload.phase.OP".
	Figure string
	// Metric is one of study.RankMetrics.
	Metric string
	// What says it in words, for the report ("seconds to insert a chain").
	What string
}

// Agg is how values of one metric combine: the parts of one figure
// (workers of a step, the several steps of a phase at one size) and
// repeated runs of the same step.
type Agg string

const (
	// Sum: counts; parts add up. Repeated runs are averaged.
	Sum Agg = "sum"
	// Max: the worst part stands for all (a peak, a worst latency).
	Max Agg = "max"
	// Mean: parts and runs are averaged.
	Mean Agg = "mean"
	// Rate: events per second; parts running side by side add up, and
	// repeated runs are averaged.
	Rate Agg = "rate"
	// Histogram: a latency whose histograms merge exactly; parts combine
	// to the worst of their values when only the values are at hand.
	Histogram Agg = "histogram"
)

// Better is the direction of a metric.
type Better int

const (
	// Neither: a parameter or a count recorded for the record (blocks,
	// readers); compare shows it, with no verdict.
	Neither Better = iota
	Higher
	Lower
)

// Metric is one typed figure a workload records in results.Step.Metrics.
type Metric struct {
	// Name is the key in results.Step.Metrics.
	Name string
	// Phases the metric belongs to; empty: every phase of the workload.
	Phases []string
	// Unit is printed after the value: "s", "ops/s", "B", "ns", or a
	// word ("blocks"); empty for a plain number.
	Unit   string
	Agg    Agg
	Better Better
	// What says it in words.
	What string
}

// In reports whether the metric belongs to a phase.
func (m Metric) In(phase string) bool {
	if len(m.Phases) == 0 {
		return true
	}
	for _, p := range m.Phases {
		if p == phase {
			return true
		}
	}
	return false
}

// Format prints a value of the metric with its unit.
func (m Metric) Format(v float64) string {
	switch m.Unit {
	case "s":
		return Seconds(v)
	case "ns":
		return Latency(int64(v))
	case "B":
		return Bytes(int64(v))
	case "":
		return number(v)
	}
	return number(v) + " " + m.Unit
}

func number(v float64) string {
	if v == float64(int64(v)) || v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// Combine merges the values of one metric from the parts of a figure
// (workers of a step, steps of one phase at one size), by its Agg.
func (m Metric) Combine(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	var out float64
	switch m.Agg {
	case Max, Histogram:
		out = vals[0]
		for _, v := range vals[1:] {
			out = max(out, v)
		}
	case Mean:
		for _, v := range vals {
			out += v
		}
		out /= float64(len(vals))
	default: // Sum, Rate
		for _, v := range vals {
			out += v
		}
	}
	return out
}

// Def is everything a workload registers about its results. Every field
// is optional: a workload with no Render gets a generic table of its
// steps and typed metrics.
type Def struct {
	Render   Render
	Headline *Headline
	Metrics  []Metric
}

var defs = map[string]Def{}

// Register records what a workload registers about its results; called
// from the workload package's init, next to workload.Register.
func Register(workload string, d Def) {
	if _, dup := defs[workload]; dup {
		panic("report section registered twice: " + workload)
	}
	defs[workload] = d
}

// Lookup returns what a workload registered (ok false: nothing).
func Lookup(workload string) (Def, bool) {
	d, ok := defs[workload]
	return d, ok
}

// Metrics returns the typed metrics a workload registered for a phase.
func Metrics(workload, phase string) []Metric {
	var out []Metric
	for _, m := range defs[workload].Metrics {
		if m.In(phase) {
			out = append(out, m)
		}
	}
	return out
}

// MetricOf returns the typed metric of a workload's phase by name.
func MetricOf(workload, phase, name string) (Metric, bool) {
	for _, m := range Metrics(workload, phase) {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Workloads lists the workloads that registered, sorted.
func Workloads() []string {
	var out []string
	for w := range defs {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}
