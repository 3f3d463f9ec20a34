package coordinator

import (
	"strings"
	"testing"

	"storebench/internal/results"
	_ "storebench/internal/workload/ycsb"
)

// Parts' counts are summed even when they happen to be equal (two
// workers that each acknowledged 1,500 inserts acknowledged 3,000); the
// whole's figures are kept, and must agree.
func TestMergeMetricsFollowsTheWorkload(t *testing.T) {
	part := func(acked, verify float64) *results.Step {
		return &results.Step{Workload: "ycsb", Phase: "load", Metrics: map[string]float64{
			"records": 3000, "acknowledged": acked, "verify_seconds": verify}}
	}
	m, err := mergeMetrics([]*results.Step{part(1500, 2), part(1500, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if m["records"] != 3000 || m["acknowledged"] != 3000 || m["verify_seconds"] != 5 {
		t.Fatalf("merged %v: want records 3000, acknowledged 3000, verify_seconds 5", m)
	}
	bad := part(1500, 2)
	bad.Metrics["records"] = 2999
	if _, err := mergeMetrics([]*results.Step{part(1500, 2), bad}); err == nil || !strings.Contains(err.Error(), "records") {
		t.Fatalf("parts disagreeing on the record count: %v", err)
	}
}
