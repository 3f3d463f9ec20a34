package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// runnerPkg is the runner's import path.
const runnerPkg = module + "/internal/runner"

// configMakers are the files outside the runner allowed a runner.Config
// literal: the one translation of a workload.Load into the runner's
// configuration (Load.config, called by workload.Measure).
var configMakers = []string{"internal/workload/load.go"}

// runnerConfigLiterals lists the composite literals of runner.Config
// ("path:line", path relative to root) in the non-test Go files under
// root's internal/, cmd/ and catalogs/, outside internal/runner and
// configMakers. A literal of the type under another name (an aliased
// import) counts, and so does one whose type is elided inside a slice,
// array or map of runner.Config.
func runnerConfigLiterals(root string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	for _, top := range []string{"internal", "cmd", "catalogs"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "internal/runner" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || slices.Contains(configMakers, rel) {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, pos := range configLiterals(f) {
				out = append(out, fmt.Sprintf("%s:%d", rel, fset.Position(pos).Line))
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	slices.Sort(out)
	return out, nil
}

// configLiterals are the positions of f's runner.Config literals.
func configLiterals(f *ast.File) []token.Pos {
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == runnerPkg {
			name = "runner"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil
	}
	isConfig := func(e ast.Expr) bool {
		if name == "." {
			id, ok := e.(*ast.Ident)
			return ok && id.Name == "Config"
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Config" {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == name
	}
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || lit.Type == nil {
			return true
		}
		if isConfig(lit.Type) {
			out = append(out, lit.Pos())
			return true
		}
		// Elements of a []runner.Config, [n]runner.Config or
		// map[K]runner.Config literal may leave the type out.
		var elt ast.Expr
		switch t := lit.Type.(type) {
		case *ast.ArrayType:
			elt = t.Elt
		case *ast.MapType:
			elt = t.Value
		}
		if star, ok := elt.(*ast.StarExpr); ok {
			elt = star.X
		}
		if elt == nil || !isConfig(elt) {
			return true
		}
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Value
			}
			if u, ok := e.(*ast.UnaryExpr); ok {
				e = u.X
			}
			if c, ok := e.(*ast.CompositeLit); ok && c.Type == nil {
				out = append(out, c.Pos())
			}
		}
		return true
	})
	return out
}

// TestRunnerConfigOnlyInRunner (issue 37): a phase's load is a
// workload.Load, made in one line from the step and the params, which
// workload.Measure turns into the runner's configuration; no workload or
// command builds a runner.Config itself (a caller that drives the runner
// directly calls a runner constructor, runner.Closed).
func TestRunnerConfigOnlyInRunner(t *testing.T) {
	got, err := runnerConfigLiterals(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range got {
		t.Errorf("%s: a runner.Config literal: shape the load as a workload.Load and run it with workload.Measure", at)
	}
}

// TestRunnerConfigRuleCatchesALiteral checks the check on a planted tree:
// a literal in a workload, under an aliased import, elided in a slice,
// and by pointer are caught; the runner's own, a test's, the one maker's
// and another package's Config are not.
func TestRunnerConfigRuleCatchesALiteral(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imp := "import \"" + runnerPkg + "\"\n"
	write("internal/workload/x/x.go", "package x\n"+imp+"var a = runner.Config{Goroutines: 1}\n")
	write("internal/workload/y/y.go", "package y\nimport r \""+runnerPkg+"\"\nvar b = &r.Config{}\n")
	write("internal/cli/z.go", "package cli\n"+imp+"var c = []runner.Config{\n{Ops: 1},\n}\nvar d = map[string]*runner.Config{\"k\": {}}\n")
	write("cmd/m/main.go", "package main\nimport . \""+runnerPkg+"\"\nvar e = Config{}\n")
	write("internal/runner/runner.go", "package runner\ntype Config struct{ Ops int64 }\nvar f = Config{}\n")
	write("internal/workload/x/x_test.go", "package x\n"+imp+"var g = runner.Config{}\n")
	write("internal/workload/load.go", "package workload\n"+imp+"func h() runner.Config { return runner.Config{} }\n")
	write("internal/workload/w/w.go", "package w\nimport \"other/runner\"\nvar i = runner.Config{}\n")
	write("internal/workload/v/v.go", "package v\n"+imp+"var j runner.Config\nvar k = runner.Closed(1, 1)\n")

	got, err := runnerConfigLiterals(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cmd/m/main.go:3", "internal/cli/z.go:4", "internal/cli/z.go:6", "internal/workload/x/x.go:3", "internal/workload/y/y.go:3"}
	if !slices.Equal(got, want) {
		t.Errorf("runner.Config literals found:\n  %v\nwant\n  %v", got, want)
	}
}
