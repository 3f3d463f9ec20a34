package cost

import (
	"math"
	"strings"
	"testing"

	"storebench/internal/results"
)

// synthetic is a run of one target on three CPU-limited shapes whose
// throughput is k·v^b and p99 p·v^-0.5, at two ladder sizes whose data
// takes 1 MB + 500 B per item on disk and 8 MB + 100 B per item resident.
func synthetic(k, b float64, at2 float64) *results.Run {
	run := &results.Run{Ladder: []int64{1e4, 1e5}}
	run.Host.LogicalCPUs = 2
	for _, v := range []float64{0.5, 1, 2} {
		machine := "cpus=" + trim(v)
		t := &results.Target{Name: "eng@" + machine, Title: "Eng on " + machine, Machine: machine}
		for _, n := range run.Ladder {
			ops := k * math.Pow(v, b)
			if v == 2 {
				ops *= at2
			}
			s := &results.Step{Workload: "w", Phase: "read", N: n, Seconds: 10, Ops: int64(ops * 10)}
			s.Labels = results.StepLabels("w", "read", n)
			s.Latency.P99 = int64(2e6 * math.Pow(v, -0.5))
			s.Resources.DiskAllocated = int64(1e6 + 500*float64(n))
			s.Resources.After.RSSBytes = int64(8e6 + 100*float64(n))
			s.Resources.Timed = &results.Window{Seconds: 10, CPUPercent: 100 * v}
			s.Metrics = map[string]float64{"item_bytes": 250, "machine_disk_reads": 0.5 * float64(s.Ops), "machine_disk_writes": 0.25 * float64(s.Ops)}
			t.Steps = append(t.Steps, s)
		}
		run.Targets = append(run.Targets, t)
	}
	return run
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// TestFitRecoversAKnownModel: from exact synthetic measures the fit gives
// back the throughput's and the p99's power laws, the disk and memory per
// item with their base, the I/Os per operation and the item's size, and
// the held-out shape (2 vCPUs, predicted from 0.5 and 1) within 1%.
func TestFitRecoversAKnownModel(t *testing.T) {
	mds := Fit(synthetic(1000, 0.9, 1))
	if len(mds) != 1 || mds[0].Target != "eng" || mds[0].Title != "Eng" {
		t.Fatalf("models %+v: want one, of eng", mds)
	}
	sm := mds[0].Steps["w/read"]
	if sm == nil || !sm.Scaled {
		t.Fatalf("step model %+v: want w/read fitted over the shapes", sm)
	}
	if !near(sm.Throughput.K, 1000, 0.01) || !near(sm.Throughput.B, 0.9, 0.01) {
		t.Errorf("throughput %.4g·v^%.3f, want 1000·v^0.9", sm.Throughput.K, sm.Throughput.B)
	}
	if !near(sm.P99.K, 2e-3, 0.01) || !near(sm.P99.B, -0.5, 0.01) {
		t.Errorf("p99 %.4g·v^%.3f, want 2e-3·v^-0.5", sm.P99.K, sm.P99.B)
	}
	if !near(sm.Disk.A, 1e6, 0.01) || !near(sm.Disk.B, 500, 0.01) || !near(sm.RSS.A, 8e6, 0.01) || !near(sm.RSS.B, 100, 0.01) {
		t.Errorf("disk %+v, rss %+v: want 1e6 + 500·n and 8e6 + 100·n", sm.Disk, sm.RSS)
	}
	if !near(sm.IOPerOp, 0.75, 0.01) || sm.ItemBytes != 250 || sm.MaxN != 1e5 || sm.MaxVCPUs != 2 {
		t.Errorf("io/op %.3g item %g maxN %d maxV %g: want 0.75, 250, 1e5, 2", sm.IOPerOp, sm.ItemBytes, sm.MaxN, sm.MaxVCPUs)
	}
	h := sm.HeldOut
	if h == nil || h.VCPUs != 2 || h.Fitted != 2 || math.Abs(h.OpsError()) > 0.01 || math.Abs(h.P99Error()) > 0.01 {
		t.Fatalf("held out %+v: want 2 vCPUs predicted from 2 shapes within 1%%", h)
	}
}

// TestHeldOutCatchesAModelThatMisses: when the shape held out ran at half
// what the others' fit predicts, the check says so and the plan is warned.
func TestHeldOutCatchesAModelThatMisses(t *testing.T) {
	md := Fit(synthetic(1000, 1, 0.5))[0]
	h := md.Steps["w/read"].HeldOut
	if h == nil || !near(h.OpsError(), 1, 0.01) {
		t.Fatalf("held out %+v: predicted 2000 ops/s, measured 1000: want an error of +100%%", h)
	}
	p := Size(md, testCatalog(), results.Sizing{Load: 1000, Items: 1e6})
	if p.HeldOutError < 0.99 || !strings.Contains(p.Warn, "missed the mix's throughput on a measured shape") {
		t.Errorf("plan warning %q (error %.2f): want the miss said", p.Warn, p.HeldOutError)
	}
}

// TestFitOneShapeIsLinearInCPU: one shape measured, the model is the CPU
// per operation, linear in vCPUs, and says it was assumed.
func TestFitOneShapeIsLinearInCPU(t *testing.T) {
	run := synthetic(1000, 1, 1)
	run.Targets = run.Targets[1:2] // cpus=1 alone
	sm := Fit(run)[0].Steps["w/read"]
	if sm.Scaled || sm.HeldOut != nil || !near(sm.CPUPerOp, 1e-3, 0.01) || !near(sm.Throughput.At(4), 4000, 0.01) {
		t.Fatalf("%+v: want 1 ms of CPU per op, 4000 ops/s at 4 vCPUs, no held-out check", sm)
	}
	if !strings.Contains(sm.Describe(), "linear in vCPUs assumed") {
		t.Errorf("describe %q: want the assumption said", sm.Describe())
	}
}

// TestHeldOutP99CountsWhereBounded: a held-out shape whose p99 the model
// misses marks the cost rough only where the sizing bounds the p99 (the
// cost rests on the p99 only then); its error is shown either way.
func TestHeldOutP99CountsWhereBounded(t *testing.T) {
	run := synthetic(1000, 1, 1)
	for _, s := range run.Targets[2].Steps { // cpus=2
		s.Latency.P99 *= 10
	}
	md := Fit(run)[0]
	if h := md.Steps["w/read"].HeldOut; h == nil || !near(h.P99Error(), -0.9, 0.01) || math.Abs(h.OpsError()) > 0.01 {
		t.Fatalf("held out %+v: want the p99 predicted at a tenth of the measured one", h)
	}
	if p := Size(md, testCatalog(), results.Sizing{Load: 1000, Items: 1e6}); p.Warn != "" || p.HeldOutError > 0.01 {
		t.Errorf("no p99 bound: warning %q (error %.2f), want none", p.Warn, p.HeldOutError)
	}
	if p := Size(md, testCatalog(), results.Sizing{Load: 1000, Items: 1e6, P99: 1}); !strings.Contains(p.Warn, "throughput or a p99") || !near(p.HeldOutError, 0.9, 0.01) {
		t.Errorf("p99 bounded: warning %q (error %.2f), want the p99 miss said", p.Warn, p.HeldOutError)
	}
}

// TestNoSuperlinearProjection: a fit whose exponent is above 1 is used
// within the vCPUs measured and projected linearly past them.
func TestNoSuperlinearProjection(t *testing.T) {
	sm := Fit(synthetic(1000, 1.2, 1))[0].Steps["w/read"]
	if !near(sm.Throughput.B, 1.2, 0.01) || !near(sm.ThroughputAt(1), 1000, 0.01) {
		t.Fatalf("fit %+v: want 1000·v^1.2", sm.Throughput)
	}
	if want := 1000 * math.Pow(2, 1.2) * 4; !near(sm.ThroughputAt(8), want, 0.01) {
		t.Errorf("at 8 vCPUs %.0f, want %.0f (the fit at 2, linear from there)", sm.ThroughputAt(8), want)
	}
	if !strings.Contains(sm.Describe(), "linear past them") {
		t.Errorf("describe %q: want the cap said", sm.Describe())
	}
}
