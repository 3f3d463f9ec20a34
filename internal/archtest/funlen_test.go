package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Issue 37: no function above MaxFuncLines lines (k6 caps funlen at 80) or
// MaxParams parameters.
// The ones that were longer or wider when the rule came are listed in
// testdata/long_functions.txt; the list may only shrink: a function not
// in it that breaks a bound fails, and so does a listed one that no
// longer does (take it off the list).
const (
	MaxFuncLines = 80
	MaxParams    = 6
)

// funcSize is one function's length in lines and parameter count.
type funcSize struct {
	Name          string // path:Func or path:Type.Method
	Lines, Params int
}

// funcSizes measures every function of the non-test Go files under dirs.
func funcSizes(root string, dirs ...string) ([]funcSize, error) {
	var out []funcSize
	fset := token.NewFileSet()
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			out = append(out, sizesOf(fset, f, filepath.ToSlash(rel))...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sizesOf(fset *token.FileSet, f *ast.File, rel string) []funcSize {
	var out []funcSize
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) > 0 {
			name = recvName(fn.Recv.List[0].Type) + "." + name
		}
		params := 0
		for _, p := range fn.Type.Params.List {
			params += max(1, len(p.Names))
		}
		lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		out = append(out, funcSize{Name: rel + ":" + name, Lines: lines, Params: params})
	}
	return out
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// overBounds lists the functions above a bound, each "name lines params".
func overBounds(sizes []funcSize) map[string]funcSize {
	out := map[string]funcSize{}
	for _, s := range sizes {
		if s.Lines > MaxFuncLines || s.Params > MaxParams {
			out[s.Name] = s
		}
	}
	return out
}

func readAllowed(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "long_functions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out[strings.Fields(l)[0]] = true
		}
	}
	return out
}

// TestFunctionsStayShort holds the bounds over internal/, cmd/ and
// catalogs/, with the list of those that broke them when the rule came,
// and the methods whose parameters an external interface fixes
// (interfacebound_test.go).
func TestFunctionsStayShort(t *testing.T) {
	sizes, err := funcSizes(repoRoot(t), "internal", "cmd", "catalogs")
	if err != nil {
		t.Fatal(err)
	}
	over, allowed := overBounds(sizes), readAllowed(t)
	// Methods an external interface fixes (interface_bound.txt), each
	// checked to be still so.
	bound := interfaceBoundOK(t, repoRoot(t), sizes)
	var news, gone []string
	for name, s := range over {
		if allowed[name] && bound[name] {
			news = append(news, name+": listed in both long_functions.txt and interface_bound.txt")
		}
		if !allowed[name] && !bound[name] {
			news = append(news, fmt.Sprintf("%s: %d lines, %d parameters", name, s.Lines, s.Params))
		}
	}
	for name := range allowed {
		if _, ok := over[name]; !ok {
			gone = append(gone, name)
		}
	}
	sort.Strings(news)
	sort.Strings(gone)
	if len(news) > 0 {
		t.Errorf("functions above %d lines or %d parameters (split them; the list in testdata/long_functions.txt may only shrink):\n  %s", MaxFuncLines, MaxParams, strings.Join(news, "\n  "))
	}
	if len(gone) > 0 {
		t.Errorf("within the bounds now: take them off testdata/long_functions.txt:\n  %s", strings.Join(gone, "\n  "))
	}
}

// TestFunctionBoundsCatchALongOne checks the checker on a planted file.
func TestFunctionBoundsCatchALongOne(t *testing.T) {
	src := "package p\nfunc wide(a, b, c, d, e, f, g int) {}\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", MaxFuncLines) + "}\nfunc (x *T) ok(a int) {}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	over := overBounds(sizesOf(fset, f, "p.go"))
	if _, ok := over["p.go:wide"]; !ok || len(over) != 2 || over["p.go:long"].Lines != MaxFuncLines+2 {
		t.Fatalf("over the bounds: %+v, want wide (7 parameters) and long (%d lines)", over, MaxFuncLines+2)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
