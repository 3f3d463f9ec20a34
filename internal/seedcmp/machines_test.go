package seedcmp

import (
	"math"
	"testing"

	"storebench/internal/results"
)

// Issue 35 item 4: seed 001's DRAM finding (the i3en.3xlarge much faster
// than the i3en.xlarge, its DRAM caching almost all the database) is
// judged from a run of the two machine shapes that keep the instances'
// ratio of page cache to database (docs/runs/tokens-seed-machines-20261128,
// `storebench run tokens --scale seed`): each seed figure stands beside
// ours on the shape named for its machine, and the ratio is recomputed
// from the two targets' steps.
func TestDRAMFindingFromMachineShapes(t *testing.T) {
	const name = "tokens-seed-machines-20261128"
	run, res := mappingRun(t, name)
	secs := func(target, phase string) float64 {
		for _, tr := range run.Targets {
			if tr.Name != target {
				continue
			}
			for _, st := range tr.Steps {
				if st.Phase == phase && st.Error == "" {
					return st.Seconds
				}
			}
		}
		t.Fatalf("%s: no %s step of %s", name, phase, target)
		return 0
	}
	for id, phase := range map[string]string{"dram_3xlarge_faster": "checkacc", "dram_3xlarge_faster_runtx": "runtx"} {
		fr := mappingFinding(t, res, id)
		for _, r := range fr.Rows {
			want := "moeingads@" + r.Figure.Hardware + "-scaled"
			if r.Target != want || !r.Have || r.OurN != 1e6 {
				t.Errorf("%s: the seed's %s figure stands against %q (have %v at %g, %s), want %s at 1e6", id, r.Figure.Hardware, r.Target, r.Have, r.OurN, r.Missing, want)
			}
		}
		v := fr.Verdict
		if len(v.Ratio) != 1 {
			t.Fatalf("%s: verdict %s (%s), %d ratios", id, v.Outcome, v.Why, len(v.Ratio))
		}
		ours := secs("moeingads@i3en.xlarge-scaled", phase) / secs("moeingads@i3en.3xlarge-scaled", phase)
		if math.Abs(v.Ratio[0].Ours-ours) > 1e-9 || v.Ratio[0].SeedN != 1e8 || v.Ratio[0].OurN != 1e6 {
			t.Errorf("%s: ratio %+v, want ours %.3f (xlarge over 3xlarge) at 1e6 against the seed's 1e8", id, v.Ratio[0], ours)
		}
		if want := map[bool]string{true: Holds, false: Differs}[ours >= 2]; v.Outcome != want {
			t.Errorf("%s: %s with xlarge/3xlarge = %.2f, want %s", id, v.Outcome, ours, want)
		}
		t.Logf("%s: seed %.2f×, ours %.2f× (%s)", id, v.Ratio[0].Seed, v.Ratio[0].Ours, v.Outcome)
	}

	// The checker fails on the fault it exists for: with the two shapes'
	// results swapped (the small cache's run named for the big machine),
	// the same figures no longer hold.
	swapped := *run
	swapped.Targets = nil
	for _, tr := range run.Targets {
		c := *tr
		switch tr.Name {
		case "moeingads@i3en.xlarge-scaled":
			c.Name, c.Machine = "moeingads@i3en.3xlarge-scaled", "name=i3en.3xlarge-scaled,cache=0.73"
		case "moeingads@i3en.3xlarge-scaled":
			c.Name, c.Machine = "moeingads@i3en.xlarge-scaled", "name=i3en.xlarge-scaled,cache=0.23"
		}
		swapped.Targets = append(swapped.Targets, &c)
	}
	if v := mappingFinding(t, Against(res.Seed, &swapped), "dram_3xlarge_faster").Verdict; v.Outcome != Differs {
		t.Errorf("with the machines swapped the verdict is %s, want differs", v.Outcome)
	}
	// A run with no machine shapes has nothing to judge it on.
	plain := *run
	plain.Targets = []*results.Target{{Name: "moeingads", Steps: run.Targets[0].Steps}}
	if v := mappingFinding(t, Against(res.Seed, &plain), "dram_3xlarge_faster").Verdict; v.Outcome != NotComparable {
		t.Errorf("on no machine shapes the verdict is %s, want not comparable", v.Outcome)
	}
}
