package results

import (
	"encoding/json"

	"storebench/internal/measure/latency"
)

// Stream is one of several concurrent loads of a step, each with its own
// operation, goroutines and rate (open loop) or closed loop; the step's
// own figures are all of its streams together.
type Stream struct {
	Name string `json:"name"`
	// Goroutines is how many load goroutines ran the stream ("workers"
	// in results of schema version 4 and before: UnmarshalJSON reads
	// them).
	Goroutines int     `json:"goroutines"`
	Rate       float64 `json:"target_rate,omitempty"`
	Ops        int64   `json:"ops"`
	// Seconds runs until the stream's last goroutine ended.
	Seconds  float64                    `json:"seconds"`
	Latency  latency.Summary            `json:"latency"`
	ByOp     map[string]latency.Summary `json:"by_op,omitempty"`
	Intended *latency.Summary           `json:"intended,omitempty"`
	Late     int64                      `json:"late,omitempty"`
	// Hist and HistIntended are encoded like Step.Hist.
	Hist         string `json:"hist,omitempty"`
	HistIntended string `json:"hist_intended,omitempty"`
	Series       []Tick `json:"series,omitempty"`
}

// UnmarshalJSON reads a stream as it is written, or as results of schema
// version 4 and before have it: "workers", the word for a worker process
// only since, is read when "goroutines" is absent.
func (s *Stream) UnmarshalJSON(b []byte) error {
	type plain Stream
	var v struct {
		plain
		// Goroutines shadows plain's (a shallower field wins), so that
		// an absent key is told from 0.
		Goroutines *int `json:"goroutines"`
		Workers    *int `json:"workers"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Stream(v.plain)
	switch {
	case v.Goroutines != nil:
		s.Goroutines = *v.Goroutines
	case v.Workers != nil:
		s.Goroutines = *v.Workers
	}
	return nil
}

// Background is a periodic job that ran beside a step's load (a
// compaction, a GC pass): how often it ran and how long each run took.
type Background struct {
	Name string `json:"name"`
	// EverySeconds is the interval between runs (0: back to back).
	EverySeconds float64 `json:"every_s,omitempty"`
	// Runs completed; Latency and Hist hold one value per run.
	Runs        int64           `json:"runs"`
	BusySeconds float64         `json:"busy_seconds"`
	Latency     latency.Summary `json:"latency"`
	Hist        string          `json:"hist,omitempty"`
}
