package results

import (
	"encoding/json"
	"strings"
	"testing"
)

// A results.json of schema version 4 called goroutines "workers" (a
// stream's, and the ledger stress's and tripcache's metric): it still
// reads, as goroutines, and is written back with the new names only.
func TestVersion4WorkersReadAsGoroutines(t *testing.T) {
	src := `{"schema_version": 4, "study": "ledger", "status": "complete", "targets": [{"name": "pebble", "steps": [
		{"workload": "ledger", "phase": "stress", "n": 1000, "metrics": {"reads": 10, "workers": 4},
		 "streams": [{"name": "read", "workers": 1, "target_rate": 200, "ops": 10}, {"name": "write", "workers": 3, "ops": 30}]},
		{"workload": "ledger", "phase": "insert", "n": 1000, "metrics": {"workers": 7}},
		{"workload": "tripcache", "phase": "socket", "n": 1000, "metrics": {"workers": 8}}]}]}`
	r, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != SchemaVersion {
		t.Errorf("version %d after reading, want %d", r.SchemaVersion, SchemaVersion)
	}
	steps := r.Targets[0].Steps
	stress, insert, trip := steps[0], steps[1], steps[2]
	if got := []int{stress.Streams[0].Goroutines, stress.Streams[1].Goroutines}; got[0] != 1 || got[1] != 3 {
		t.Errorf("streams' goroutines %v, want [1 3]", got)
	}
	if _, old := stress.Metrics["workers"]; old || stress.Metrics["goroutines"] != 4 || trip.Metrics["goroutines"] != 8 {
		t.Errorf("metrics: stress %v, tripcache %v: want goroutines 4 and 8, no workers", stress.Metrics, trip.Metrics)
	}
	// Only the figures that were goroutines are renamed.
	if insert.Metrics["workers"] != 7 || len(insert.Metrics) != 1 {
		t.Errorf("ledger insert's metrics %v: want its own workers 7 as they were", insert.Metrics)
	}
	b, err := json.Marshal(stress)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"workers"`) || !strings.Contains(string(b), `"goroutines":3`) {
		t.Errorf("written back: %s", b)
	}
}

// A stream reads its "goroutines", or "workers" where that is absent
// (whatever the file's version): 0 when neither is there, the new name
// when both are.
func TestStreamGoroutinesKey(t *testing.T) {
	for src, want := range map[string]int{
		`{"name": "r", "goroutines": 2}`:               2,
		`{"name": "r", "workers": 5}`:                  5,
		`{"name": "r", "goroutines": 0, "workers": 5}`: 0,
		`{"name": "r", "workers": 5, "goroutines": 6}`: 6,
		`{"name": "r"}`:                                0,
	} {
		var s Stream
		if err := json.Unmarshal([]byte(src), &s); err != nil {
			t.Fatal(err)
		}
		if s.Goroutines != want || s.Name != "r" {
			t.Errorf("%s: %+v, want goroutines %d", src, s, want)
		}
	}
	var s Stream
	if err := json.Unmarshal([]byte(`{"name": "r", "workers": "two"}`), &s); err == nil {
		t.Error("a workers that is not a number read")
	}
}
