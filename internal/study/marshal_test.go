package study

import (
	"reflect"
	"strings"
	"testing"
)

// The study written as run loads back to the same effective study: the
// scale and every override applied, nothing of the file's text lost.
func TestEffectiveLoadsBackToTheStudyAsRun(t *testing.T) {
	s, err := Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	seed, conc := int64(42), 3
	if err := s.Apply(Override{Ladder: str("10,1e3"), Targets: str("pebble,redis://:secret@127.0.0.1:6379/0,bbolt"),
		Durability: str("async"), Seed: &seed, Concurrency: &conc, TimeLimit: str("90s"),
		Set: []string{"ledger.stress.rate=5000", "ledger.chains.lengths=[10, 100]"}}); err != nil {
		t.Fatal(err)
	}
	s.Targets[0].Options = map[string]string{"compression": "none"}
	s.Targets[2].Cache = 64 << 20
	out, err := s.Effective(func(u string) string { return strings.Replace(u, "secret", "xxxxx", 1) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "secret") {
		t.Fatalf("a password reached the study as run:\n%s", out)
	}
	back, err := Parse("study.yaml", out)
	if err != nil {
		t.Fatalf("the study as run does not load: %v\n%s", err, out)
	}
	s.Targets[1].URI = strings.Replace(s.Targets[1].URI, "secret", "xxxxx", 1)
	same(t, s, back)
	if !strings.Contains(string(out), "rate: 5000") || !strings.HasPrefix(string(out), "# The study as run: studies/ledger.yaml") {
		t.Fatalf("study as run:\n%s", out)
	}

	// A scale is applied, not copied: loading the result gives the
	// scaled sizes without --scale.
	sc, err := Parse("s.yaml", []byte(scaled))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Apply(Override{Scale: "big", Set: []string{"w.a=3"}}); err != nil {
		t.Fatal(err)
	}
	out, err = sc.Effective(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err = Parse("study.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	same(t, sc, back)
	if len(back.Scales) != 0 || back.Ladder[1] != 1e7 {
		t.Fatalf("scale not applied in the study as run:\n%s", out)
	}
}

func same(t *testing.T, want, got *Study) {
	t.Helper()
	type settings struct {
		Name, Title, Description, Durability string
		Seed                                 int64
		Concurrency                          int
		Ladder                               []Count
		Limits                               Limits
	}
	w := settings{want.Name, want.Title, want.Description, want.Durability, want.Seed, want.Concurrency, want.Ladder, want.Limits}
	g := settings{got.Name, got.Title, got.Description, got.Durability, got.Seed, got.Concurrency, got.Ladder, got.Limits}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("settings differ:\nwant %+v\ngot  %+v", w, g)
	}
	if len(want.Targets) != len(got.Targets) {
		t.Fatalf("targets: want %d, got %d", len(want.Targets), len(got.Targets))
	}
	for i := range want.Targets {
		a, b := want.Targets[i], got.Targets[i]
		if a.Name != b.Name || a.URI != b.URI || a.Cache != b.Cache || !reflect.DeepEqual(a.Options, b.Options) {
			t.Errorf("target %d: want %+v, got %+v", i, a, b)
		}
	}
	if len(want.Workloads) != len(got.Workloads) {
		t.Fatalf("workloads: want %d, got %d", len(want.Workloads), len(got.Workloads))
	}
	for i := range want.Workloads {
		var a, b any
		if err := want.Workloads[i].Params.Decode(&a); err != nil {
			t.Fatal(err)
		}
		if err := got.Workloads[i].Params.Decode(&b); err != nil {
			t.Fatal(err)
		}
		if want.Workloads[i].Name != got.Workloads[i].Name || !reflect.DeepEqual(a, b) {
			t.Errorf("workload %d params:\nwant %v\ngot  %v", i, a, b)
		}
	}
	if (want.Constraints == nil) != (got.Constraints == nil) {
		t.Fatalf("constraints lost")
	}
	if want.Constraints != nil {
		a, b := *want.Constraints, *got.Constraints
		if a.RAM != b.RAM || a.Disk != b.Disk || a.Durability != b.Durability || a.RankBy != b.RankBy ||
			!sameBounds(a.P99, b.P99) || !sameBounds(a.Throughput, b.Throughput) {
			t.Errorf("constraints differ: want %+v, got %+v", a, b)
		}
	}
}

func sameBounds(a, b []Bound) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Figure != b[i].Figure || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}
