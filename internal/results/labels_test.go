package results

import (
	"os"
	"path/filepath"
	"testing"
)

// lDepth is a size label as a workload registers one (the ledger's chain
// length is the real one: it registers in its own package).
const lDepth = "depth"

func init() {
	RegisterSizeLabel(SizeLabel{Key: lDepth, Short: "d", Symbol: "D", Metric: "depth"})
}

func TestLabelsNameAStep(t *testing.T) {
	for _, c := range []struct {
		l    Labels
		want string
	}{
		{StepLabels("ledger", "stress", 100000).With(LConcurrency, "8").With(LRate, "2000"), "ledger-stress-n1e5-c8-r2000"},
		{StepLabels("ledger", "chain", 1000).With(lDepth, "100").With(LConcurrency, "2"), "ledger-chain-n1e3-d100-c2"},
		// An undeclared label is named as it is, after the known ones.
		{StepLabels("ledger", "chain", 1000).With("length", "100").With(LConcurrency, "2"), "ledger-chain-n1e3-c2-length100"},
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
// workload, phase and n, and a size label from the hidden metric that
// told steps apart (the ledger's chain length was one).
func TestOldResultsGetLabels(t *testing.T) {
	old := `{"schema_version": 1, "study": "ledger", "targets": [{"name": "pebble", "steps": [
	  {"workload": "ledger", "phase": "chain", "n": 1000, "metrics": {"depth": 100}},
	  {"workload": "ledger", "phase": "chain", "n": 1000, "metrics": {"depth": 10}},
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
	want := []string{"ledger-chain-n1e3-d100", "ledger-chain-n1e3-d10", "ledger-stress-n1e3"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d named %q, want %q", i, got[i], want[i])
		}
	}
	if s := r.Targets[0].FindLabels(StepLabels("ledger", "chain", 1000).With(lDepth, "10")); s != r.Targets[0].Steps[1] {
		t.Error("FindLabels does not find the chain of depth 10")
	}
}

// A size label is one workload's: a second registration of its key or
// its spelling, or one of a well-known key, is refused.
func TestSizeLabelRegisteredOnce(t *testing.T) {
	for _, l := range []SizeLabel{{Key: lDepth, Short: "x"}, {Key: "other", Short: "d"}, {Key: LRate, Short: "q"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: registered, want a panic", l)
				}
			}()
			RegisterSizeLabel(l)
		}()
	}
	if got := SizeLabels(); len(got) != 1 || got[0].Key != lDepth {
		t.Errorf("size labels %+v, want depth alone", got)
	}
}
