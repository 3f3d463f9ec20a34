package studies_test

import (
	"encoding/json"
	"fmt"
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
		draws := map[string]bool{}
		for _, st := range p.Steps {
			if st.Phase == "prepare" {
				continue
			}
			var params struct {
				Requests []int64 `json:"requests"`
				RandType string  `json:"rand_type"`
			}
			if err := json.Unmarshal(st.Params, &params); err != nil {
				t.Fatal(err)
			}
			switch st.Workload {
			case "http":
				abRuns[fmt.Sprint(params.Requests)] = true
			case "oltp":
				draws[params.RandType] = true
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
		// The seed ran ab -n 500 and sysbench's default (special) draws;
		// the default scale runs more requests and draws uniformly.
		if scale == "seed" && (len(abRuns) != 1 || !abRuns["[500]"] || len(draws) != 1 || !draws["special"]) {
			t.Errorf("--scale seed: ab runs of %v requests, ids drawn %v; want [500] and special", abRuns, draws)
		}
		if scale == "" && (abRuns["[500]"] || len(draws) != 1 || !draws["uniform"]) {
			t.Errorf("default scale: ab runs of %v requests, ids drawn %v; want more than 500 and uniform", abRuns, draws)
		}
	}
}

// oltp and http under --scale seed run seed 003's method: sysbench's
// default special draws of ids, ab -n 500 at -c 100 and 500 with a new
// connection per request (keep-alive beside it as a phase of its own);
// the default scale keeps storebench's uniform draws and longer ab runs.
func TestSeedScaleRunsSeed003sMethod(t *testing.T) {
	for _, c := range []struct{ study, scale, want string }{
		{"oltp", "seed", "oltp rand_type special"},
		{"oltp", "", "oltp rand_type uniform"},
		{"http", "seed", "http [500] close,keepalive"},
		{"http", "", "http [5000] close,keepalive"},
	} {
		s, err := study.Load(c.study)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Scale: c.scale}); err != nil {
			t.Fatal(err)
		}
		p, err := coordinator.Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		var phases []string
		for _, st := range p.Steps {
			var params struct {
				Requests []int64 `json:"requests"`
				RandType string  `json:"rand_type"`
			}
			if err := json.Unmarshal(st.Params, &params); err != nil {
				t.Fatal(err)
			}
			if st.Workload == "oltp" {
				got["oltp rand_type "+params.RandType] = true
			} else if st.Workload == "http" && st.Concurrency == 100 {
				phases = append(phases, st.Phase)
				got[fmt.Sprint("http ", params.Requests)] = true
			}
		}
		if st := strings.Join(phases, ","); st != "" {
			for k := range got {
				delete(got, k)
				got[k+" "+st] = true
			}
		}
		if len(got) != 1 || !got[c.want] {
			t.Errorf("%s --scale %q: %v, want %s", c.study, c.scale, got, c.want)
		}
	}
}
