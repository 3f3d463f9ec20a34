package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/study"
)

// Labels are a step's identity: workload, phase, n and whatever else sets
// it apart from the other steps of the run (a size label a workload
// declares, a sweep's concurrency level, a rate trial's offered rate and
// number). Every place that names or matches a step (HDR log file
// names, charts, compare, constraints) goes through them; no other field
// of a step is part of its identity. They are JSON as an object, whose
// keys encoding/json writes sorted.
type Labels map[string]string

// Well-known label keys.
const (
	LWorkload    = "workload"
	LPhase       = "phase"
	LN           = "n"
	LConcurrency = "concurrency"
	LRate        = "rate"
	LTrial       = "trial"
)

// A SizeLabel is a label a workload declares that sizes its steps beside
// n (the ledger's chain length): a step's name spells it after n, its
// value as a count (1e5), and the report draws a phase that ran at
// several of its values against it. The workload's package registers it
// (RegisterSizeLabel); no shared package names a study's labels.
type SizeLabel struct {
	Key    string // the label's key ("length")
	Short  string // how a step's name spells the key ("len")
	Symbol string // the size's letter in a chart ("L")
	// Metric is the metric that held the label's value in results
	// written before steps had labels ("" for none).
	Metric string
}

var sizeLabels []SizeLabel

// RegisterSizeLabel declares a workload's size label; called from an
// init function. It panics on a key or short spelling already taken:
// two workloads must not read one label two ways.
func RegisterSizeLabel(l SizeLabel) {
	for _, o := range sizeLabels {
		if o.Key == l.Key || o.Short == l.Short {
			panic(fmt.Sprintf("results: size label %q (%q) registered twice", l.Key, l.Short))
		}
	}
	if _, ok := fixedShort[l.Key]; ok || l.Key == LWorkload || l.Key == LPhase {
		panic(fmt.Sprintf("results: size label %q is a well-known key", l.Key))
	}
	sizeLabels = append(sizeLabels, l)
}

// SizeLabels are the registered size labels, in registration order.
func SizeLabels() []SizeLabel { return append([]SizeLabel(nil), sizeLabels...) }

// fixedShort is how a name spells a well-known key before its value.
var fixedShort = map[string]string{LN: "n", LConcurrency: "c", LRate: "r", LTrial: "t"}

// order is where the well-known keys and the size labels go in a name;
// others follow sorted.
func order() []string {
	o := []string{LWorkload, LPhase, LN}
	for _, l := range sizeLabels {
		o = append(o, l.Key)
	}
	return append(o, LConcurrency, LRate, LTrial)
}

// shortOf is how a name spells a well-known key or a size label.
func shortOf(k string) (string, bool) {
	if s, ok := fixedShort[k]; ok {
		return s, true
	}
	for _, l := range sizeLabels {
		if l.Key == k {
			return l.Short, true
		}
	}
	return "", false
}

// isSize says whether k is n or a registered size label.
func isSize(k string) bool {
	if k == LN {
		return true
	}
	for _, l := range sizeLabels {
		if l.Key == k {
			return true
		}
	}
	return false
}

// StepLabels are the labels every step has.
func StepLabels(workload, phase string, n int64) Labels {
	return Labels{LWorkload: workload, LPhase: phase, LN: strconv.FormatInt(n, 10)}
}

// With returns a copy of l with key set to value.
func (l Labels) With(key, value string) Labels {
	out := make(Labels, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	out[key] = value
	return out
}

// Int is the value of key as a whole number (0 when absent or not one).
func (l Labels) Int(key string) int64 {
	v, _ := strconv.ParseInt(l[key], 10, 64)
	return v
}

// Keys are l's keys in naming order: the well-known ones first, then the
// others sorted.
func (l Labels) Keys() []string {
	var keys, rest []string
	for _, k := range order() {
		if _, ok := l[k]; ok {
			keys = append(keys, k)
		}
	}
	for k := range l {
		if _, ok := shortOf(k); !ok && k != LWorkload && k != LPhase {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// Name names the step for files and charts, e.g.
// "ledger-stress-n1e5-c8-r2000": workload and phase as they are, then each
// other label as a short key and its value (counts as 1e5), joined by "-".
// Characters a file name should not hold become "_".
func (l Labels) Name() string {
	var parts []string
	for _, k := range l.Keys() {
		v := l[k]
		if k == LWorkload || k == LPhase {
			parts = append(parts, clean(v))
			continue
		}
		if isSize(k) {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				v = study.FormatCount(n)
			}
		}
		p, ok := shortOf(k)
		if !ok {
			p = k
		}
		parts = append(parts, clean(p+v))
	}
	return strings.Join(parts, "-")
}

// Extra is a short text of the labels beyond workload, phase and n, for
// table cells ("length=100 concurrency=8"); empty when there are none.
func (l Labels) Extra() string {
	var parts []string
	for _, k := range l.Keys() {
		if k == LWorkload || k == LPhase || k == LN {
			continue
		}
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, " ")
}

// Match reports whether l has every label of sel.
func (l Labels) Match(sel Labels) bool {
	for k, v := range sel {
		if l[k] != v {
			return false
		}
	}
	return true
}

// Equal reports whether l and o are the same set of labels.
func (l Labels) Equal(o Labels) bool {
	return len(l) == len(o) && l.Match(o)
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		}
		return '_'
	}, s)
}

// Label is one label of a step, derived for steps of files written before
// steps had labels: workload, phase and n from their fields, and each
// size label from the metric that was then its hidden identity (the
// ledger's chain length).
func (s *Step) label() {
	if s.Labels == nil {
		s.Labels = StepLabels(s.Workload, s.Phase, s.N)
		for _, sl := range sizeLabels {
			if v, ok := s.Metrics[sl.Metric]; ok && sl.Metric != "" {
				s.Labels[sl.Key] = strconv.FormatInt(int64(v), 10)
			}
		}
	}
}

// Name names the step by its labels.
func (s *Step) Name() string {
	s.label()
	return s.Labels.Name()
}

// FindLabels returns the target's step with exactly these labels.
func (t *Target) FindLabels(l Labels) *Step {
	for _, s := range t.Steps {
		s.label()
		if s.Labels.Equal(l) {
			return s
		}
	}
	return nil
}

// label derives the labels of every step that has none (results of
// earlier versions).
func (r *Run) label() {
	for _, t := range r.Targets {
		if t == nil {
			continue
		}
		for _, s := range t.Steps {
			if s != nil {
				s.label()
			}
		}
	}
}
