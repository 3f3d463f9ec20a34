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
	const used, lastN, n = int64(200) << 30, int64(1e8), int64(1e9) // 200 GiB at 1e8
	est := estimateDisk(used, lastN, n, 0)
	if want := 2000 * float64(1<<30); math.Abs(est-want) > want*1e-9 {
		t.Fatalf("estimate %g, want %g", est, want)
	}
	// Far beyond int64: 1e9 items after a step that took 1e13 bytes per
	// 1e3 items.
	if est := estimateDisk(1e13, 1e3, 1e9, 0); est != 1e19 {
		t.Fatalf("estimate %g, want 1e19", est)
	}
	lim := int64(50) << 30
	why := checkFits(est, lim, nil, 0, n)
	if !strings.Contains(why, "disk limit 50.0GiB: N=1e9 would need ~2.0TiB") {
		t.Fatalf("checkFits: %q", why)
	}
}

// A first step is estimated from the workload's bytes per item: a 1e9
// ladder of 1 KiB transactions does not fit in 100 GiB free and is not
// started; a small one fits.
func TestDiskEstimateRefusesAStepThatCannotFit(t *testing.T) {
	sp := &fsSpace{Free: 100 << 30, Mount: "/data"}
	est := estimateDisk(0, 1, 1e9, 1141)
	why := checkFits(est, 0, sp, 0, 1e9)
	if !strings.Contains(why, "not enough disk: N=1e9 would need ~1.0TiB, 100.0GiB free on /data") {
		t.Fatalf("checkFits: %q", why)
	}
	if why := checkFits(estimateDisk(0, 1, 1e6, 1141), 0, sp, 0, 1e6); why != "" {
		t.Fatalf("1e6 refused: %s", why)
	}
	// The data a fresh step replaces counts as free.
	if why := checkFits(estimateDisk(60<<30, 1e8, 2e8, 0), 0, sp, 60<<30, 2e8); why != "" {
		t.Fatalf("refused although the old data frees enough: %s", why)
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
