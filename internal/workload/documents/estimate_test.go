package documents

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload/worktest"
)

// web-oltp at --scale seed, per target: one load of 3 collections of 1e6
// documents at the slowest kept rate, then insert and iterate_one each at
// 8 threads (the entry's) and 32 (its sweep), 120 s each.
func TestEstimateOfWebDocumentsSeedScale(t *testing.T) {
	e := worktest.Estimate(t, Documents{}, "web-oltp", study.Override{Scale: "seed"})
	load := 3e6 / loadRate * time.Second
	if want := load + 4*120*time.Second; e.Time != want {
		t.Errorf("time %s, want %s: the load %s and 2 modes x 2 levels x 120s (%s)", e.Time, want, load, e.How)
	}
	if e.Time < 8*time.Minute {
		t.Errorf("time %s: under the 8 minutes of its modes alone", e.Time)
	}
	// The inserts may stop at the duration before adding any: the least
	// is the load's 3e6 documents of 48 bytes (no text).
	if want := 3e6 * 48.0; e.DiskBytes != want {
		t.Errorf("disk %g, want %g (%s)", e.DiskBytes, want, e.How)
	}
	for _, w := range []string{"1 prepare(s) loading 3e6 documents", "4 mode run(s) (insert, iterate_one at 8, 32 threads), 4 of 2m0s each"} {
		if !strings.Contains(e.How, w) {
			t.Errorf("How %q lacks %q", e.How, w)
		}
	}
	// Bound by its operations alone (1e6 each), with a text: each insert
	// adds its operations to the database, and every mode takes them at
	// its slowest kept rate.
	e = worktest.Estimate(t, Documents{}, "web-oltp", study.Override{Scale: "seed", Set: []string{"documents.duration=0s", "documents.text_size=100"}})
	if want := load + 2*(1e6/insertRate)*time.Second + time.Duration(2e6/float64(findRate)*1e9); (e.Time - want).Abs() > time.Millisecond {
		t.Errorf("operations: time %s, want %s (%s)", e.Time, want, e.How)
	}
	if want := (3e6 + 2e6) * 148.0; e.DiskBytes != want {
		t.Errorf("operations: disk %g, want %g (%s)", e.DiskBytes, want, e.How)
	}
}
