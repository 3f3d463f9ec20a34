package results

import "storebench/internal/measure/latency"

// Stream is one of several concurrent loads of a step, each with its own
// operation, goroutines and rate (open loop) or closed loop; the step's
// own figures are all of its streams together.
type Stream struct {
	Name    string  `json:"name"`
	Workers int     `json:"workers"`
	Rate    float64 `json:"target_rate,omitempty"`
	Ops     int64   `json:"ops"`
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
