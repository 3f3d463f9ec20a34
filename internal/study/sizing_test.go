package study

import (
	"errors"
	"strings"
	"testing"
)

// A study's sizing: parsed as written, kept in the study as run, and a
// figure that is wrong is refused at its line with its field.
func TestSizingParse(t *testing.T) {
	s, err := Parse("f.yaml", []byte(base+"sizing:\n  load: 50000/s\n  data: 500GiB\n  replicas: 2\n  growth: 5%\n  p99: 10ms\n  catalog: aws\n"))
	if err != nil {
		t.Fatal(err)
	}
	z := s.Sizing
	if z == nil || z.Load != "50000/s" || z.Data != "500GiB" || z.Replicas != 2 || z.Growth != "5%" || z.P99.String() != "10ms" || z.Catalog != "aws" {
		t.Fatalf("sizing %+v", z)
	}
	out, err := s.Effective(nil)
	if err != nil || !strings.Contains(string(out), "sizing:") || !strings.Contains(string(out), "load: 50000/s") {
		t.Fatalf("study as run lost its sizing (%v):\n%s", err, out)
	}
	for _, c := range []struct{ body, field string }{
		{"  load: quick\n  data: 1e6\n", "sizing.load"},
		{"  load: 10/s\n  data: heaps\n", "sizing.data"},
		{"  load: 10/s\n  data: 1e6\n  growth: lots\n", "sizing.growth"},
		{"  load: 10/s\n  data: 1e6\n  replicas: -1\n", "sizing.replicas"},
		{"  load: 10/s\n  data: 1e6\n  mix: {ycsb/a: 0}\n", "sizing.mix.ycsb/a"},
	} {
		_, err := Parse("f.yaml", []byte(base+"sizing:\n"+c.body))
		var se *Error
		if err == nil || !errors.As(err, &se) || se.Field != c.field || se.Line == 0 {
			t.Errorf("%q: %v, want an error at sizing's line naming %s", c.body, err, c.field)
		}
	}
	for in, want := range map[string]float64{"50000": 50000, "5e4/s": 50000, "3M/min": 50000, "1.8e8/h": 50000} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v %v, want %v", in, got, err, want)
		}
	}
	if items, bytes, err := ParseData("5e8 items"); err != nil || items != 5e8 || bytes != 0 {
		t.Errorf("5e8 items: %v %v %v", items, bytes, err)
	}
	if items, bytes, err := ParseData("2TB"); err != nil || items != 0 || bytes != 2e12 {
		t.Errorf("2TB: %v %v %v", items, bytes, err)
	}
}
