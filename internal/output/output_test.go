package output_test

import (
	"slices"
	"testing"

	"storebench/internal/event"
	"storebench/internal/output"
	_ "storebench/internal/output/all"
)

// The outputs linked by internal/output/all register their flags, sorted.
func TestTheOutputsRegisterTheirFlags(t *testing.T) {
	var flags []string
	for _, d := range output.Defs() {
		flags = append(flags, d.Flag)
		if d.Help == "" || d.Open == nil {
			t.Errorf("--%s: no help or Open", d.Flag)
		}
	}
	if !slices.Equal(flags, []string{"export", "metrics"}) {
		t.Errorf("registered flags %v, want export, metrics", flags)
	}
}

// A flag registered twice, or a Def without a flag, help or Open, is a
// programming error caught at init.
func TestRegisterRefusesABadDef(t *testing.T) {
	open := func(string) (event.Output, string, error) { return nil, "", nil }
	for name, d := range map[string]output.Def{
		"twice":   {Flag: "metrics", Help: "again", Open: open},
		"no flag": {Help: "h", Open: open},
		"no help": {Flag: "x-no-help", Open: open},
		"no open": {Flag: "x-no-open", Help: "h"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", name)
				}
			}()
			output.Register(d)
		}()
	}
}

// A value the output's Check refuses is refused before anything runs.
func TestChecksRefuseBadValues(t *testing.T) {
	for _, d := range output.Defs() {
		bad := map[string]string{"metrics": ":9464", "export": "xml=/tmp/x"}[d.Flag]
		if d.Check == nil || d.Check(bad) == nil {
			t.Errorf("--%s %s accepted", d.Flag, bad)
		}
	}
}
