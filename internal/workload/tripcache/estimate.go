package tripcache

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
)

// Estimate is the stream's cost on one target: every transport's phase
// at the study's rate, then the rate search's trials, each at most as
// long as a trial at the search's start rate (trials above it are
// shorter when the stream is counted in rounds; a start rate that fails
// sends the search lower, and longer). Disk: the trips the longest stream
// creates, key and record bytes each (the engine's overhead comes on top).
func (TripCache) Estimate(s workload.Planning, e study.Entry, raw json.RawMessage) (workload.Estimate, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return workload.Estimate{}, err
	}
	sp, err := sweep.Decode(s, e)
	if err != nil {
		return workload.Estimate{}, err
	}
	return p.estimate(sp), nil
}

func (p Params) estimate(sp *sweep.Spec) workload.Estimate {
	grace := time.Duration(p.Grace)
	stream := func(rate float64, trial time.Duration) time.Duration {
		if p.Rounds > 0 {
			return p.streamTime(rate)
		}
		return trial
	}
	phases := len(p.transports())
	phase := stream(p.Rate, time.Duration(p.Duration)) + grace
	total := time.Duration(phases) * phase
	how := fmt.Sprintf("%d phase(s) of %s at %s ticks/s", phases, round(phase), study.FormatCount(int64(p.Rate)))
	longest := p.ticks(p.Rate, time.Duration(p.Duration))
	if sp != nil && sp.Rate != nil {
		r := sp.Rate
		trials := r.MaxTrials
		if trials <= 0 {
			trials = 12 // sweep.RateSearch's default
		}
		trial := stream(r.Start, time.Duration(r.Duration)) + grace
		total += time.Duration(phases*trials) * trial
		how += fmt.Sprintf(", then at most %d rate-search trials of at most %s each (every trial at or above the start rate, %s ticks/s)",
			phases*trials, round(trial), study.FormatCount(int64(r.Start)))
		longest = max(longest, p.ticks(r.Start, time.Duration(r.Duration)))
	}
	n := float64(p.Sensors) * float64(p.Multiplier)
	trips := min(longest, n) + longest/float64(p.MinTicks)
	perTrip := float64(len("trip:") + len(strconv.FormatFloat(n*(1+longest/n), 'f', 0, 64)) + recordSize)
	how += fmt.Sprintf("; disk: up to %.3g trips of %.0f bytes (key and record) in the longest stream, %.3g ticks", trips, perTrip, longest)
	return workload.Estimate{Time: total, DiskBytes: trips * perTrip, How: how}
}

// ticks is the length of a stream at rate lasting trial (or Rounds).
func (p Params) ticks(rate float64, trial time.Duration) float64 {
	if p.Rounds > 0 {
		return p.Rounds * float64(p.Sensors) * float64(p.Multiplier)
	}
	return rate * trial.Seconds()
}

func round(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
