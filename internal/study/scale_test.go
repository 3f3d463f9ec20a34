package study

import (
	"strings"
	"testing"
	"time"
)

const scaled = `name: s
ladder: [100]
limits: {target_time: 10m}
targets: [pebble]
workloads:
  - name: w
    params: {a: 1, b: {c: 2}}
scales:
  big:
    ladder: [1e6, 1e7]
    w.b.c: 50
    limits.target_time: 0
`

func TestScaleOverridesLikeSet(t *testing.T) {
	s, err := Parse("s.yaml", []byte(scaled))
	if err != nil {
		t.Fatal(err)
	}
	// The command line still wins over the scale.
	if err := s.Apply(Override{Scale: "big", Set: []string{"w.a=3"}}); err != nil {
		t.Fatal(err)
	}
	if len(s.Ladder) != 2 || s.Ladder[1] != 1e7 || s.Limits.TargetTime != 0 {
		t.Fatalf("scale not applied: ladder %v, target_time %v", s.Ladder, time.Duration(s.Limits.TargetTime))
	}
	var p struct {
		A int `yaml:"a"`
		B struct {
			C int `yaml:"c"`
		} `yaml:"b"`
	}
	if err := s.Workloads[0].Params.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.A != 3 || p.B.C != 50 {
		t.Fatalf("params %+v", p)
	}
	// The scale itself is untouched by what followed it.
	s2, _ := Parse("s.yaml", []byte(scaled))
	if err := s2.Apply(Override{Scale: "big"}); err != nil {
		t.Fatal(err)
	}
}

func TestScaleErrors(t *testing.T) {
	s, _ := Parse("s.yaml", []byte(scaled))
	err := s.Apply(Override{Scale: "seed"})
	if err == nil || !strings.Contains(err.Error(), "s.yaml") || !strings.Contains(err.Error(), `no scale "seed" (it has: big)`) {
		t.Fatalf("got %v", err)
	}
	for _, c := range []struct{ edit, want string }{
		{"    nope.x: 1\n", `s.yaml:12: scales.big.nope.x: the study has no workload "nope"`},
		{"    ladder: [5, 1]\n", "ladder[1]"},
		{"    limits.time: soon\n", "s.yaml:12: scales.big.limits.time"},
		{"    seed: 3\n", "want workload.param"},
	} {
		src := strings.Replace(scaled, "    limits.target_time: 0\n", c.edit, 1)
		if _, err := Parse("s.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.edit, err, c.want)
		}
	}
}

func TestBuiltinScalesApply(t *testing.T) {
	for _, name := range Builtin() {
		s, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range s.ScaleNames() {
			s, _ := Load(name)
			if err := s.ApplyScale(sc); err != nil {
				t.Errorf("%s --scale %s: %v", name, sc, err)
			}
		}
	}
}

// A scale names its targets as --targets does: a target the file has
// keeps its options, and --targets on the command line still wins.
func TestScaleTargets(t *testing.T) {
	src := strings.Replace(scaled, "targets: [pebble]", "targets: [{name: pebble, options: {x: \"1\"}}]", 1) +
		"    targets: [rocksdb, pebble]\n"
	s, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Override{Scale: "big"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 2 || s.Targets[0].Name != "rocksdb" || s.Targets[1].Name != "pebble" || s.Targets[1].Options["x"] != "1" {
		t.Fatalf("targets %+v", s.Targets)
	}
	s, _ = Parse("s.yaml", []byte(src))
	only := "lmdb"
	if err := s.Apply(Override{Scale: "big", Targets: &only}); err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 1 || s.Targets[0].Name != "lmdb" {
		t.Fatalf("--targets did not win: %+v", s.Targets)
	}
	for _, bad := range []string{"    targets: rocksdb\n", "    targets: [rocksdb, rocksdb]\n", "    targets: [{name: x}]\n"} {
		src := strings.Replace(scaled, "    limits.target_time: 0\n", bad, 1)
		if _, err := Parse("s.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "s.yaml:12: scales.big.targets") {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

// A seed's method sets its engines' durability (default: each as it
// ships): the scale sets it, --durability still wins, and a class that is
// none of sync, async or default is refused at the scale's line.
func TestScaleSetsDurability(t *testing.T) {
	src := strings.Replace(scaled, "    limits.target_time: 0\n", "    limits.target_time: 0\n    durability: default\n", 1)
	s, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Override{Scale: "big"}); err != nil {
		t.Fatal(err)
	}
	if s.Durability != "default" {
		t.Fatalf("durability %q", s.Durability)
	}
	async := "async"
	s, _ = Parse("s.yaml", []byte(src))
	if err := s.Apply(Override{Scale: "big", Durability: &async}); err != nil {
		t.Fatal(err)
	}
	if s.Durability != "async" {
		t.Fatalf("--durability did not win: %q", s.Durability)
	}
	bad := strings.Replace(scaled, "    limits.target_time: 0\n", "    durability: fast\n", 1)
	if _, err := Parse("s.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), `scales.big.durability: "fast": want sync, async or default`) {
		t.Errorf("durability fast: got %v", err)
	}
	// durability: default is a study's class, as sync and async are.
	d := strings.Replace(scaled, "ladder: [100]\n", "ladder: [100]\ndurability: default\n", 1)
	if _, err := Parse("s.yaml", []byte(d)); err != nil {
		t.Fatalf("durability default refused: %v", err)
	}
}

// A scale's machines (tokens --scale seed: the seed's two instances,
// scaled) run unless --machine replaces them; --machine none alone runs
// on this machine as it is.
func TestScaleMachinesAndMachineNone(t *testing.T) {
	s, err := Load("tokens")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Override{Scale: "seed"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Machines) != 2 {
		t.Fatalf("tokens --scale seed: machines %v, want the seed's two", s.Machines)
	}
	s, _ = Load("tokens")
	if err := s.Apply(Override{Scale: "seed", Machines: []string{NoMachine}}); err != nil || len(s.Machines) != 0 {
		t.Fatalf("--machine none: machines %v, %v", s.Machines, err)
	}
	s, _ = Load("tokens")
	if err := s.Apply(Override{Machines: []string{NoMachine, "cpus=1"}}); err == nil || !strings.Contains(err.Error(), "goes alone") {
		t.Fatalf("--machine none with a shape: %v", err)
	}
}
