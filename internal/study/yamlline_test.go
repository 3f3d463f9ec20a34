package study

import (
	"errors"
	"strings"
	"testing"
)

// A malformed study names the line to fix: the line of the token YAML
// could not take, not where the enclosing mapping or list began (yaml.v3
// reported that one, counted from 0: a flow error on line 7 as line 6, a
// bad indent on line 12 as line 4).
func TestYAMLErrorsNameTheirLine(t *testing.T) {
	head := "name: t\nladder: [10]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n    params:\n"
	for _, c := range []struct {
		name, text string
		line       int
		msg        string
	}{
		{"flow closed by the wrong bracket", head + "      chains: {lengths: [10, 100}\n      payload: 100\n", 7, "did not find expected ',' or ']'"},
		{"bad indent", head + "      payload: 100\n      chains:\n        lengths: [10]\n        samples: 1\n      stress: {rate: 5}\n     batch: 3\n", 12, "did not find expected key"},
		{"list item under a mapping", "name: t\nladder: [10]\ntargets: [pebble]\n - bbolt\n", 4, "did not find expected key"},
		{"unclosed flow list", "name: t\nladder: [10]\ntargets: [pebble\nworkloads: x\n", 4, "did not find expected ',' or ']'"},
		{"two values on a line", "name: t\nladder: [10]\nname: t: x\n", 3, "mapping values are not allowed in this context"},
		{"tab", "name: t\nladder: [10]\n\ttargets: [pebble]\n", 3, "found character that cannot start any token"},
		{"unterminated quote", "name: t\nladder: [10]\ntargets: [pebble]\ntitle: \"abc\n", 4, "found unexpected end of stream"},
		{"flow mapping missing its brace", head + "      stress: {rate: 5\n      batch: 3\n", 8, "did not find expected ',' or '}'"},
		{"key after a list at the wrong indent", "name: t\nladder:\n  - 10\n  - 20\n title: x\n", 5, "did not find expected key"},
	} {
		_, err := Parse("s.yaml", []byte(c.text))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want a located error", c.name, err)
			continue
		}
		if e.Line != c.line || !strings.HasPrefix(e.Msg, c.msg) {
			t.Errorf("%s: %v; want line %d: %s", c.name, err, c.line, c.msg)
		}
	}
}

// A duration says what is wrong with it: not one, negative, or longer
// than a Go duration holds (999999999h used to be "not a duration").
func TestDurationErrorsSayWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		"999999999h":  `"999999999h" is too long: at most 2562047h (about 292 years)`,
		"2562048h":    `"2562048h" is too long`,
		"-5s":         `"-5s" is negative`,
		"-999999999h": `"-999999999h" is negative`,
		".s":          `".s" is not a duration`,
		"soon":        `"soon" is not a duration`,
		"1h30m":       "",
		"2562047h":    "",
		"0.5s":        "",
	} {
		_, err := ParseDuration(in)
		if (want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
