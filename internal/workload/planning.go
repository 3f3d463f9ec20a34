package workload

// Planning is what a workload plans from (DecodeParams, Plan and an
// Estimator's Estimate): the few settings of the study its steps take,
// and no more of the study. The coordinator builds it once from the study
// and the command line (sweep.PlanningOf); a workload entry with its own
// concurrency plans from a copy that carries it.
type Planning struct {
	// File names the study in errors: "studies/ledger.yaml", a path, or
	// a name of storebench's own ("list").
	File string
	// Seed is the study's seed, which every step carries.
	Seed int64
	// Concurrency is the study's, or the workload entry's own when it
	// sets one.
	Concurrency int
	// Ladder is the study's data sizes, in the study's order (the last
	// is the largest).
	Ladder []int64
	// SetBy, when not nil, says whether the command line (--set) gave
	// field, a study path such as "workloads.tripcache.params.kafka_uri",
	// and has the last word on it (study.Study.SetOnCommandLine).
	SetBy func(field string) bool
}

// Largest is the top of the ladder.
func (p Planning) Largest() int64 { return p.Ladder[len(p.Ladder)-1] }

// SetOnCommandLine reports whether the command line (--set) gave field
// and has the last word on it: a value that only the user may give (an
// address the study's targets and hosts do not name) is checked with it.
func (p Planning) SetOnCommandLine(field string) bool {
	return p.SetBy != nil && p.SetBy(field)
}
