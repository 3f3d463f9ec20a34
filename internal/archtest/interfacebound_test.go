package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A method whose signature an interface of another module fixes (go-fuse's
// NodeCopyFileRanger takes 8 parameters) cannot meet MaxParams. Such
// methods are listed apart from long_functions.txt, in
// testdata/interface_bound.txt, each with the interface that binds it,
// and an entry counts only while it is still true: the method is above a
// bound, its file asserts that its type implements the interface (so the
// compiler holds the two together), and the interface, read from the
// module's own source, declares the method with as many parameters.

// interfaceBound is one entry of testdata/interface_bound.txt.
type interfaceBound struct {
	Name  string // path:Type.Method
	Iface string // import path "." interface name
}

func readInterfaceBound(t *testing.T) []interfaceBound {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "interface_bound.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []interfaceBound
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("interface_bound.txt: %q: want \"path:Type.Method importpath.Interface\"", l)
		}
		out = append(out, interfaceBound{Name: f[0], Iface: f[1]})
	}
	return out
}

// interfaceBoundOK checks every entry against the sources (sizes, under
// root) and returns those that hold; each that does not is an error.
func interfaceBoundOK(t *testing.T, root string, sizes []funcSize) map[string]bool {
	t.Helper()
	by := map[string]funcSize{}
	for _, s := range sizes {
		by[s.Name] = s
	}
	ok := map[string]bool{}
	for _, e := range readInterfaceBound(t) {
		s, found := by[e.Name]
		if !found {
			t.Errorf("interface_bound.txt: %s: no such method (take it off)", e.Name)
			continue
		}
		if s.Lines <= MaxFuncLines && s.Params <= MaxParams {
			t.Errorf("interface_bound.txt: %s is within the bounds now: take it off", e.Name)
			continue
		}
		if err := checkInterfaceBound(root, e, s); err != nil {
			t.Errorf("interface_bound.txt: %s: %v", e.Name, err)
			continue
		}
		ok[e.Name] = true
	}
	return ok
}

// checkInterfaceBound says why e does not hold for the method's size s
// (nil: it does).
func checkInterfaceBound(root string, e interfaceBound, s funcSize) error {
	file, method, _ := strings.Cut(e.Name, ":")
	typ, method, isMethod := strings.Cut(method, ".")
	dot := strings.LastIndex(e.Iface, ".")
	if !isMethod || dot < 0 {
		return fmt.Errorf("want path:Type.Method importpath.Interface")
	}
	pkg, iface := e.Iface[:dot], e.Iface[dot+1:]
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	if !assertsImplements(f, typ, pkg, iface) {
		return fmt.Errorf("%s has no var _ %s = (*%s)(nil): without it nothing ties the method to the interface", file, e.Iface, typ)
	}
	params, err := interfaceMethodParams(root, pkg, iface, method)
	if err != nil {
		return err
	}
	if params != s.Params {
		return fmt.Errorf("%s.%s takes %d parameters, the method %d: the interface does not fix its signature", e.Iface, method, params, s.Params)
	}
	if s.Lines > MaxFuncLines {
		return fmt.Errorf("%d lines: an interface fixes a method's parameters, not its length (split it)", s.Lines)
	}
	return nil
}

// assertsImplements says whether f holds var _ I = (*T)(nil) (or T{},
// &T{}), I being interface iface of the package imported as pkg.
func assertsImplements(f *ast.File, typ, pkg, iface string) bool {
	local := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == pkg {
			local = path.Base(p)
			if im.Name != nil {
				local = im.Name.Name
			}
		}
	}
	if local == "" {
		return false
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, sp := range g.Specs {
			v := sp.(*ast.ValueSpec)
			sel, ok := v.Type.(*ast.SelectorExpr)
			if !ok || len(v.Names) != 1 || v.Names[0].Name != "_" || len(v.Values) != 1 {
				continue
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && sel.Sel.Name == iface && valueOfType(v.Values[0]) == typ {
				return true
			}
		}
	}
	return false
}

// valueOfType is T of (*T)(nil), T{} or &T{} ("" otherwise).
func valueOfType(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.CallExpr:
		if p, ok := v.Fun.(*ast.ParenExpr); ok {
			if s, ok := p.X.(*ast.StarExpr); ok {
				return recvName(s.X)
			}
		}
	case *ast.UnaryExpr:
		if v.Op == token.AND {
			return valueOfType(v.X)
		}
	case *ast.CompositeLit:
		return recvName(v.Type)
	}
	return ""
}

// interfaceMethodParams finds interface iface of package pkg in its
// source (go list, from root's module) and counts the parameters of its
// method.
func interfaceMethodParams(root, pkg, iface, method string) (int, error) {
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("go list %s: %v", pkg, err)
	}
	dir := strings.TrimSpace(string(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		if n, ok := methodParams(f, iface, method); ok {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s.%s declares no method %s (or is gone)", pkg, iface, method)
}

// methodParams counts the parameters of method of interface iface
// declared in f (false: not there).
func methodParams(f *ast.File, iface, method string) (int, bool) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			ts := sp.(*ast.TypeSpec)
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok || ts.Name.Name != iface {
				continue
			}
			for _, m := range it.Methods.List {
				ft, ok := m.Type.(*ast.FuncType)
				if !ok || len(m.Names) != 1 || m.Names[0].Name != method {
					continue
				}
				n := 0
				for _, p := range ft.Params.List {
					n += max(1, len(p.Names))
				}
				return n, true
			}
		}
	}
	return 0, false
}

// TestInterfaceBoundCatchesAWrongEntry checks the checker: an entry whose
// file does not assert the interface, or whose interface's method takes
// another number of parameters, does not hold.
func TestInterfaceBoundCatchesAWrongEntry(t *testing.T) {
	src := `package p
import gofs "example.com/fs"
var _ gofs.Copier = (*node)(nil)
var _ gofs.Other = node{}
type node struct{}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !assertsImplements(f, "node", "example.com/fs", "Copier") || !assertsImplements(f, "node", "example.com/fs", "Other") {
		t.Error("var _ I = (*T)(nil) and var _ I = T{} not seen")
	}
	if assertsImplements(f, "node", "example.com/fs", "Missing") || assertsImplements(f, "other", "example.com/fs", "Copier") || assertsImplements(f, "node", "example.com/elsewhere", "Copier") {
		t.Error("an assertion seen for another interface, type or package")
	}
	iface := `package fs
type Copier interface {
	Copy(a, b int, c string, d, e, f, g uint64) error
	Other()
}
`
	fi, err := parser.ParseFile(token.NewFileSet(), "fs.go", iface, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := methodParams(fi, "Copier", "Copy"); !ok || n != 7 {
		t.Errorf("Copier.Copy: %d parameters (found %v), want 7", n, ok)
	}
	if _, ok := methodParams(fi, "Copier", "Paste"); ok {
		t.Error("a method the interface does not declare found")
	}
}
