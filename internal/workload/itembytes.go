package workload

import (
	"storebench/internal/report/section"
	"storebench/internal/results"
)

// MetricItemBytes is the step metric every workload that stores items
// records on each of its steps: the bytes of one item (the ladder's
// unit, or the thing it counts) as the workload writes it, before any
// engine stores it: its key and value, or the sum of a row's or a
// document's fields. A cost projection turns a size of data into a
// number of items with it.
const MetricItemBytes = "item_bytes"

// ItemBytesMetric is MetricItemBytes typed, for a workload's
// section.Register: bytes, no better or worse (compare shows no verdict
// on it), averaged across parts and runs (it is the same size on each).
var ItemBytesMetric = section.Metric{Name: MetricItemBytes, Unit: "B", Agg: section.Mean,
	What: "bytes of one item as the workload writes it (key and value, before the engine)"}

// SetItemBytes records the size of one item on res (nothing when res is
// nil: a step that failed before it measured anything).
func SetItemBytes(res *results.Step, bytes float64) {
	if res == nil {
		return
	}
	if res.Metrics == nil {
		res.Metrics = map[string]float64{}
	}
	res.Metrics[MetricItemBytes] = bytes
}
