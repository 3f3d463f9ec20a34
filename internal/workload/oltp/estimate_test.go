package oltp

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload/worktest"
)

// web-oltp at --scale seed, per target: one prepare of 3 tables of 1e6
// rows at the slowest kept rate, then read_only and write_only each at 8
// threads (the entry's) and 64 (its sweep), 120 s each.
func TestEstimateOfWebOLTPSeedScale(t *testing.T) {
	e := worktest.Estimate(t, OLTP{}, "web-oltp", study.Override{Scale: "seed"})
	rate := float64(prepareRate)
	prep := time.Duration(3e6 / rate * float64(time.Second))
	if want := prep + 4*120*time.Second; e.Time != want {
		t.Errorf("time %s, want %s: prepare %s and 2 phases x 2 levels x 120s (%s)", e.Time, want, prep, e.How)
	}
	if e.Time < 8*time.Minute {
		t.Errorf("time %s: under the 8 minutes of its runs alone", e.Time)
	}
	if want := 3e6 * float64(rowBytes); e.DiskBytes != want || rowBytes < 180 {
		t.Errorf("disk %g, want %g (%d-byte rows)", e.DiskBytes, want, rowBytes)
	}
	for _, w := range []string{"1 prepare(s) of 3e6 rows", "4 run(s) (read_only, write_only at 8, 64 threads) of 2m0s each"} {
		if !strings.Contains(e.How, w) {
			t.Errorf("How %q lacks %q", e.How, w)
		}
	}
	// A second sweep level adds a run of each phase, and with a ladder of
	// two sizes everything runs twice over (the prepare at each size).
	e2 := worktest.Estimate(t, OLTP{}, "web-oltp", study.Override{Scale: "seed", Set: []string{"oltp.sweep.concurrency=16,64"}})
	if d := e2.Time - e.Time; d != 2*120*time.Second {
		t.Errorf("a third level added %s, want 4m0s (%s)", d, e2.How)
	}
	ladder := "1e5,1e6"
	e3 := worktest.Estimate(t, OLTP{}, "web-oltp", study.Override{Scale: "seed", Ladder: &ladder})
	if want := time.Duration(3.3e6/rate*float64(time.Second)) + 8*120*time.Second; (e3.Time - want).Abs() > time.Millisecond {
		t.Errorf("two sizes: time %s, want %s (%s)", e3.Time, want, e3.How)
	}
	if e3.DiskBytes != e.DiskBytes {
		t.Errorf("two sizes: disk %g, want the largest's %g", e3.DiskBytes, e.DiskBytes)
	}
}
