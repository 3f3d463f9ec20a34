package study

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const okBody = "ladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n"

// A study's name becomes a directory name under --out: anything that is
// not one safe path element is refused where the file says it.
func TestStudyNameMustBeSafe(t *testing.T) {
	for _, name := range []string{`"../../../x"`, "a/b", `"."`, `".."`, ".hidden", "-x", `"a\0b"`, `"a b"`, strings.Repeat("x", 65), strings.Repeat("x", 300)} {
		_, err := Parse("f.yaml", []byte("name: "+name+"\n"+okBody))
		var se *Error
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "f.yaml:1: name: ") {
			t.Errorf("name %.20s: got %v", name, err)
		}
	}
	for _, name := range []string{"ledger", "my_study-2.1", "A", strings.Repeat("x", 64)} {
		if _, err := Parse("f.yaml", []byte("name: "+name+"\n"+okBody)); err != nil {
			t.Errorf("name %s refused: %v", name, err)
		}
	}
}

// Files, ladders and documents are bounded, with a clear error each.
func TestStudyFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	body := "name: x\n" + okBody + "description: " + strings.Repeat("y", MaxFileBytes) + "\n"
	if err := os.WriteFile(big, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "big.yaml: larger than 1024 KiB") {
		t.Errorf("a file over 1 MiB: %v", err)
	}
	if _, err := LoadConstraints(big); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("a constraints file over 1 MiB: %v", err)
	}
	if _, err := Parse("f.yaml", []byte(body)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Parse of over 1 MiB: %v", err)
	}

	var sizes []string
	for i := 1; i <= MaxLadderSteps+1; i++ {
		sizes = append(sizes, FormatCount(int64(i)))
	}
	long := "name: x\nladder: [" + strings.Join(sizes, ", ") + "]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n"
	if _, err := Parse("f.yaml", []byte(long)); err == nil || !strings.Contains(err.Error(), "f.yaml:2: ladder: 65 sizes: at most 64") {
		t.Errorf("65-step ladder: %v", err)
	}
	s, _ := Load("ledger")
	if err := s.Apply(Override{Ladder: str(strings.Join(sizes, ","))}); err == nil || !strings.Contains(err.Error(), "--ladder 1,2,3,") || !strings.Contains(err.Error(), "65 sizes: at most 64") {
		t.Errorf("--ladder of 65 sizes: %v", err)
	}

	for _, c := range []struct{ src, want string }{
		{"name: x\n" + okBody + "---\nname: y\n", "f.yaml:5: a second YAML document is not allowed"},
		{"name: x\n" + okBody + "---\n", "f.yaml:5: a second YAML document is not allowed"},
		{"name: x\n" + okBody + "--- [\n", "a second YAML document is not allowed"},
	} {
		if _, err := Parse("f.yaml", []byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
	two := filepath.Join(dir, "c.yaml")
	os.WriteFile(two, []byte("ram: 1GiB\n---\nram: 2GiB\n"), 0o644)
	if _, err := LoadConstraints(two); err == nil || !strings.Contains(err.Error(), "c.yaml:2: a second YAML document is not allowed") {
		t.Errorf("two constraints documents: %v", err)
	}
}

// The ladder's range is said as it is, 1 to 1e9, wherever a size is given.
func TestLadderRangeIsStated(t *testing.T) {
	for _, l := range []string{"-1", "0", "1e10", "10,-5"} {
		s, _ := Load("ledger")
		err := s.Apply(Override{Ladder: str(l)})
		if err == nil || !strings.Contains(err.Error(), "--ladder "+l+": ") || !strings.Contains(err.Error(), "from 1 to 1e9") || strings.Contains(err.Error(), "1e15") {
			t.Errorf("--ladder %s: %v", l, err)
		}
	}
	for _, l := range []string{"-1", "0", "2e9"} {
		_, err := Parse("f.yaml", []byte("name: x\nladder: ["+l+"]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n"))
		if err == nil || !strings.Contains(err.Error(), "f.yaml:2: ladder[0]: ") || !strings.Contains(err.Error(), "from 1 to 1e9") {
			t.Errorf("ladder: [%s]: %v", l, err)
		}
	}
}

// Given on the command line, an empty list, a duplicate, a zero or a
// negative is refused, naming the flag; never read as "the study's own".
func TestOverridesAreCheckedWhenGiven(t *testing.T) {
	zero, neg, seed := 0, -3, int64(-7)
	for _, c := range []struct {
		o    Override
		want string
	}{
		{Override{Targets: str("")}, "--targets '': empty"},
		{Override{Targets: str(" ")}, "--targets  : empty"},
		{Override{Targets: str("pebble,bbolt,pebble")}, "--targets pebble,bbolt,pebble: pebble is named twice"},
		{Override{Targets: str("pebble,,bbolt")}, "an empty name"},
		{Override{Concurrency: &zero}, "--concurrency 0: want 1..4096"},
		{Override{Concurrency: &neg}, "--concurrency -3: want 1..4096"},
		{Override{Seed: &seed}, "--seed -7: want a whole number from 0"},
		{Override{Ladder: str("")}, "--ladder '': empty"},
		{Override{Durability: str("")}, `--durability: "": want sync, async or default`},
		{Override{TimeLimit: str("")}, "--time-limit"},
	} {
		s, _ := Load("ledger")
		if err := s.Apply(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
	// In the file too: a target twice, concurrency 0 written out, a
	// negative seed.
	for _, c := range []struct{ src, want string }{
		{"name: x\nladder: [10]\ntargets:\n  - pebble\n  - bbolt\n  - pebble\nworkloads: [{name: ledger}]\n", "f.yaml:6: targets[2]: pebble is named twice (also targets[0])"},
		{"name: x\nladder: [10]\ntargets:\n  - redis://h:1/0\n  - {uri: \"redis://h:1/0\"}\nworkloads: [{name: ledger}]\n", "f.yaml:5: targets[1]: redis://h:1/0 is named twice"},
		{"name: x\nconcurrency: 0\n" + okBody, "f.yaml:2: concurrency: 0: want 1..4096"},
		{"name: x\nseed: -1\n" + okBody, "f.yaml:2: seed: -1: want a whole number from 0"},
	} {
		if _, err := Parse("f.yaml", []byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
	// Absent, concurrency still takes its default.
	if s, err := Parse("f.yaml", []byte("name: x\n"+okBody)); err != nil || s.Concurrency != 8 {
		t.Errorf("default concurrency: %v", err)
	}
}

const located = `name: x
ladder: [10]
targets:
  - pebble
  - name: rocksdb
    options:
      block_cache: 1
      nosuch: 2
workloads:
  - name: ledger
    params:
      stress:
        rate: 5
constraints:
  p99:
    ledger.stress: 1ms
`

// Errors found after decoding carry the file's line, or, for what the
// command line set, the flag: never a file line for a flag's value.
func TestErrorsAfterDecodingAreLocated(t *testing.T) {
	s, err := Parse("f.yaml", []byte(located))
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]string{
		"targets[1].options.nosuch":            "f.yaml:8: targets[1].options.nosuch: bad",
		"targets[1]":                           "f.yaml:5: targets[1]: bad",
		"targets[0]":                           "f.yaml:4: targets[0]: bad",
		"workloads[0].name":                    "f.yaml:10: workloads[0].name: bad",
		"workloads.ledger.params.stress.rate":  "f.yaml:13: workloads.ledger.params.stress.rate: bad",
		"workloads.ledger.params.selects":      "f.yaml:11: workloads.ledger.params.selects: bad",
		"constraints.p99.ledger.stress":        "f.yaml:16: constraints.p99.ledger.stress: bad",
		"workloads.ledger.params.stress.nosub": "f.yaml:12: ",
	} {
		if got := s.Locate(&Error{File: "f.yaml", Field: field, Msg: "bad"}).Error(); !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, want %q", field, got, want)
		}
	}
	// --targets reorders: rocksdb keeps its line; a new target is the flag's.
	if err := s.Apply(Override{Targets: str("bbolt,rocksdb"), Set: []string{"ledger.stress.rate=-5", "ledger.balance={reads: -1}"}}); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]string{
		"targets[1].options.nosuch":                 "f.yaml:8: targets[1].options.nosuch: bad",
		"targets[0]":                                "--targets bbolt,rocksdb: bad",
		"workloads.ledger.params.stress.rate":       "--set ledger.stress.rate=-5: bad",
		"workloads.ledger.params.balance.reads":     "--set ledger.balance={reads: -1}: reads: bad",
		"workloads.ledger.params.stress":            "f.yaml:12: workloads.ledger.params.stress: bad (with --set ledger.stress.rate=-5)",
		"workloads.ledger.params.selects":           "f.yaml:11: ",
		"workloads.ledger.params.stress.goroutines": "f.yaml:12: ",
	} {
		// A workload's error about a key the file has carries the file's
		// line already: the flag still wins.
		e := &Error{File: "f.yaml", Line: s.Line(field), Field: field, Msg: "bad"}
		if got := s.Locate(e).Error(); !strings.HasPrefix(got, want) {
			t.Errorf("after overrides, %s: got %q, want %q", field, got, want)
		}
	}
	// The phase a constraint bounds, removed by the command line, blames
	// the flag.
	err = s.CheckFiguresAfter(map[string]bool{"ledger.insert": true}, map[string]bool{"ledger.insert": true, "ledger.stress": true})
	if err == nil || !strings.HasPrefix(err.Error(), "--set ledger.stress.rate=-5 --set ledger.balance={reads: -1}: leaves the study without phase ledger.stress, which constraints.p99.ledger.stress needs (f.yaml:16)") {
		t.Errorf("removed phase: %v", err)
	}
	// Not in the file either: the constraint is the file's mistake.
	err = s.CheckFiguresAfter(map[string]bool{"ledger.insert": true}, map[string]bool{"ledger.insert": true})
	if err == nil || !strings.HasPrefix(err.Error(), "f.yaml:16: constraints.p99.ledger.stress: the study has no phase") {
		t.Errorf("absent phase: %v", err)
	}
}
