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

// A seed's method sets its engines, their durability and what an item
// costs: the scale sets them, and the command line still wins.
func TestScaleSetsTargetsDurabilityAndEstimate(t *testing.T) {
	src := strings.Replace(scaled, "    limits.target_time: 0\n", `    limits.target_time: 0
    targets: [leveldb, redis]
    durability: default
    estimate.item_time: 1.3ms
    estimate.item_disk: 2KiB
    estimate.source: the seed
`, 1)
	s, err := Parse("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Override{Scale: "big"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 2 || s.Targets[0].Name != "leveldb" || s.Targets[1].Name != "redis" || s.Durability != "default" {
		t.Fatalf("targets %v, durability %q", s.Targets, s.Durability)
	}
	if time.Duration(s.Estimate.ItemTime) != 1300*time.Microsecond || s.Estimate.ItemDisk != 2048 || s.Estimate.Source != "the seed" {
		t.Fatalf("estimate %+v", s.Estimate)
	}
	targets, async := "pebble", "async"
	s, _ = Parse("s.yaml", []byte(src))
	if err := s.Apply(Override{Scale: "big", Targets: &targets, Durability: &async}); err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 1 || s.Targets[0].Name != "pebble" || s.Durability != "async" {
		t.Fatalf("the command line did not win: %v %q", s.Targets, s.Durability)
	}
	for _, c := range []struct{ edit, want string }{
		{"    durability: fast\n", `scales.big.durability: "fast": want sync, async or default`},
		{"    targets: pebble\n", "scales.big.targets: want a list of target names"},
		{"    targets: [a, a]\n", "a is named twice"},
	} {
		bad := strings.Replace(scaled, "    limits.target_time: 0\n", c.edit, 1)
		if _, err := Parse("s.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.edit, err, c.want)
		}
	}
	// durability: default is a study's class, as sync and async are.
	d := strings.Replace(scaled, "ladder: [100]\n", "ladder: [100]\ndurability: default\n", 1)
	if _, err := Parse("s.yaml", []byte(d)); err != nil {
		t.Fatalf("durability default refused: %v", err)
	}
}
