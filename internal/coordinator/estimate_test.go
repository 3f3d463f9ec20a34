package coordinator

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/study"
)

// durability default runs each target in the class of its engine's own
// default, and refuses, before anything starts, a target that states none.
func TestDurabilityDefaultIsEachEnginesOwn(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	s.Durability = "default"
	s.Targets = []study.Target{{Name: "redis"}, {Name: "pebble"}}
	_, err = Prepare(s)
	if err == nil || !strings.Contains(err.Error(), "default: pebble does not state what its engine's own default is") {
		t.Fatalf("Prepare: %v", err)
	}
	s.Targets = []study.Target{{Name: "redis"}}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := durabilityOf(s, p.Targets[0]); d != kv.Async || p.Targets[0].DefaultNote == "" {
		t.Fatalf("redis under default: %q (%q)", d, p.Targets[0].DefaultNote)
	}
	// Under sync or async every target runs the study's class.
	s.Durability = "sync"
	if d := durabilityOf(s, p.Targets[0]); d != kv.Sync {
		t.Fatalf("redis under sync: %q", d)
	}
}

// The seed's ladder (1e8 transactions) does not fit: its estimate says
// so from the study's own cost of an item; --ladder cut to 1e5 fits.
func TestEstimateOfTheSeedsLadder(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(study.Override{Scale: "seed"}); err != nil {
		t.Fatal(err)
	}
	s.Targets = []study.Target{{Name: "redis"}} // one registered here, as the seed's are in the binary
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	e := EstimateRun(s, p, t.TempDir(), false)
	// 10+100+...+1e8 transactions at the seed's 1.3 ms: about 1.7 days.
	// The largest database: 1e8, the sample chains (5 of each length to
	// 1e6) and the view of 1e7 addresses.
	if e.Items != 111_111_110 || e.Time < 40*time.Hour || e.Disk != (100_000_000+5*1_111_110+10_000_000)*2048 {
		t.Fatalf("estimate %+v", e)
	}
	if e.Over == "" || !strings.Contains(e.Over, "more than a day") {
		t.Fatalf("the seed's ladder fits? over %q", e.Over)
	}
	if txt := e.String(s); !strings.Contains(txt, "1.3ms") || !strings.Contains(txt, "seed 000") {
		t.Fatalf("estimate says %q", txt)
	}
	ladder := "10,1e3,1e5"
	if err := s.Apply(study.Override{Ladder: &ladder}); err != nil {
		t.Fatal(err)
	}
	if p, err = Prepare(s); err != nil {
		t.Fatal(err)
	}
	if e := EstimateRun(s, p, t.TempDir(), false); e.Over != "" || e.Items != 101_010 {
		t.Fatalf("cut ladder: %+v", e)
	}
	// A managed server sized before it starts (Aerospike's namespace
	// file) is sized for the largest database with what the chain and
	// balance steps add: 1e5, 5 sample chains of each length to 1e5 (the
	// lengths cut to the ladder), and a view of 1e5 addresses.
	if got, want := recordsOf(s, p.Steps), int64(100_000+5*111_110+100_000); got != want {
		t.Fatalf("records %d, want %d", got, want)
	}
}
