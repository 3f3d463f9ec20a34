package cost

import (
	"math"
	"strings"
	"testing"

	"storebench/internal/results"
)

// testCatalog is two made-up machines, so that the answer can be worked
// out by hand below.
func testCatalog() Catalog {
	return Catalog{Name: "test", Currency: "USD", Machines: []Machine{
		{Name: "m4", VCPUs: 4, RAMBytes: 16 << 30, DiskBytes: 1e12, DiskIOPS: 10000, Hourly: 1},
		{Name: "big", VCPUs: 16, RAMBytes: 128 << 30, DiskBytes: 4e12, Hourly: 5},
	}}
}

// TestSizeKnownAnswer works the plan out by hand from the synthetic
// model (throughput 1000·v^0.9; 1 MB + 500 B per item on disk, 8 MB +
// 100 B resident; no memory shape, so every byte cached; 0.75 I/Os per
// op): per machine type the shards each resource needs, the cheapest
// count and bill, the deciding resource, and the month growth needs one
// more machine.
func TestSizeKnownAnswer(t *testing.T) {
	md := Fit(synthetic(1000, 0.9, 1))[0]
	sz := results.Sizing{Load: 20000, DataBytes: 2.5e11, Replicas: 2, GrowthPerMonth: 0.1}
	p := Size(md, testCatalog(), sz)
	if p.Reason != "" || p.Best == nil {
		t.Fatalf("plan %+v: want one", p)
	}
	if p.Items != 1e9 {
		t.Errorf("items %g: 2.5e11 bytes of 250-byte items is 1e9", p.Items)
	}
	shards := func(vcpus, ram, disk float64) (cpu, mem, dsk int) {
		cpu = int(math.Ceil(20000 / (0.7 * 1000 * math.Pow(vcpus, 0.9))))
		mem = int(math.Ceil(1e9 * 600 / (ram - (1 << 30) - 9e6)))
		dsk = int(math.Ceil(1e9 * 500 / (0.8*disk - 1e6)))
		return
	}
	c4, m4, d4 := shards(4, 16<<30, 1e12)
	c16, m16, d16 := shards(16, 128<<30, 4e12)
	if c4 != 9 || m4 != 38 || d4 != 1 || c16 != 3 || m16 != 5 || d16 != 1 {
		t.Fatalf("hand figures changed: %d %d %d %d %d %d", c4, m4, d4, c16, m16, d16)
	}
	// m4: 38 shards (memory) × 2 replicas × $730; big: 5 × 2 × $3650.
	if p.Best.Machine.Name != "big" || p.Best.Shards != m16 || p.Best.Count != 2*m16 || p.Best.Deciding != "memory" {
		t.Fatalf("best %s × %d (%d shards, %s decides): want big × 10 (5 shards, memory)", p.Best.Machine.Name, p.Best.Count, p.Best.Shards, p.Best.Deciding)
	}
	if want := float64(2*m16) * 5 * HoursPerMonth; !near(p.Best.Monthly, want, 1e-9) {
		t.Errorf("monthly %.2f, want %.2f", p.Best.Monthly, want)
	}
	if want := p.Best.Monthly / (20000 * 3600 * HoursPerMonth) * 1e6; !near(p.PerMillion, want, 1e-9) || !near(p.OpsPerUnit, 1e6/want, 1e-9) {
		t.Errorf("per million %.4g, ops per dollar %.4g", p.PerMillion, p.OpsPerUnit)
	}
	// Memory shards 4.40 × 1.1^m: 5 until month 2 (5.32 → 6).
	if p.NextMonth != 2 {
		t.Errorf("next machine in month %d, want 2", p.NextMonth)
	}
	if len(p.Best.Extent) == 0 || !strings.Contains(strings.Join(p.Best.Extent, "; "), "2 vCPUs measured, 16 projected") {
		t.Errorf("extent %q: want the vCPUs projected said", p.Best.Extent)
	}
}

// TestSizeNoMachineCarries: a p99 no machine meets and a machine too
// small for the engine are said, with the machines they stopped, and no
// plan is made up.
func TestSizeNoMachineCarries(t *testing.T) {
	md := Fit(synthetic(1000, 0.9, 1))[0]
	p := Size(md, testCatalog(), results.Sizing{Load: 1000, Items: 1e6, P99: 1e-4})
	if p.Best != nil || !strings.Contains(p.Reason, "no machine of catalog test carries it") || !strings.Contains(p.Reason, "p99") || !strings.Contains(p.Reason, "m4, big") {
		t.Fatalf("plan %+v: want no machine, p99 the reason for m4 and big", p)
	}
	tiny := Catalog{Name: "tiny", Currency: "USD", Machines: []Machine{{Name: "t", VCPUs: 1, RAMBytes: 8 << 20, DiskBytes: 1e9, Hourly: 0.01}}}
	p = Size(md, tiny, results.Sizing{Load: 1000, Items: 1e6})
	if p.Best != nil || !strings.Contains(p.Reason, "memory: the engine's own") {
		t.Fatalf("plan %+v: want the engine's own memory to exceed the machine's", p)
	}
	p = Size(md, testCatalog(), results.Sizing{Load: 1e9, Items: 1e6})
	if p.Best != nil || !strings.Contains(p.Reason, "more than the 1000 allowed") {
		t.Fatalf("plan %+v: want too many machines said", p)
	}
	if p = Size(md, testCatalog(), results.Sizing{Load: 1000, DataBytes: 1e9, Mix: map[string]float64{"nope": 1}}); !strings.Contains(p.Reason, `no step "nope"`) {
		t.Fatalf("reason %q: want the unknown step named", p.Reason)
	}
}
