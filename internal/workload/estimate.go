package workload

import (
	"encoding/json"
	"time"

	"storebench/internal/study"
)

// Estimator is implemented by a workload that can tell, before anything
// runs, how long its steps take on one target and how much disk their
// data needs at the least: a seed's own sizes, which a small machine may
// not hold, are then refused up front with the estimate (unless the user
// accepts it: run --accept-estimate) instead of failing hours in.
type Estimator interface {
	// Estimate is the cost of entry e (its params decoded by
	// DecodeParams) on one target.
	Estimate(s Planning, e study.Entry, params json.RawMessage) (Estimate, error)
}

// Estimate is one workload's cost on one target.
type Estimate struct {
	// Time is how long its steps take at most, under the condition How
	// states.
	Time time.Duration
	// DiskBytes is the least disk its largest step's data takes (float,
	// so that a seed's sizes cannot overflow).
	DiskBytes float64
	// How says how both were reached, in one or two sentences.
	How string
}
