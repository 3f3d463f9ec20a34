package results

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLabelsNameAStep(t *testing.T) {
	for _, c := range []struct {
		l    Labels
		want string
	}{
		{StepLabels("ledger", "stress", 100000).With(LConcurrency, "8").With(LRate, "2000"), "ledger-stress-n1e5-c8-r2000"},
		{StepLabels("ledger", "chain", 1000).With(LLength, "100"), "ledger-chain-n1e3-len100"},
		{StepLabels("ycsb", "a", 10).With(LTrial, "3").With(LRate, "1500").With("zone", "eu/1"), "ycsb-a-n10-r1500-t3-zoneeu_1"},
		{StepLabels("x", "p", 5).With(LRate, "31.25"), "x-p-n5-r31.25"},
	} {
		if got := c.l.Name(); got != c.want {
			t.Errorf("%v: %q, want %q", c.l, got, c.want)
		}
	}
	a := StepLabels("w", "p", 1).With(LConcurrency, "2")
	if !a.Equal(StepLabels("w", "p", 1).With(LConcurrency, "2")) || a.Equal(StepLabels("w", "p", 1)) {
		t.Error("Equal")
	}
	if a.Extra() != "concurrency=2" {
		t.Errorf("Extra %q", a.Extra())
	}
}

// A results.json of before labels is still read: labels come from
// workload, phase and n, and the hidden "length" metric that told the
// ledger's chain steps apart.
func TestOldResultsGetLabels(t *testing.T) {
	old := `{"schema_version": 1, "study": "ledger", "targets": [{"name": "pebble", "steps": [
	  {"workload": "ledger", "phase": "chain", "n": 1000, "metrics": {"length": 100}},
	  {"workload": "ledger", "phase": "chain", "n": 1000, "metrics": {"length": 10}},
	  {"workload": "ledger", "phase": "stress", "n": 1000}]}]}`
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range r.Targets[0].Steps {
		got = append(got, s.Name())
	}
	want := []string{"ledger-chain-n1e3-len100", "ledger-chain-n1e3-len10", "ledger-stress-n1e3"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d named %q, want %q", i, got[i], want[i])
		}
	}
	if s := r.Targets[0].FindLabels(StepLabels("ledger", "chain", 1000).With(LLength, "10")); s != r.Targets[0].Steps[1] {
		t.Error("FindLabels does not find the chain of length 10")
	}
}
