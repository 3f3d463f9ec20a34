package seedcmp

import (
	"io/fs"
	"strings"
	"testing"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/study"
	_ "storebench/internal/workload/all"
	"storebench/studies"
)

// Every built-in study that names a seed names one transcribed, and
// runs a workload at least one of the seed's findings reads ours from;
// every finding's figure of ours is a phase and metric its workload
// records (a typo there would leave "not run at this size" everywhere).
func TestEveryStudysSeedMapsToItsWorkloads(t *testing.T) {
	names, _ := fs.Glob(studies.FS, "*.yaml")
	named := map[string]bool{}
	for _, f := range names {
		s, err := study.Load(strings.TrimSuffix(f, ".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if s.SeedStudy == "" {
			continue
		}
		if got := SeedOf(&results.Run{StudySource: s.Source}); got != s.SeedStudy {
			t.Errorf("%s: SeedOf reads %q from the source, the study says %q", s.Name, got, s.SeedStudy)
		}
		seed, err := Load(s.SeedStudy)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		named[seed.ID] = true
		runs := map[string]bool{}
		for _, w := range s.Workloads {
			runs[w.Name] = true
		}
		n := 0
		for _, f := range seed.Findings {
			if f.Ours != nil && runs[f.Ours.Workload] {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s names seed %s, none of whose findings reads a workload it runs", s.Name, seed.ID)
		}
	}
	for _, id := range IDs() {
		if !named[id] {
			t.Errorf("seed %s: no built-in study names it", id)
		}
		seed, err := Load(id)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, f := range seed.Findings {
			if _, ok := section.Lookup(f.WorkloadOf()); !ok {
				t.Errorf("seed %s, %s: workload %q registers nothing", id, f.ID, f.WorkloadOf())
			}
			o := f.Ours
			if o == nil {
				continue
			}
			if _, ok := section.Lookup(o.Workload); !ok {
				t.Errorf("seed %s, %s: workload %q registers nothing", id, f.ID, o.Workload)
				continue
			}
			refs := []string{o.Value, o.Size}
			if pair, ok := strings.CutPrefix(o.Value, "metric_ratio:"); ok {
				a, b, _ := strings.Cut(pair, "/")
				if ma, okA := section.MetricOf(o.Workload, o.Phase, a); !okA {
					t.Errorf("seed %s, %s: %s.%s records no metric %q", id, f.ID, o.Workload, o.Phase, a)
				} else if mb, okB := section.MetricOf(o.Workload, o.Phase, b); !okB || mb.Unit != ma.Unit {
					t.Errorf("seed %s, %s: %s.%s's metric %q is not in %q's unit", id, f.ID, o.Workload, o.Phase, b, a)
				}
			}
			for _, ref := range refs {
				if name, ok := strings.CutPrefix(ref, "metric:"); ok {
					m, ok := section.MetricOf(o.Workload, o.Phase, name)
					if !ok {
						t.Errorf("seed %s, %s: %s.%s records no metric %q", id, f.ID, o.Workload, o.Phase, name)
					} else if ref == o.Value && m.Unit != o.Unit {
						t.Errorf("seed %s, %s: %s.%s's %s is in %q, the transcription says %q", id, f.ID, o.Workload, o.Phase, name, m.Unit, o.Unit)
					}
				}
			}
		}
	}
}
