package study

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a problem in a study file, located to the line. It prints as
// "file:line: field: what is wrong", the form editors jump to.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
	// Flag, when set, is the command-line flag that gave the bad value
	// ("--set ledger.stress.rate=-5"): the error is then the flag's, and
	// prints as "flag: [field: ]what is wrong", naming no file line.
	Flag string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Flag != "" {
		b.WriteString(e.Flag)
		if e.Field != "" {
			b.WriteString(": " + e.Field)
		}
		b.WriteString(": " + e.Msg)
		return b.String()
	}
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	} else if e.Field != "" && e.File != "" {
		b.WriteString(" (command line)")
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// decoder decodes YAML nodes into Go values strictly: unknown fields, wrong
// kinds and bad scalars are errors that carry the line and the field path.
type decoder struct{ file string }

func (d decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

// ladderElemRE matches the path of a ladder size, in the study or a scale.
var ladderElemRE = regexp.MustCompile(`(^|\.)ladder\[[0-9]+\]$`)

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
var nodeType = reflect.TypeOf(yaml.Node{})

func (d decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return d.errf(n, path, "the file is empty")
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	// Keep raw nodes (workload params) for the workload to decode later,
	// so their errors can still name the line.
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(*n))
		return nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), path)
	}
	if reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			msg := cleanYAMLErr(err)
			if ladderElemRE.MatchString(path) {
				msg += " (" + ladderRange + ")"
			}
			return d.errf(n, path, "%s", msg)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			// A single value where a list is expected is taken as a list of
			// one: "targets: pebble" reads naturally.
			if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
				return d.decode(n, v.Index(0), path+"[0]")
			}
			return d.errf(n, path, "want a list, got a %s", kindName(n))
		}
		v.Set(reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content)))
		for i, c := range n.Content {
			if err := d.decode(c, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errf(n, path, "want a mapping, got a %s", kindName(n))
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			kv := reflect.New(v.Type().Key()).Elem()
			if err := d.decode(k, kv, path); err != nil {
				return err
			}
			ev := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(val, ev, join(path, k.Value)); err != nil {
				return err
			}
			v.SetMapIndex(kv, ev)
		}
		return nil
	default:
		if n.Kind != yaml.ScalarNode {
			return d.errf(n, path, "want a %s, got a %s", v.Kind(), kindName(n))
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return d.errf(n, path, "%q is not a valid %s", n.Value, v.Kind())
		}
		return nil
	}
}

func (d decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping of fields, got a %s", kindName(n))
	}
	fields := map[string]int{}
	var names []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			return d.errf(k, fp, "unknown field (known: %s)", strings.Join(names, ", "))
		}
		if seen[k.Value] {
			return d.errf(k, fp, "given twice")
		}
		seen[k.Value] = true
		if err := d.decode(val, v.Field(idx), fp); err != nil {
			return err
		}
	}
	return nil
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// cleanYAMLErr strips yaml.v3's "yaml: line N:" prefix: our Error says
// where already.
func cleanYAMLErr(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return te.Errors[0]
	}
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			return rest[i+2:]
		}
	}
	return s
}

// DecodeParams strictly decodes a workload's or target's raw parameter
// node into out (a pointer to a struct whose fields carry yaml tags, with
// defaults already set), reporting errors against the study file.
func DecodeParams(file string, n yaml.Node, path string, out any) error {
	if n.Kind == 0 {
		return nil // no params given: keep the defaults
	}
	return decoder{file: file}.decode(&n, reflect.ValueOf(out).Elem(), path)
}

// FieldLine finds the line of a dotted field path ("stress.rate") inside a
// raw params node, for errors found after decoding; it falls back to the
// node's own line.
func FieldLine(n yaml.Node, path string) int {
	line := n.Line
	cur := &n
	for _, part := range strings.Split(path, ".") {
		if cur.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value == part {
				line, next = cur.Content[i].Line, cur.Content[i+1]
			}
		}
		if next == nil {
			return line
		}
		cur = next
	}
	return line
}
