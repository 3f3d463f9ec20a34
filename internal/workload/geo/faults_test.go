package geo

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/fault"
	"storebench/internal/study"
)

// A crash whose every acknowledged point the GC collected before the
// read-back (a retention shorter than the ingest's simulated span) is
// not measured: the step fails, saying so, rather than report that the
// crash lost nothing.
func TestBlindCrashFailsTheIngest(t *testing.T) {
	r := &run{sim: Sim{Users: 40}}
	r.p.Batch = 100
	r.p.GC.Retention = study.Duration(24 * time.Hour)
	// 2,815 batches of 100 points from 40 users: minutes 0..7037, of
	// which a 24 h retention holds the last 1,440 or so.
	P := int64(281_500)
	h := Held{Points: P, Cutoff: r.cutoffAt((P - 1) / 40)}
	crash := fault.Action{At: study.Duration(1182 * time.Millisecond), Action: fault.PowerLoss}
	// At 1.18 s of a 3 s ingest (1,100 batches: minute 2,749) every
	// point it could take is older than the cutoff.
	if why := r.blindCrash([]crashFrontier{{a: crash, batches: 1100}}, h); !strings.Contains(why, "the power-loss at 1.182s struck when the ingest had reached simulated minute 2749") || !strings.Contains(why, "a longer gc.retention") {
		t.Errorf("a crash at minute 2749, the GC keeping minutes from %d: %q", FirstMinute(h), why)
	}
	// At 2.9 s (2,750 batches: minute 6,874) the points it may take are
	// held and read back.
	if why := r.blindCrash([]crashFrontier{{a: crash, batches: 2750}}, h); why != "" {
		t.Errorf("a crash at minute 6874: %q", why)
	}
	// A retention that holds the whole ingest sees every crash; one
	// that never struck inside the ingest is the coordinator's to fail.
	r.p.GC.Retention = study.Duration(8760 * time.Hour)
	h.Cutoff = r.cutoffAt((P - 1) / 40)
	if why := r.blindCrash([]crashFrontier{{a: crash, batches: 1100}, {a: crash, batches: -1}}, h); why != "" {
		t.Errorf("under a year's retention: %q", why)
	}
}
