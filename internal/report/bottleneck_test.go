package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/sysinfo"
)

// The balance phase of SQLite at 1e5 printed "disk writes: 47.9 GiB/s":
// the bytes written while building the view over the duration of the
// reads. Rates use the bytes and the seconds of one interval: the timed
// part where it was measured, else the whole step as sampled.
func TestBottleneckRatesUseTheIntervalOfTheirBytes(t *testing.T) {
	run := &results.Run{Host: sysinfo.Host{LogicalCPUs: 2, MemTotalBytes: 24 << 30}}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const built = 480 << 20 // written while building the view
	whole := results.Resources{
		Before: procstat.Snapshot{At: t0}, After: procstat.Snapshot{At: t0.Add(3300 * time.Millisecond)},
		Seconds: 3.3, CPUPercent: 60, Device: "vda", DeviceWriteBytes: built,
	}
	reads := &results.Step{Workload: "ledger", Phase: "balance", N: 1e5, Seconds: 0.3, Ops: 20000, Resources: whole}
	reads.Resources.Timed = &results.Window{Seconds: 0.31, CPUPercent: 40, Device: "vda", DeviceWriteBytes: 64 << 10,
		Before: procstat.Snapshot{At: t0.Add(3 * time.Second)}, After: procstat.Snapshot{At: t0.Add(3310 * time.Millisecond)}}
	bn := Classify(run, reads)
	if bn.Resource != "latency" || bn.Seconds != 0.31 || bn.WriteBytes != 64<<10 || math.Abs(bn.WriteRate-float64(64<<10)/0.31) > 1e-6 {
		t.Errorf("timed window: %+v, want 64 KiB over 0.31 s, waiting", bn)
	}
	if strings.Contains(bn.Text, "GiB/s") {
		t.Errorf("timed window: %q", bn.Text)
	}

	// A results.json of an older version has no timed window and no
	// seconds: the rate is over the snapshots' own interval, 3.3 s.
	old := &results.Step{Workload: "ledger", Phase: "balance", N: 1e5, Seconds: 0.3, Ops: 20000, Resources: whole}
	old.Resources.Seconds = 0
	bn = Classify(run, old)
	if want := float64(built) / 3.3; bn.Resource != "disk-write" || math.Abs(bn.WriteRate-want) > 1 || bn.Seconds != 3.3 {
		t.Errorf("old step: %+v, want %.0f B/s over 3.3 s", bn, want)
	}
	if !strings.Contains(bn.Text, "disk writes: 145.5 MiB/s") {
		t.Errorf("old step text %q", bn.Text)
	}

	// A managed server's figures are over the whole step: its bytes over
	// its own interval, never over the timed seconds.
	srv := whole
	cli := results.Resources{Timed: &results.Window{Seconds: 0.31, CPUPercent: 30}}
	viaServer := &results.Step{Workload: "ledger", Phase: "balance", N: 1e5, Seconds: 0.3, Ops: 20000, Resources: cli, ServerResources: &srv}
	bn = Classify(run, viaServer)
	if math.Abs(bn.WriteRate-float64(built)/3.3) > 1 || !strings.Contains(bn.Text, "client 30% CPU") {
		t.Errorf("server step: %+v", bn)
	}
}
