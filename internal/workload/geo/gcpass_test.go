package geo

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/target/targettest"
	"storebench/internal/workload"
	"storebench/internal/workload/worktest"
)

// slowGC is a store whose GC passes during the load each take longer
// than the interval between passes, as point-by-point passes over a
// filled database do: every pass falls behind.
type slowGC struct {
	Store
	took time.Duration
}

func (s slowGC) Close() error { return nil }

func (s slowGC) DeleteBefore(ctx context.Context, before int64) (int64, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(s.took):
	}
	return s.Store.DeleteBefore(ctx, before)
}

// Each GC pass says how it went (facts gc_pass_outcomes and
// gc_pass_deleted, one entry per pass of gc_passes), and the ingest
// counts the passes that fell behind (the next pass due before they
// ended) and those that deleted nothing: what "Against the seed" sets
// beside the seed's "GC pass takes about 2 minutes".
func TestGCPassesSayWhetherTheyKeptUp(t *testing.T) {
	for _, c := range []struct {
		name     string
		delete   string        // gc.delete: point counts each pass's deletes, range does not
		took     time.Duration // 0: the store as it is
		behindOK func(behind, passes float64) bool
	}{
		// Passes of 300 ms every 100 ms: each but a cut one is behind.
		{"slow", "range", 300 * time.Millisecond, func(b, p float64) bool { return b >= 1 && b >= p-1 }},
		{"point", "point", 0, func(b, p float64) bool { return b <= p }},
	} {
		t.Run(c.name, func(t *testing.T) {
			study := strings.Replace(smallStudy(5), "gc: {retention: 6h, every: 300ms}", "gc: {retention: 6h, every: 100ms, delete: "+c.delete+"}", 1)
			study = strings.Replace(study, "duration: 3s", "duration: 2s", 1)
			steps := worktest.Plan(t, Workload{}, study)
			h := targettest.Open(t, "pebble", kv.Async)
			var target io.Closer = h
			if c.took > 0 {
				target = slowGC{Store: KVLayout{S: h.(kv.Store)}, took: c.took}
			}
			res, err := (Workload{}).Execute(context.Background(), &workload.Env{Target: target}, steps[0])
			if err != nil {
				t.Fatal(err)
			}
			m := res.Metrics
			intervals := strings.Fields(res.Facts["gc_passes"])
			outcomes := strings.Fields(res.Facts["gc_pass_outcomes"])
			deleted := strings.Fields(res.Facts["gc_pass_deleted"])
			if len(outcomes) != len(intervals) || len(deleted) != len(intervals) {
				t.Fatalf("%d passes, %d outcomes, %d deletes: %v", len(intervals), len(outcomes), len(deleted), res.Facts)
			}
			n := map[string]float64{}
			for _, o := range outcomes {
				n[o]++
			}
			if n[PassKeptUp]+n[PassBehind]+n[PassCut] != m["gc_passes"] || n[PassBehind] != m["gc_passes_behind"] || n[PassCut] != m["gc_passes_cut"] || n[PassFinal] > 1 {
				t.Errorf("outcomes %v against metrics %v", n, m)
			}
			// Passes that deleted nothing are counted where every pass's
			// deletes are (point by point), and not claimed elsewhere.
			empty, counted := 0.0, true
			for i, d := range deleted {
				counted = counted && d != "-"
				if d == "0" && outcomes[i] != PassCut && outcomes[i] != PassFinal {
					empty++
				}
			}
			if e, ok := m["gc_passes_empty"]; ok != counted || e != empty {
				t.Errorf("gc_passes_empty %v (recorded %v), the passes' deletes say %v (counted %v): %v", e, ok, empty, counted, deleted)
			}
			if counted != (c.delete == "point") {
				t.Errorf("gc.delete %s: deletes counted %v (%v)", c.delete, counted, deleted)
			}
			if !c.behindOK(m["gc_passes_behind"], m["gc_passes"]) {
				t.Errorf("%s store: %v of %v passes behind (%v)", c.name, m["gc_passes_behind"], m["gc_passes"], res.Facts["gc_pass_outcomes"])
			}
			t.Logf("%s: %v", c.name, res.Facts["gc_pass_outcomes"])
		})
	}
}
