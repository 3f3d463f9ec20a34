package shapes

import (
	"testing"

	"storebench/internal/results"
)

func kneeStep(ops int64, secs, budget, data float64) *results.Step {
	return &results.Step{Workload: "tokens", Phase: "checkacc", N: 1e6, Ops: ops, Seconds: secs,
		Metrics: map[string]float64{"machine_cache_budget_bytes": budget, "machine_data_bytes_at_start": data}}
}

// TestKneeFromTheShapes recomputes the knee from each shape's step: the
// smallest memory-to-data ratio from which every larger one is within 20%
// of the least limited shape's throughput; a dip below that, then a
// recovery, does not make a knee below the dip.
func TestKneeFromTheShapes(t *testing.T) {
	mk := func(machine string, ops int64, ratio float64) *results.Target {
		return &results.Target{Name: "moeingads@" + machine, Machine: machine, Steps: []*results.Step{kneeStep(ops, 10, ratio*1e9, 1e9)}}
	}
	ts := []*results.Target{
		mk("a", 1000, 0.05), // 100 ops/s
		mk("b", 8500, 0.1),  // 850: within 20% of 1000
		mk("c", 7000, 0.25), // 700: not within
		mk("d", 9000, 0.5),  // 900
		mk("e", 10000, 1),   // 1000, the reference
	}
	ks := Knees(ts)
	if len(ks) != 1 {
		t.Fatalf("%d knees, want 1", len(ks))
	}
	k := ks[0]
	if !k.Found || k.Ratio != 0.5 || k.Target != "moeingads" || len(k.Points) != 5 {
		t.Fatalf("knee %+v: want 0.5 (0.25 fell 30%% below the reference, so 0.1's 850 does not count)", k)
	}
	for i, p := range k.Points {
		if want := []float64{100, 850, 700, 900, 1000}[i]; p.OpsPerS != want {
			t.Errorf("point %d: %.0f ops/s, want %.0f", i, p.OpsPerS, want)
		}
	}
	// Every smaller shape fell: no knee below the reference.
	ks = Knees([]*results.Target{mk("a", 1000, 0.23), mk("b", 8000*10/8, 0.73)})
	if len(ks) != 1 || ks[0].Found {
		t.Fatalf("%+v: want no knee below 0.73", ks)
	}
}

// TestKneeOnlyAcrossMemory: shapes that differ in CPUs as well as memory
// are not set on one knee (their throughput differs for the CPUs too).
func TestKneeOnlyAcrossMemory(t *testing.T) {
	step := func(ops int64, limit, data float64) *results.Step {
		s := &results.Step{Workload: "ycsb", Phase: "c", N: 1e5, Ops: ops, Seconds: 10,
			Metrics: map[string]float64{"machine_memory_limit_bytes": limit}}
		s.Resources.DiskApparent = int64(data)
		return s
	}
	ts := []*results.Target{
		{Name: "rocksdb@a", Machine: "cpus=0.5,memory=256MiB", Steps: []*results.Step{step(1000, 256<<20, 512<<20)}},
		{Name: "rocksdb@b", Machine: "cpus=1,memory=1GiB", Steps: []*results.Step{step(3000, 1<<30, 512<<20)}},
	}
	if ks := Knees(ts); len(ks) != 0 {
		t.Fatalf("a knee across shapes of different CPUs: %+v", ks)
	}
	ts = append(ts, &results.Target{Name: "rocksdb@c", Machine: "cpus=1,memory=256MiB", Steps: []*results.Step{step(2500, 256<<20, 512<<20)}})
	ks := Knees(ts)
	if len(ks) != 1 || ks[0].Others != "cpus=1" || len(ks[0].Points) != 2 || ks[0].Points[0].Ratio != 0.5 || ks[0].Points[1].Ratio != 2 {
		t.Fatalf("knees %+v: want one at cpus=1 over memory/data 0.5 and 2", ks)
	}
	if !ks[0].Found || ks[0].Ratio != 0.5 {
		t.Errorf("knee %+v: 2500 is within 20%% of 3000, want the knee at or below 0.5", ks[0])
	}
}

// TestScalingEfficiency recomputes throughput per CPU against the fewest
// CPUs' among shapes that differ only in CPUs.
func TestScalingEfficiency(t *testing.T) {
	mk := func(machine string, ops int64) *results.Target {
		return &results.Target{Name: "pebble@" + machine, Machine: machine,
			Steps: []*results.Step{{Workload: "ycsb", Phase: "c", N: 1e5, Ops: ops, Seconds: 10}}}
	}
	sc := Scalings([]*results.Target{mk("cpus=0.5,memory=1GiB", 5000), mk("cpus=1,memory=1GiB", 9000), mk("cpus=2,memory=1GiB", 14000), mk("cpus=1,memory=256MiB", 100)})
	if len(sc) != 1 || sc[0].Others != "memory=1GiB" || len(sc[0].Points) != 3 {
		t.Fatalf("%+v: want one scaling over 0.5, 1 and 2 CPUs at memory=1GiB", sc)
	}
	for i, want := range []float64{1, 0.9, 0.7} {
		if got := sc[0].Points[i].Efficiency; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("point %d: efficiency %.3f, want %.2f", i, got, want)
		}
	}
}

// TestCacheHitRatio recomputes 1 − read_bytes / rchar from the step's
// counters, and says nothing where nothing was read through read().
func TestCacheHitRatio(t *testing.T) {
	s := &results.Step{}
	s.Resources.Timed = &results.Window{}
	s.Resources.Timed.Before.IOAvailable, s.Resources.Timed.After.IOAvailable = true, true
	s.Resources.Timed.Before.ReadChars, s.Resources.Timed.After.ReadChars = 1000, 11000
	s.Resources.Timed.Before.ReadBytes, s.Resources.Timed.After.ReadBytes = 4096, 6096
	if r, ok := CacheHitRatio(s); !ok || r < 0.8-1e-9 || r > 0.8+1e-9 {
		t.Errorf("hit ratio %v %v, want 0.8 (2000 of 10000 bytes from the disk)", r, ok)
	}
	s.Resources.Timed.After.ReadBytes = 20000
	if _, ok := CacheHitRatio(s); ok {
		t.Error("a ratio where more came from the disk than through read()")
	}
	s.Resources.Timed.After.ReadChars = 1000
	if _, ok := CacheHitRatio(s); ok {
		t.Error("a ratio with nothing read")
	}
}
