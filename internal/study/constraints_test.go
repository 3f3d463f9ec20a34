package study

import (
	"errors"
	"strings"
	"testing"
)

const base = "name: x\nladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n"

func TestConstraintsParse(t *testing.T) {
	s, err := Parse("f.yaml", []byte(base+"constraints:\n  ram: 8GiB\n  disk: 1TiB\n  durability: sync\n  p99:\n    ledger.stress: 2ms\n    ycsb.a.READ: 500us\n  throughput:\n    ledger.stress: 1500/s\n  rank_by: ledger.stress:p99\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Constraints
	if c.RAM != 8<<30 || c.Disk != 1<<40 || c.Durability != "sync" || c.RankBy != "ledger.stress:p99" {
		t.Fatalf("constraints %+v", c)
	}
	// The file's order is kept: the report names the first one broken.
	if len(c.P99) != 2 || c.P99[0].Figure != "ledger.stress" || c.P99[0].Value != 2e6 || c.P99[1].Figure != "ycsb.a.READ" || c.P99[1].Value != 5e5 || c.P99[1].Line != 11 {
		t.Fatalf("p99 %+v", c.P99)
	}
	if w, p, op := c.P99[1].Parts(); w != "ycsb" || p != "a" || op != "READ" {
		t.Fatalf("parts %s %s %s", w, p, op)
	}
	if len(c.Throughput) != 1 || c.Throughput[0].Value != 1500 {
		t.Fatalf("throughput %+v", c.Throughput)
	}
	if !c.Any() {
		t.Fatal("Any() false with constraints")
	}
	if err := s.CheckFigures(map[string]bool{"ledger.stress": true, "ycsb.a": true}); err != nil {
		t.Fatal(err)
	}
	err = s.CheckFigures(map[string]bool{"ledger.stress": true, "ledger.insert": true})
	if err == nil || !strings.Contains(err.Error(), "f.yaml:11: constraints.p99.ycsb.a.READ: the study has no phase ycsb.a (it has ledger.insert, ledger.stress)") {
		t.Fatalf("CheckFigures: %v", err)
	}
}

func TestConstraintErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"constraints:\n  ram: lots\n", "f.yaml:6: constraints.ram: \"lots\" is not a size"},
		{"constraints:\n  durability: maybe\n", "constraints.durability: \"maybe\": want sync"},
		{"constraints:\n  p99:\n    ledger: 2ms\n", "f.yaml:7: constraints.p99.ledger: want workload.phase"},
		{"constraints:\n  p99:\n    ledger.stress: soon\n", "f.yaml:7: constraints.p99.ledger.stress: \"soon\" is not a duration"},
		{"constraints:\n  p99: [1ms]\n", "f.yaml:6: constraints.p99: want a mapping"},
		{"constraints:\n  throughput:\n    ledger.stress: -3\n", "constraints.throughput.ledger.stress: \"-3\": want operations per second"},
		{"constraints:\n  rank_by: ledger.stress\n", "constraints.rank_by: \"ledger.stress\": want workload.phase:metric"},
		{"constraints:\n  ramm: 1GiB\n", "f.yaml:6: constraints.ramm: unknown field"},
	}
	for _, c := range cases {
		_, err := Parse("f.yaml", []byte(base+c.yaml))
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}
