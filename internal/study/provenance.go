package study

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// An override is one field the command line (or the chosen scale) set:
// errors about that field, or under it, are the flag's, not the file's.
type override struct {
	// field is the study path it set: "ladder", "targets[2]",
	// "workloads.ledger.params.stress.rate".
	field string
	// flag is the command-line flag as given ("--set ledger.stress.rate=-5");
	// empty for a scale's key, which is located at its line instead.
	flag string
	// scaleField and line locate a scale's key in the file.
	scaleField string
	line       int
}

// Line finds the line in the study file of a field path as errors name it
// ("targets[1].options.cache", "workloads.ledger.params.stress.rate",
// "constraints.p99.ledger.stress"): the line of the deepest part of the
// path the file has, 0 if it has none of it.
func (s *Study) Line(field string) int {
	parts := splitPath(field)
	if len(parts) >= 2 && strings.HasPrefix(field, "targets[") {
		// Targets are located by their own node: --targets may have
		// dropped or reordered them.
		if i, err := strconv.Atoi(strings.Trim(parts[1], "[]")); err == nil && i >= 0 && i < len(s.Targets) {
			if n := s.Targets[i].node; n != nil {
				return lineIn(n, parts[2:], n.Line)
			}
			return 0
		}
	}
	if s.root == nil || len(s.root.Content) == 0 {
		return 0
	}
	return lineIn(s.root.Content[0], parts, 0)
}

// lineIn walks parts down from n. A mapping key may itself hold dots
// (constraint figures: "ledger.stress"); a list element is picked by
// index ("[2]") or by the name it has (workloads.ledger).
func lineIn(n *yaml.Node, parts []string, line int) int {
	for i := 0; i < len(parts); {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var next *yaml.Node
		used := 1
		switch n.Kind {
		case yaml.MappingNode:
			for j := len(parts); j > i && next == nil; j-- {
				key := strings.Join(parts[i:j], ".")
				for k := 0; k+1 < len(n.Content); k += 2 {
					if n.Content[k].Value == key {
						next, line, used = n.Content[k+1], n.Content[k].Line, j-i
						break
					}
				}
			}
		case yaml.SequenceNode:
			if idx, err := strconv.Atoi(strings.Trim(parts[i], "[]")); err == nil && strings.HasPrefix(parts[i], "[") {
				if idx >= 0 && idx < len(n.Content) {
					next = n.Content[idx]
				}
			} else {
				for _, el := range n.Content {
					if el.Kind == yaml.ScalarNode && el.Value == parts[i] || el.Kind == yaml.MappingNode && nameOf(el) == parts[i] {
						next = el
						break
					}
				}
			}
			if next != nil {
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n, i = next, i+used
	}
	return line
}

func nameOf(m *yaml.Node) string {
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == "name" {
			return m.Content[k+1].Value
		}
	}
	return ""
}

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// splitPath splits "targets[1].options.x" into targets, [1], options, x.
func splitPath(field string) []string {
	field = indexRE.ReplaceAllStringFunc(field, func(m string) string { return "." + m })
	var out []string
	for _, p := range strings.Split(field, ".") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// under reports whether field is path or inside it, and what is left.
func under(field, path string) (string, bool) {
	if field == path {
		return "", true
	}
	if rest, ok := strings.CutPrefix(field, path); ok && (rest[0] == '.' || rest[0] == '[') {
		return strings.TrimPrefix(rest, "."), true
	}
	return "", false
}

// ErrorAt makes the error of a field found wrong after decoding: the flag
// that set it when the command line did, else the file and its line.
func (s *Study) ErrorAt(field, format string, args ...any) *Error {
	e := &Error{File: s.File, Field: field, Msg: fmt.Sprintf(format, args...)}
	return s.locate(e)
}

// Locate gives an error about this study its place, for errors made
// where the study's nodes are out of reach (workloads, targets, the
// constraints' figures): a field the command line set is blamed on its
// flag ("--set ledger.stress.rate=-5: must not be negative"), a field of
// the file gets its line. Other errors are returned as they are.
func (s *Study) Locate(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Flag != "" || e.File != s.File {
		return err
	}
	c := *e
	return s.locate(&c)
}

func (s *Study) locate(e *Error) *Error {
	// The last override of a field is the one that holds.
	for i := len(s.overrides) - 1; i >= 0; i-- {
		o := s.overrides[i]
		rest, ok := under(e.Field, o.field)
		if !ok {
			continue
		}
		if o.flag == "" {
			e.Line, e.Field = o.line, o.scaleField
			if strings.HasPrefix(rest, "[") {
				e.Field += rest
			} else if rest != "" {
				e.Field += "." + rest
			}
			return e
		}
		if strings.HasPrefix(rest, "[") {
			rest = "" // an element of what the flag gave: the flag says it
		}
		return &Error{Flag: o.flag, Field: rest, Msg: e.Msg}
	}
	if e.Line == 0 && e.Field != "" {
		e.Line = s.Line(e.Field)
	}
	// A field of the file judged together with values from the command
	// line ("rows and duration must be positive"): say which.
	var with []string
	for _, o := range s.overrides {
		if _, in := under(o.field, e.Field); in && o.flag != "" && e.Field != "" {
			with = append(with, o.flag)
		}
	}
	if len(with) > 0 {
		e.Msg += " (with " + strings.Join(with, ", ") + ")"
	}
	return e
}

// flagsUnder lists the flags that set fields under path.
func (s *Study) flagsUnder(path string) []string {
	var out []string
	for _, o := range s.overrides {
		if _, in := under(o.field, path); (in || path == "") && o.flag != "" {
			out = append(out, o.flag)
		}
	}
	return out
}

// Overridden reports whether the command line changed the study.
func (s *Study) Overridden() bool {
	for _, o := range s.overrides {
		if o.flag != "" {
			return true
		}
	}
	return false
}
