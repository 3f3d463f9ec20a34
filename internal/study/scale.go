package study

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scale is a named set of overrides in a study file, chosen on the command
// line with --scale NAME: the seed's own sizes, say, next to defaults sized
// for a small machine. Keys are what --set takes (workload.param.sub), plus
// the study-wide settings a size change drags along: ladder, concurrency,
// limits.time / limits.target_time / limits.disk, and what a seed's
// method sets: targets (names, as --targets takes them: the seed's
// engines), durability and machines (the seed's machines, as shapes
// scaled to the data size the scale runs: --machine replaces them).
//
//	scales:
//	  seed:
//	    ladder: [1e8]
//	    tokens.runtx.blocks: 500
//	    limits.target_time: 0
type Scale map[string]yaml.Node

// scaleSettings are the study-wide keys a scale may set, with the field
// each one lands in.
var scaleSettings = map[string]func(s *Study) any{
	"ladder":             func(s *Study) any { return &s.Ladder },
	"concurrency":        func(s *Study) any { return &s.Concurrency },
	"limits.time":        func(s *Study) any { return &s.Limits.Time },
	"limits.target_time": func(s *Study) any { return &s.Limits.TargetTime },
	"limits.disk":        func(s *Study) any { return &s.Limits.Disk },
	"durability":         func(s *Study) any { return &s.Durability },
	"machines":           func(s *Study) any { return &s.Machines },
}

// ScaleNames lists the study's scales, sorted.
func (s *Study) ScaleNames() []string {
	names := make([]string, 0, len(s.Scales))
	for n := range s.Scales {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkScales catches a misspelt key in any scale when the file is read,
// not only when that scale is chosen: every scale is applied to a copy.
func (s *Study) checkScales(root *yaml.Node) error {
	for _, name := range s.ScaleNames() {
		c := *s
		c.overrides = append([]override(nil), s.overrides...)
		c.Workloads = make([]Entry, len(s.Workloads))
		for i, e := range s.Workloads {
			c.Workloads[i] = Entry{Name: e.Name, Params: *deepCopy(&e.Params), Sweep: *deepCopy(&e.Sweep)}
		}
		if err := c.ApplyScale(name); err != nil {
			if e, ok := err.(*Error); ok && e.Line == 0 {
				e.Line = lineOf(root, "scales")
			}
			return err
		}
	}
	return nil
}

// ApplyScale applies the overrides of scale name. Its errors name the
// study file, and the scales it has when name is not one of them.
func (s *Study) ApplyScale(name string) error {
	sc, ok := s.Scales[name]
	if !ok {
		have := "it has none"
		if len(s.Scales) > 0 {
			have = "it has: " + strings.Join(s.ScaleNames(), ", ")
		}
		return &Error{File: s.File, Field: "scales", Msg: fmt.Sprintf("no scale %q (%s)", name, have)}
	}
	keys := make([]string, 0, len(sc))
	for k := range sc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := sc[k]
		field := "scales." + name + "." + k
		if k == "targets" {
			if err := s.scaleTargets(&v, field); err != nil {
				return err
			}
			continue
		}
		if ptr, ok := scaleSettings[k]; ok {
			if err := (decoder{file: s.File}).decode(deepCopy(&v), reflect.ValueOf(ptr(s)).Elem(), field); err != nil {
				return err
			}
			s.overrides = append(s.overrides, override{field: k, scaleField: field, line: v.Line})
			if k == "concurrency" && (s.Concurrency < 1 || s.Concurrency > 4096) {
				return &Error{File: s.File, Line: v.Line, Field: field, Msg: fmt.Sprintf("%d: want 1..4096", s.Concurrency)}
			}
			if k == "durability" && !durabilityClass(s.Durability) {
				return &Error{File: s.File, Line: v.Line, Field: field, Msg: fmt.Sprintf("%q: want sync, async or default", s.Durability)}
			}
			continue
		}
		parts := strings.Split(k, ".")
		if len(parts) < 2 {
			return &Error{File: s.File, Line: v.Line, Field: field,
				Msg: "want workload.param (as --set takes) or one of: " + strings.Join(settingNames(), ", ")}
		}
		// The value keeps its line, so a bad one is reported where the
		// scale says it, not on the command line.
		if err := s.setParam(parts, deepCopy(&v)); err != nil {
			return &Error{File: s.File, Line: v.Line, Field: field, Msg: err.Error()}
		}
		s.overrides = append(s.overrides, override{field: paramPath(parts), scaleField: field, line: v.Line})
	}
	return s.CheckLadder()
}

// scaleTargets replaces the study's targets by a scale's list of names,
// as --targets does (a target the study file has keeps its options);
// --targets on the command line still wins, being applied after.
func (s *Study) scaleTargets(v *yaml.Node, field string) error {
	var names []string
	if v.Kind == yaml.SequenceNode {
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				names = nil
				break
			}
			names = append(names, it.Value)
		}
	}
	if len(names) == 0 {
		return &Error{File: s.File, Line: v.Line, Field: field, Msg: "want a list of target names, e.g. [rocksdb, redis]"}
	}
	before := len(s.overrides)
	if err := s.applyTargets(strings.Join(names, ",")); err != nil {
		return &Error{File: s.File, Line: v.Line, Field: field, Msg: err.Error()}
	}
	for i := before; i < len(s.overrides); i++ { // located at the scale's line, not a flag
		s.overrides[i].flag, s.overrides[i].scaleField, s.overrides[i].line = "", field, v.Line
	}
	return nil
}

func settingNames() []string {
	out := make([]string, 0, len(scaleSettings)+1)
	for k := range scaleSettings {
		out = append(out, k)
	}
	out = append(out, "targets")
	sort.Strings(out)
	return out
}

// deepCopy copies a node tree, so that later overrides of a path inside a
// scale's value do not edit the scale itself.
func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = deepCopy(ch)
	}
	return &c
}
