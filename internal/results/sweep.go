package results

// RateSearch is one search for the highest sustainable open-loop rate of
// a phase on a target: its objective, every trial (the curve) and the
// rate it found. Each trial is also a step of the target, named by the
// same labels.
type RateSearch struct {
	Workload string `json:"workload"`
	Phase    string `json:"phase"`
	N        int64  `json:"n"`
	// Labels are the searched step's, without rate and trial.
	Labels Labels `json:"labels"`
	// MinAchieved is the fraction of the offered rate a trial must
	// achieve; SLONs bounds its p99 latency from the intended start.
	MinAchieved float64 `json:"min_achieved"`
	SLONs       int64   `json:"slo_ns"`
	// Sustainable is the highest offered rate that held (0: none did).
	Sustainable float64 `json:"sustainable_rate"`
	// Trials in the order they ran.
	Trials []RateTrial `json:"trials"`
	// FailedAbove is the lowest offered rate that failed above the
	// sustainable one (0: none did); Converged is true when that bracket
	// narrowed to the search's precision (or nothing held down to 1/s, or
	// the max was reached), false when the trials ran out first.
	FailedAbove float64 `json:"failed_above,omitempty"`
	Converged   bool    `json:"converged"`
	// Done is false when the search was cut short (a failed or stopped
	// trial, a limit): Sustainable is then the best found so far.
	Done bool `json:"done"`
}

// RateTrial is one trial of a rate search: the raw figures it was judged
// by, and the verdict.
type RateTrial struct {
	// Step names the trial's step (its labels' name).
	Step     string  `json:"step"`
	Offered  float64 `json:"offered_rate"`
	Achieved float64 `json:"achieved_rate"`
	// P99IntendedNs is the p99 latency from the intended start.
	P99IntendedNs int64 `json:"p99_intended_ns"`
	// Late is the trial's late operations, LatePerTick the same per tick.
	Late        int64   `json:"late"`
	LatePerTick []int64 `json:"late_per_tick,omitempty"`
	Sustained   bool    `json:"sustained"`
	Why         string  `json:"why,omitempty"`
}
