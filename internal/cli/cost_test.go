package cli

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// The cost command's flags: a mix, a sizing from flags or from the run's
// own study, and each bad value refused naming its flag.
func TestCostFlags(t *testing.T) {
	mix, err := parseMix("ycsb/a=3, c=1")
	if err != nil || mix["ycsb/a"] != 3 || mix["c"] != 1 || len(mix) != 2 {
		t.Fatalf("mix %v %v", mix, err)
	}
	for _, bad := range []string{"a", "a=", "=1", "a=-1", "a=x"} {
		if _, err := parseMix(bad); err == nil || !strings.Contains(err.Error(), "--mix") {
			t.Errorf("--mix %q: %v, want refused", bad, err)
		}
	}
	f := costFlags{load: "2e4/s", data: "1e9", replicas: 3, growth: "10%", p99: "5ms", utilisation: 0.5, maxMachines: 50}
	sz, err := f.sizing(&results.Run{})
	if err != nil || sz.Load != 2e4 || sz.Items != 1e9 || sz.Replicas != 3 || sz.GrowthPerMonth != 0.1 || sz.P99 != 0.005 || sz.Utilisation != 0.5 || sz.MaxMachines != 50 {
		t.Fatalf("sizing %+v %v", sz, err)
	}
	stored := &results.Run{Projection: &results.Projection{Sizing: results.Sizing{Load: 7, Items: 8}}}
	if sz, err := (&costFlags{}).sizing(stored); err != nil || sz.Load != 7 {
		t.Errorf("no flags on a priced run: %+v %v, want its own sizing", sz, err)
	}
	for _, c := range []struct {
		f    costFlags
		want string
	}{
		{costFlags{}, "--load"},
		{costFlags{load: "1/s"}, "--data"},
		{costFlags{load: "soon", data: "1"}, "--load"},
		{costFlags{load: "1/s", data: "1", p99: "fast"}, "--p99"},
		{costFlags{load: "1/s", data: "1", growth: "x"}, "--growth"},
		{costFlags{load: "1/s", data: "1", utilisation: 3}, "--utilisation"},
	} {
		if _, err := c.f.sizing(&results.Run{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.f, err, c.want)
		}
	}
	if _, err := loadCatalogs([]string{"nowhere"}); err == nil || !strings.Contains(err.Error(), "aws") {
		t.Errorf("unknown catalog: %v, want the built-in ones listed", err)
	}
}
