package coordinator

import (
	"storebench/internal/cost"
	"storebench/internal/results"
	"storebench/internal/study"
)

// checkSizing refuses a study whose sizing cannot be priced (a bad
// figure, a catalog that is not built in) before anything runs.
func checkSizing(s *study.Study) error {
	if s.Sizing == nil {
		return nil
	}
	if _, err := cost.FromStudy(s.Sizing); err != nil {
		return &study.Error{File: s.File, Field: "sizing", Msg: err.Error()}
	}
	if _, err := cost.StudyCatalog(s.Sizing); err != nil {
		return &study.Error{File: s.File, Field: "sizing.catalog", Msg: err.Error()}
	}
	return nil
}

// project prices what the run measured for the study's sizing (issue
// 36): results.json's projection and the report's "What it costs".
func project(run *results.Run, s *study.Study) {
	if s.Sizing == nil {
		return
	}
	sz, err := cost.FromStudy(s.Sizing)
	if err != nil {
		return
	}
	cat, err := cost.StudyCatalog(s.Sizing)
	if err != nil {
		return
	}
	run.Projection = cost.Project(run, sz, cat)
}
