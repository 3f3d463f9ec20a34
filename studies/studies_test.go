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
