package studies_test

import (
	"io/fs"
	"strings"
	"testing"

	"storebench/internal/coordinator"
	_ "storebench/internal/server/all"
	"storebench/internal/study"
	_ "storebench/internal/target/all"
	_ "storebench/internal/target/servers"
	_ "storebench/internal/workload/all"
	"storebench/studies"
)

// Every built-in study loads and plans as `storebench run NAME` would, on
// the targets it names: a broken built-in study is a broken command.
func TestEveryBuiltInStudyPrepares(t *testing.T) {
	names, err := fs.Glob(studies.FS, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no built-in studies: %v", err)
	}
	for _, f := range names {
		name := strings.TrimSuffix(f, ".yaml")
		t.Run(name, func(t *testing.T) {
			s, err := study.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := coordinator.Prepare(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) == 0 || len(p.Targets) == 0 {
				t.Fatalf("%d steps on %d targets", len(p.Steps), len(p.Targets))
			}
		})
	}
}

// web-oltp runs each workload at the seed's levels and no other: HTTP at
// 100 and 500 concurrent requests, sysbench at 8 and 64 threads,
// mongodb-performance-test at 8 and 32; --scale seed gives the seed's
// sizes.
func TestWebOLTPRunsEachWorkloadAtTheSeedsLevels(t *testing.T) {
	for _, scale := range []string{"", "seed"} {
		s, err := study.Load("web-oltp")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Scale: scale}); err != nil {
			t.Fatal(err)
		}
		p, err := coordinator.Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		levels := map[string]map[int]bool{}
		abRuns := map[string]bool{}
		for _, st := range p.Steps {
			if st.Phase == "prepare" {
				continue
			}
			if st.Workload == "http" {
				abRuns[st.Labels["requests"]] = true
			}
			if levels[st.Workload] == nil {
				levels[st.Workload] = map[int]bool{}
			}
			levels[st.Workload][st.Concurrency] = true
		}
		want := map[string][]int{"http": {100, 500}, "oltp": {8, 64}, "documents": {8, 32}}
		for w, ls := range want {
			if len(levels[w]) != len(ls) || !levels[w][ls[0]] || !levels[w][ls[1]] {
				t.Errorf("scale %q: %s at %v, want %v", scale, w, levels[w], ls)
			}
		}
		if scale == "seed" && s.Largest() != 1_000_000 {
			t.Errorf("--scale seed: ladder %v", s.Ladder)
		}
		// The seed ran ab -n 500; its scale adds a longer run beside it.
		if scale == "seed" && (len(abRuns) != 2 || !abRuns["500"]) {
			t.Errorf("--scale seed: ab runs of %v requests, want 500 and a longer one", abRuns)
		}
	}
}
