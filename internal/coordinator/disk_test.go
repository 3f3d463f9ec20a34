package coordinator

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The disk guard scales the last footprint to the next size: at 1e9
// items of a large footprint the product overflows int64, which made a
// huge step look small (or negative) and start.
func TestDiskEstimateDoesNotOverflow(t *testing.T) {
	// 20 GiB at 1e7, 200 GiB at 1e8: int64(200 GiB) * 1e9 overflows.
	const n = int64(1e9)
	measured := []footprint{{1e7, 20 << 30}, {1e8, 200 << 30}}
	_, est := estimateDisk(measured, n, 0)
	if want := 2000 * float64(1<<30); math.Abs(est-want) > want*1e-9 {
		t.Fatalf("estimate %g, want %g", est, want)
	}
	// Far beyond int64: 1e9 items of 1e10 bytes each (measured at 1e2
	// and 1e3), and the workload's own bytes per item.
	if _, est := estimateDisk([]footprint{{1e2, 1e12}, {1e3, 1e13}}, 1e9, 0); math.Abs(est-1e19) > 1e10 {
		t.Fatalf("estimate %g, want 1e19", est)
	}
	if least, est := estimateDisk(nil, 1e9, 1e12); est != 1e21 || least != 1e21 {
		t.Fatalf("estimate %g, want 1e21", est)
	}
	lim := int64(50) << 30
	why, _ := checkFits(0, est, lim, nil, 0, n)
	if !strings.Contains(why, "disk limit 50.0GiB: N=1e9 would need ~2.0TiB") {
		t.Fatalf("checkFits: %q", why)
	}
}

// A first step is estimated from the workload's bytes per item: a 1e9
// ladder of 1 KiB transactions cannot fit in 100 GiB free and is not
// started; a small one fits. A scaled estimate only warns: it may count
// an engine's fixed overhead as per-item bytes.
func TestDiskEstimateRefusesAStepThatCannotFit(t *testing.T) {
	sp := &fsSpace{Free: 100 << 30, Mount: "/data"}
	least, scaled := estimateDisk(nil, 1e9, 1141)
	why, _ := checkFits(least, scaled, 0, sp, 0, 1e9)
	if why != "not enough disk: N=1e9 needs at least 1.0TiB, 100.0GiB free on /data (not started)" {
		t.Fatalf("checkFits: %q", why)
	}
	least, scaled = estimateDisk(nil, 1e6, 1141)
	if why, warn := checkFits(least, scaled, 0, sp, 0, 1e6); why != "" || warn != "" {
		t.Fatalf("1e6 refused: %s %s", why, warn)
	}
	// The data a fresh step replaces counts as free.
	least, scaled = estimateDisk([]footprint{{5e7, 30 << 30}, {1e8, 60 << 30}}, 2e8, 0)
	if why, warn := checkFits(least, scaled, 0, sp, 60<<30, 2e8); why != "" || warn != "" {
		t.Fatalf("refused although the old data frees enough: %s %s", why, warn)
	}
	// Scaled beyond the free space, but the data itself fits: a warning.
	least, scaled = estimateDisk([]footprint{{10, 4 << 20}, {1000, 40 << 20}}, 1e5, 1141)
	why, warn := checkFits(least, scaled, 0, &fsSpace{Free: 400 << 20, Mount: "/small"}, 40<<20, 1e5)
	if why != "" || !strings.Contains(warn, "N=1e5 may need ~") {
		t.Fatalf("refuse %q, warn %q", why, warn)
	}
}

// The watcher stops a step that makes no progress on a full filesystem,
// within a few seconds, with the free space and the mount in its cause;
// it leaves alone a step that progresses, and one on a disk with room.
func TestWatchDiskCancelsAStalledStepOnAFullDisk(t *testing.T) {
	diskStallAfter, diskPoll = 300*time.Millisecond, 20*time.Millisecond
	defer func() { diskStallAfter, diskPoll = 3*time.Second, 250*time.Millisecond }()

	full := func() (fsSpace, error) { return fsSpace{Free: 4096, Mount: "/small"}, nil }
	ctx, cancel := context.WithCancelCause(context.Background())
	var progress atomic.Int64
	t0 := time.Now()
	stop := watchDisk(ctx, cancel, full, &progress)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled step on a full disk was not cancelled")
	}
	stop()
	var ns *NoSpaceError
	if c := context.Cause(ctx); !errors.As(c, &ns) || c.Error() != "no space left on device (4096 bytes free on /small)" {
		t.Fatalf("cause %v", c)
	}
	if d := time.Since(t0); d < diskStallAfter {
		t.Fatalf("cancelled after %v, before the stall window", d)
	}

	// Progressing on a full disk: not cancelled.
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	stop2 := watchDisk(ctx2, cancel2, full, &progress)
	for i := 0; i < 50; i++ {
		progress.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
	stop2()
	if ctx2.Err() != nil {
		t.Fatalf("a progressing step was cancelled: %v", context.Cause(ctx2))
	}

	// Stalled with room: not cancelled.
	roomy := func() (fsSpace, error) { return fsSpace{Free: 10 << 30, Mount: "/"}, nil }
	ctx3, cancel3 := context.WithCancelCause(context.Background())
	stop3 := watchDisk(ctx3, cancel3, roomy, &progress)
	time.Sleep(3 * diskStallAfter)
	stop3()
	if ctx3.Err() != nil {
		t.Fatalf("a step with room was cancelled: %v", context.Cause(ctx3))
	}
}
