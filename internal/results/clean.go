package results

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// A results.json is shared: whoever wrote it chose every string in it
// (a title, a target's title, a setting, the CPU model, a reason). Such a
// string reaches the terminal through `storebench report` and `compare`,
// and report.md: an ESC in it would be a sequence the terminal obeys (an
// OSC 52 clipboard write, a window title, a screen clear). Decode escapes
// every control character of every string of the run as it reads it, the
// way a study's title is refused one (package study): every consumer gets
// text that prints as it reads.

// Control reports whether r is a control character that text from a run
// must not carry to a terminal: C0 but line feed and tab, DEL, C1, and the
// bidirectional overrides and isolates, which reorder what is shown.
func Control(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// EscapeControl returns s with each control character (Control) written
// in its visible Go form (ESC as \x1b, CSI as \u009b); a CR of a CRLF line
// end is dropped. Text without one is returned as it is.
func EscapeControl(s string) string {
	if !strings.ContainsFunc(s, Control) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case !Control(r):
			b.WriteRune(r)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// escapeControls escapes (EscapeControl) every string of r in place:
// fields, elements, map keys and map values.
func (r *Run) escapeControls() {
	v := reflect.ValueOf(r).Elem()
	v.Set(MapStrings(v, EscapeControl))
}

// MapStrings returns a copy of v with f applied to every string it holds
// (exported fields, elements, map keys and values, through pointers).
// Parts that hold no string are shared, not copied; v itself is not
// changed. The report renders from such a copy with its own escaping.
func MapStrings(v reflect.Value, f func(string) string) reflect.Value {
	if !holdsStrings(v.Type()) {
		return v
	}
	switch v.Kind() {
	case reflect.String:
		n := reflect.New(v.Type()).Elem()
		n.SetString(f(v.String()))
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(MapStrings(v.Elem(), f))
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(MapStrings(v.Elem(), f))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v) // unexported fields as they are
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).IsExported() {
				n.Field(i).Set(MapStrings(v.Field(i), f))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			n.Index(i).Set(MapStrings(v.Index(i), f))
		}
		return n
	case reflect.Array:
		n := reflect.New(v.Type()).Elem()
		for i := 0; i < v.Len(); i++ {
			n.Index(i).Set(MapStrings(v.Index(i), f))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			n.SetMapIndex(MapStrings(iter.Key(), f), MapStrings(iter.Value(), f))
		}
		return n
	}
	return v
}

// stringTypes caches holdsStrings.
var stringTypes sync.Map // reflect.Type → bool

// holdsStrings reports whether a value of type t can hold a string
// (slices of numbers, histograms' ticks, are not walked).
func holdsStrings(t reflect.Type) bool {
	if b, ok := stringTypes.Load(t); ok {
		return b.(bool)
	}
	b := holds(t, map[reflect.Type]bool{})
	stringTypes.Store(t, b)
	return b
}

func holds(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holds(t.Elem(), seen)
	case reflect.Map:
		return holds(t.Key(), seen) || holds(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() && holds(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
