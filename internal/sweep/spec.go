package sweep

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// Spec is a workload entry's `sweep:` in a study file:
//
//	sweep:
//	  concurrency: [1, 8, 64]     # each level a step labelled concurrency=…
//	  phases: [stress]            # the phases swept (default: every phase that does not load fresh data)
//	  rate:                       # a search for the highest sustainable rate
//	    phases: [stress]          # default: every open-loop phase
//	    start: 500                # first rate tried, ops/s
//	    max: 100000               # never offer more (0: no bound)
//	    factor: 2                 # growth while every rate holds
//	    precision: 0.05           # stop bisecting within 5%
//	    slo: 100ms                # p99 from intended start must stay under this
//	    min_achieved: 0.99        # fraction of the offered rate to achieve
//	    max_trials: 8
//	    duration: 5s              # each trial's length
//
// The command line sets the same with --set WORKLOAD.sweep.concurrency=1,8,64
// or --set WORKLOAD.sweep.rate.start=500.
type Spec struct {
	Concurrency Levels    `yaml:"concurrency" range:"1..4096"`
	Phases      Phases    `yaml:"phases"`
	Rate        *RateSpec `yaml:"rate"`
}

// RateSpec configures the sustainable-rate search.
type RateSpec struct {
	Phases      Phases         `yaml:"phases"`
	Start       float64        `yaml:"start" range:"0..1e8"`
	Max         float64        `yaml:"max" range:"0..1e8"`
	Factor      float64        `yaml:"factor" range:"0..100"`
	Precision   float64        `yaml:"precision" range:"0..1"`
	SLO         study.Duration `yaml:"slo" range:"0s..1h"`
	MinAchieved float64        `yaml:"min_achieved" range:"0..1"`
	MaxTrials   int            `yaml:"max_trials" range:"1..64"`
	Duration    study.Duration `yaml:"duration" range:"1s..24h"`
}

// Levels is a list of concurrency levels: a YAML list or, from the
// command line, "1,8,64".
type Levels []int

// MaxLevel bounds a concurrency level (as --concurrency does).
const MaxLevel = 4096

func (l *Levels) UnmarshalYAML(n *yaml.Node) error {
	var items []string
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("want whole numbers, e.g. [1, 8, 64]")
			}
			items = append(items, c.Value)
		}
	case yaml.ScalarNode:
		items = strings.Split(n.Value, ",")
	default:
		return fmt.Errorf("want a list of whole numbers, e.g. [1, 8, 64] or 1,8,64")
	}
	seen := map[int]bool{}
	*l = nil
	for _, it := range items {
		v, err := strconv.Atoi(strings.TrimSpace(it))
		if err != nil || v < 1 || v > MaxLevel {
			return fmt.Errorf("%q: each level is a whole number 1..%d", strings.TrimSpace(it), MaxLevel)
		}
		if seen[v] {
			return fmt.Errorf("level %d is given twice", v)
		}
		seen[v] = true
		*l = append(*l, v)
	}
	if len(*l) == 0 {
		return fmt.Errorf("no level given")
	}
	return nil
}

// Phases names phases: a YAML list or, from the command line, "a,b".
type Phases []string

func (p *Phases) UnmarshalYAML(n *yaml.Node) error {
	var items []string
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("want phase names, e.g. [stress]")
			}
			items = append(items, c.Value)
		}
	case yaml.ScalarNode:
		items = strings.Split(n.Value, ",")
	default:
		return fmt.Errorf("want a list of phase names, e.g. [stress] or stress,select")
	}
	*p = nil
	for _, it := range items {
		if it = strings.TrimSpace(it); it == "" {
			return fmt.Errorf("an empty phase name")
		}
		*p = append(*p, it)
	}
	return nil
}

// MaxTrialsBound bounds a search's trials, so a study cannot ask for a
// search that never ends.
const MaxTrialsBound = 64

// Decode reads a workload entry's sweep (nil when it has none). Errors
// name the field and the line, or the --set flag that gave it (through
// the study's Locate); s names the study.
func Decode(s workload.Planning, e study.Entry) (*Spec, error) {
	if e.Sweep.Kind == 0 {
		return nil, nil
	}
	var sp Spec
	path := "workloads." + e.Name + ".sweep"
	if err := study.DecodeParams(s.File, e.Sweep, path, &sp); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) error {
		return &study.Error{File: s.File, Line: study.FieldLine(e.Sweep, field), Field: path + "." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(sp.Phases) > 0 && len(sp.Concurrency) == 0 {
		return nil, bad("phases", "phases without concurrency levels: give sweep.concurrency too")
	}
	if r := sp.Rate; r != nil {
		switch {
		case r.Start <= 0:
			return nil, bad("rate.start", "want the first rate to try, in operations/s (more than 0)")
		case r.Max < 0:
			return nil, bad("rate.max", "must not be negative (0: no bound)")
		case r.Max > 0 && r.Max < r.Start:
			return nil, bad("rate.max", "%g is below start %g", r.Max, r.Start)
		case r.Factor != 0 && (r.Factor <= 1 || r.Factor > 100):
			return nil, bad("rate.factor", "%g: want more than 1 and at most 100", r.Factor)
		case r.Precision < 0 || r.Precision >= 1:
			return nil, bad("rate.precision", "%g: want a fraction between 0 and 1", r.Precision)
		case r.MinAchieved < 0 || r.MinAchieved > 1:
			return nil, bad("rate.min_achieved", "%g: want a fraction between 0 and 1", r.MinAchieved)
		case r.MaxTrials < 0 || r.MaxTrials > MaxTrialsBound:
			return nil, bad("rate.max_trials", "%d: want 1..%d", r.MaxTrials, MaxTrialsBound)
		case r.Duration == 0:
			return nil, bad("rate.duration", "want each trial's length (e.g. 5s): a trial must be long enough to show a queue building")
		case time.Duration(r.Duration) < time.Second:
			return nil, bad("rate.duration", "%s: at least 1s, so that late operations can be counted per second", time.Duration(r.Duration))
		}
	}
	return &sp, nil
}

// Search is a fresh search under r.
func (r *RateSpec) Search() *RateSearch {
	return &RateSearch{Start: r.Start, Factor: r.Factor, Precision: r.Precision, Max: r.Max, MaxTrials: r.MaxTrials,
		Objective: Objective{MinAchieved: r.MinAchieved, SLO: time.Duration(r.SLO)}}
}

// covers says whether phase is in phases (empty: decided by dflt).
func covers(phases []string, phase string, dflt bool) bool {
	if len(phases) == 0 {
		return dflt
	}
	for _, p := range phases {
		if p == phase {
			return true
		}
	}
	return false
}
