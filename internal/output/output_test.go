package output_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/event"
	"storebench/internal/output"
	_ "storebench/internal/output/all"
)

// registering are the packages under internal/output whose source calls
// output.Register, by import path.
func registering(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d.Name(), "*.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(f, "_test.go") && strings.Contains(string(b), "output.Register(") {
				out = append(out, "storebench/internal/output/"+d.Name())
				break
			}
		}
	}
	return out
}

// Every output package that registers itself is linked by
// internal/output/all (else its flag would be missing from the binary),
// and every registered Def has its flag's help and Open.
func TestEveryOutputIsLinkedAndComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("all", "all.go"), nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		linked = append(linked, p)
	}
	reg := registering(t)
	for _, p := range reg {
		if !slices.Contains(linked, p) {
			t.Errorf("%s registers an output, and internal/output/all does not import it", p)
		}
	}
	if len(output.Defs()) != len(reg) || len(reg) < 2 {
		t.Errorf("%d outputs registered, %d packages register one (%v)", len(output.Defs()), len(reg), reg)
	}
	for _, d := range output.Defs() {
		if d.Help == "" || d.Usage == "" || d.Open == nil {
			t.Errorf("--%s: no help, usage paragraph or Open", d.Flag)
		}
	}
}

// A flag registered twice, or a Def without a flag, help or Open, or both
// a switch and repeatable, is a programming error caught at init.
func TestRegisterRefusesABadDef(t *testing.T) {
	open := func(string) (event.Output, string, error) { return nil, "", nil }
	taken := output.Defs()[0].Flag
	for name, d := range map[string]output.Def{
		"twice":   {Flag: taken, Help: "again", Open: open},
		"no flag": {Help: "h", Open: open},
		"no help": {Flag: "x-no-help", Open: open},
		"no open": {Flag: "x-no-open", Help: "h"},
		"both":    {Flag: "x-both", Help: "h", Open: open, Switch: true, Repeat: true},
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
