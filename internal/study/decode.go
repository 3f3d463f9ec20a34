package study

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

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
		b.WriteString(Clip(e.Flag))
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

// fieldNameRE is what an unknown key must look like to be echoed in an
// error: a plausible field name, not a line of some other file.
var fieldNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

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
		return d.decodeSlice(n, v, path)
	case reflect.Map:
		return d.decodeMap(n, v, path)
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

// decodeSlice decodes a sequence (or a single scalar, as a list of one)
// into the slice v, each element with its index in the path its errors
// name, so that they point at the element at fault.
func (d decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) error {
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
}

// decodeMap decodes a mapping into the map v, each value with its key in
// the path its errors name, so that they point at the entry at fault.
func (d decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) error {
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
		if !ok && !fieldNameRE.MatchString(k.Value) {
			// Not even a field name (a line of some other file): say so
			// without echoing it.
			return d.errf(k, path, "a key that is not a field name (known: %s)", strings.Join(names, ", "))
		}
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
		if rng := t.Field(idx).Tag.Get("range"); rng != "" {
			if err := d.inRange(val, v.Field(idx), fp, rng); err != nil {
				return err
			}
		}
	}
	return nil
}

// A numeric parameter declares its range in its field's tag,
// `range:"lo..hi"`, both ends included and written as the parameter is
// (1e6, 16MiB, 24h): the decoder checks a given value against it, `storebench
// list` shows it, and a test checks that every numeric parameter of every
// workload has one (Unranged). A list's range is its elements'.

// Range is a declared range: its ends as written.
type Range struct{ Lo, Hi string }

func (r Range) String() string { return r.Lo + ".." + r.Hi }

func parseRange(tag string) (Range, bool) {
	lo, hi, ok := strings.Cut(tag, "..")
	return Range{strings.TrimSpace(lo), strings.TrimSpace(hi)}, ok && lo != "" && hi != ""
}

// number is a numeric value (Count, Bytes, Duration in nanoseconds) as a
// float64, for comparing with its range.
func number(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return 0, false
}

// bound decodes one end of a range as a value of type t.
func (d decoder) bound(t reflect.Type, s, path string) float64 {
	b := reflect.New(t).Elem()
	if err := d.decode(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}, b, path); err != nil {
		if err := d.decode(&yaml.Node{Kind: yaml.ScalarNode, Value: s}, b, path); err != nil {
			panic(fmt.Sprintf("%s: range end %q: %v", path, s, err))
		}
	}
	f, _ := number(b)
	return f
}

// inRange checks the decoded value v of node n against its range tag.
func (d decoder) inRange(n *yaml.Node, v reflect.Value, path, tag string) error {
	r, ok := parseRange(tag)
	if !ok {
		panic(fmt.Sprintf("%s: range tag %q: want lo..hi", path, tag))
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice {
		for i := 0; i < v.Len(); i++ {
			c := n
			if n.Kind == yaml.SequenceNode && i < len(n.Content) {
				c = n.Content[i]
			}
			if err := d.inRange(c, v.Index(i), fmt.Sprintf("%s[%d]", path, i), tag); err != nil {
				return err
			}
		}
		return nil
	}
	x, ok := number(v)
	if !ok {
		panic(fmt.Sprintf("%s: a range on a %s", path, v.Type()))
	}
	lo, hi := d.bound(v.Type(), r.Lo, path), d.bound(v.Type(), r.Hi, path)
	if !(x >= lo && x <= hi) {
		return d.errf(n, path, "%s is out of range: want %s", strings.TrimSpace(n.Value), r)
	}
	return nil
}

var numericTypes = map[reflect.Kind]bool{reflect.Int: true, reflect.Int8: true, reflect.Int16: true, reflect.Int32: true, reflect.Int64: true,
	reflect.Uint: true, reflect.Uint8: true, reflect.Uint16: true, reflect.Uint32: true, reflect.Uint64: true, reflect.Float32: true, reflect.Float64: true}

// Param is one parameter of a declared params type: its dotted path and,
// for a number, its range.
type Param struct {
	Path    string
	Type    reflect.Type
	Numeric bool
	Range   Range
	Ranged  bool
}

// Params lists the parameters of a params struct type t, in order,
// descending into nested structs, pointers and lists.
func Params(t reflect.Type) []Param {
	var out []Param
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == nodeType {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			p := Param{Path: join(prefix, name), Type: ft, Numeric: numericTypes[ft.Kind()]}
			p.Range, p.Ranged = parseRange(f.Tag.Get("range"))
			if p.Numeric || ft.Kind() != reflect.Struct {
				out = append(out, p)
			}
			walk(ft, p.Path)
		}
	}
	walk(t, "")
	return out
}

// Unranged lists the numeric parameters of params type t that declare no
// range (or a malformed one), and the ranges whose ends do not parse as
// their parameter: none, for every params type storebench decodes.
func Unranged(t reflect.Type) (bad []string) {
	for _, p := range Params(t) {
		switch {
		case p.Numeric && !p.Ranged:
			bad = append(bad, p.Path)
		case p.Numeric && !validRange(p):
			bad = append(bad, p.Path+" (range "+p.Range.String()+")")
		}
	}
	return bad
}

// validRange says whether p's range ends parse as p's type, low to high.
func validRange(p Param) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	d := decoder{}
	return d.bound(p.Type, p.Range.Lo, p.Path) <= d.bound(p.Type, p.Range.Hi, p.Path)
}

var (
	declaredMu sync.Mutex
	declared   = map[string]reflect.Type{}
)

// Declared returns the params types DecodeParams has decoded, by their
// study path (workloads.ledger.params): what `storebench list` shows and
// tests check.
func Declared() map[string]reflect.Type {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	out := make(map[string]reflect.Type, len(declared))
	for k, v := range declared {
		out[k] = v
	}
	return out
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
	declaredMu.Lock()
	declared[path] = reflect.TypeOf(out).Elem()
	declaredMu.Unlock()
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
