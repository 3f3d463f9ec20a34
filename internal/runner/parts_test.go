package runner

import (
	"context"
	"math"
	"sort"
	"sync"
	"testing"
	"time"
)

// Three processes' runs (here three Runs at once) sharing one load take
// disjoint shares whose union is every operation once: the share of
// global goroutine p*G+g, exactly as one process with 3*G goroutines
// would hand them out.
func TestPartsSplitOperationsAcrossProcesses(t *testing.T) {
	const parts, G, ops = 3, 2, 1001
	var mu sync.Mutex
	seen := map[int64]int{} // seq -> global goroutine
	counts := make([]int64, parts)
	start := time.Now().Add(50 * time.Millisecond)
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			res, err := Run(context.Background(), Config{Goroutines: G, Ops: ops, Part: p, Parts: parts, Start: start},
				func(_ context.Context, w int, seq int64) error {
					mu.Lock()
					defer mu.Unlock()
					if g, dup := seen[seq]; dup {
						t.Errorf("seq %d done by global goroutines %d and %d", seq, g, p*G+w)
					}
					seen[seq] = p*G + w
					return nil
				})
			if err != nil {
				t.Error(err)
			}
			counts[p] = res.Ops
		}(p)
	}
	wg.Wait()
	if len(seen) != ops {
		t.Fatalf("%d operations done, want %d", len(seen), ops)
	}
	for seq, g := range seen {
		if seq%(parts*G) != int64(g) {
			t.Fatalf("seq %d by global goroutine %d, want %d", seq, g, seq%(parts*G))
		}
	}
	var sum int64
	for _, c := range counts {
		sum += c
	}
	if sum != ops {
		t.Fatalf("parts counted %v operations, sum %d, want %d", counts, sum, ops)
	}
}

// An open loop split over three processes keeps the total rate: each
// runs at a third of it, on one schedule counted from the shared start.
func TestPartsKeepTheTotalRate(t *testing.T) {
	const parts, rate, ops = 3, 600.0, 600
	start := time.Now().Add(100 * time.Millisecond)
	var wg sync.WaitGroup
	res := make([]Result, parts)
	var mu sync.Mutex
	var starts []time.Duration
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			var err error
			res[p], err = Run(context.Background(), Config{Goroutines: 2, Ops: ops, Rate: rate, Part: p, Parts: parts, Start: start},
				func(_ context.Context, w int, seq int64) error {
					mu.Lock()
					starts = append(starts, time.Since(start))
					mu.Unlock()
					return nil
				})
			if err != nil {
				t.Error(err)
			}
		}(p)
	}
	wg.Wait()
	var total int64
	var elapsed time.Duration
	for p, r := range res {
		total += r.Ops
		elapsed = max(elapsed, r.Elapsed)
		// Each process offers a third of the rate over the same second.
		if got := r.Rate(); math.Abs(got-rate/parts) > 0.15*rate/parts {
			t.Errorf("part %d ran at %.0f ops/s, want about %.0f", p, got, rate/parts)
		}
		if r.Intended == nil || r.Intended.TotalCount() != r.Ops {
			t.Errorf("part %d: no latency from intended start for each operation", p)
		}
	}
	if total != ops {
		t.Fatalf("%d operations, want %d", total, ops)
	}
	if got := float64(total) / elapsed.Seconds(); math.Abs(got-rate) > 0.1*rate {
		t.Fatalf("total rate %.0f ops/s over %v, want about %.0f", got, elapsed, rate)
	}
	// The union of the three schedules is one schedule: operations spread
	// evenly over the second, not three bursts.
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	half := starts[len(starts)/2]
	if half < 400*time.Millisecond || half > 600*time.Millisecond {
		t.Fatalf("the middle operation started %v after the shared start, want about 500ms", half)
	}
}
