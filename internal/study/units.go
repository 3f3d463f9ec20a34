package study

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Count is a non-negative number of things. Study files may write it as an
// integer (100000), in scientific notation (1e5) or with a decimal suffix
// (100k, 10M, 1G), because ladders of data sizes read best that way.
type Count int64

// ParseCount parses the forms Count accepts.
func ParseCount(s string) (Count, error) {
	s = strings.TrimSpace(strings.ReplaceAll(s, "_", ""))
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult, s = 1e3, s[:n-1]
		case 'm', 'M':
			mult, s = 1e6, s[:n-1]
		case 'g', 'G', 'b', 'B':
			mult, s = 1e9, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a count (examples: 1000, 1e5, 100k, 10M)", s)
	}
	f *= mult
	// The range depends on what is counted (a ladder's sizes start at 1
	// and stop at 1e9): say only what is wrong with the number itself.
	switch {
	case f < 0:
		return 0, fmt.Errorf("%v is negative: a count is a whole number from 0", f)
	case f != math.Trunc(f):
		return 0, fmt.Errorf("%v is not a whole number", f)
	case f > 1e15:
		return 0, fmt.Errorf("%v is beyond 1e15, the largest count storebench takes", f)
	}
	return Count(f), nil
}

func (c *Count) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a count (e.g. 1e5), got a %s", kindName(n))
	}
	v, err := ParseCount(n.Value)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Bytes is a size in bytes: 1024, 1KiB, 64MiB, 10GB (decimal) or 10GiB.
type Bytes int64

// ParseBytes parses the forms Bytes accepts.
func ParseBytes(s string) (Bytes, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suf string
		m   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suf) {
			mult, t = u.m, strings.TrimSpace(strings.TrimSuffix(t, u.suf))
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a size (examples: 1024, 1KiB, 64MiB, 10GB)", s)
	}
	return Bytes(f * mult), nil
}

func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a size (e.g. 64MiB), got a %s", kindName(n))
	}
	v, err := ParseBytes(n.Value)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Duration is a Go duration string: 500ms, 10s, 5m, 1h30m.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration (e.g. 10s), got a %s", kindName(n))
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// durationForm is the form time.ParseDuration takes: a number that fits
// none is too long, not "not a duration".
var durationForm = regexp.MustCompile(`^[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// MaxDuration is the longest duration storebench takes (time.Duration's
// largest, about 292 years), as it prints in messages.
const MaxDuration = "2562047h"

// ParseDuration parses a Go duration from 0 up, saying what is wrong: not
// a duration, negative, or too long.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	v, err := time.ParseDuration(t)
	switch {
	case err != nil && strings.HasPrefix(t, "-") && durationForm.MatchString(t), err == nil && v < 0:
		return 0, fmt.Errorf("%q is negative: a duration is from 0", s)
	case err != nil && durationForm.MatchString(t):
		return 0, fmt.Errorf("%q is too long: at most %s (about 292 years)", s, MaxDuration)
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (examples: 500ms, 10s, 5m)", s)
	}
	return v, nil
}

func (d Duration) String() string { return time.Duration(d).String() }

func (d Duration) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(d.String())), nil }

func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration: want a quoted string, got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// FormatCount prints a count the way ladders are written: 10, 1e3, 1e5.
func FormatCount(n int64) string {
	if n >= 1000 {
		m, e := n, 0
		for m%10 == 0 {
			m /= 10
			e++
		}
		if m < 10 {
			return fmt.Sprintf("%de%d", m, e)
		}
	}
	return strconv.FormatInt(n, 10)
}
