package workload_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNoSharedStateOnTheOperationPath: nothing of a workload serializes
// its load goroutines. Every runner.Op (a func(context.Context, int,
// int64) error literal) and the functions and methods of its package that
// it calls are read; an atomic update, a lock or a channel operation there
// must be on state of the goroutine itself: reached by indexing with the
// worker number (cs[w].n.Add), or through a local variable or parameter
// (c := &cs[w]; c.n.Add). A counter, lock or channel shared by the
// goroutines, like a verified counter every read adds to, makes them wait
// for each other's cache line, and on many cores the harness, not the
// engine, limits throughput.
func TestNoSharedStateOnTheOperationPath(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		found = append(found, checkPackage(t, path)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// The checker reports every fault of testdata/hotpath (the lines marked
// "// want") and nothing else there: a shared counter, channel and lock,
// directly and through a method; not a counter indexed by the worker
// number, nor a semaphore the operation made itself.
func TestSharedStateCheckerCatchesItsFaults(t *testing.T) {
	dir := filepath.Join("testdata", "hotpath")
	src, err := os.ReadFile(filepath.Join(dir, "faults.go"))
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(line, "// want") {
			want = append(want, i+1)
		}
	}
	got := map[int]bool{}
	for _, f := range checkPackage(t, dir) {
		var line int
		if _, err := fmt.Sscanf(f[strings.Index(f, ".go:")+4:], "%d", &line); err != nil {
			t.Fatalf("%q: %v", f, err)
		}
		got[line] = true
		t.Log(f)
	}
	for _, l := range want {
		if !got[l] {
			t.Errorf("faults.go:%d: not reported", l)
		}
		delete(got, l)
	}
	for l := range got {
		t.Errorf("faults.go:%d: reported, but it is the goroutine's own", l)
	}
	if len(want) < 4 {
		t.Fatalf("only %d faults marked", len(want))
	}
}

var sharedOps = map[string]bool{"Add": true, "Store": true, "Swap": true, "CompareAndSwap": true, "Lock": true, "RLock": true, "Or": true, "And": true}

func checkPackage(t *testing.T, dir string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		funcs := map[string][]*ast.FuncDecl{}
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					funcs[fd.Name.Name] = append(funcs[fd.Name.Name], fd)
				}
			}
		}
		// Names declared with a type whose methods synchronise: sync/atomic
		// values, mutexes.
		syncNames := map[string]bool{}
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				var names []*ast.Ident
				var typ ast.Expr
				switch n := n.(type) {
				case *ast.AssignStmt:
					// x := make([]atomic.Int64, n)
					if call, ok := n.Rhs[0].(*ast.CallExpr); ok && len(n.Lhs) == 1 && types(call.Fun) == "make" {
						if id, ok := n.Lhs[0].(*ast.Ident); ok {
							names, typ = []*ast.Ident{id}, call.Args[0]
						}
					}
				case *ast.Field:
					names, typ = n.Names, n.Type
				case *ast.ValueSpec:
					names, typ = n.Names, n.Type
				default:
					return true
				}
				if at, ok := typ.(*ast.ArrayType); ok {
					typ = at.Elt
				}
				if typ != nil && (strings.HasPrefix(types(typ), "atomic.") || types(typ) == "sync.Mutex" || types(typ) == "sync.RWMutex") {
					for _, id := range names {
						syncNames[id.Name] = true
					}
				}
				return true
			})
		}
		// Functions given as a struct's fields (mix{plan: func…}): a
		// call through a field of that name is followed into them.
		lits := map[string][]*ast.FuncLit{}
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				if kv, ok := n.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok {
						if lit, ok := kv.Value.(*ast.FuncLit); ok {
							lits[id.Name] = append(lits[id.Name], lit)
						}
					}
				}
				return true
			})
		}
		seen := map[*ast.FuncDecl]bool{}
		seenLit := map[*ast.FuncLit]bool{}
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.FuncLit)
				if !ok || !isOp(lit.Type) {
					return true
				}
				worker := lit.Type.Params.List[1].Names
				w := ""
				if len(worker) > 0 {
					w = worker[0].Name
				}
				c := &checker{fset: fset, funcs: funcs, lits: lits, seen: seen, seenLit: seenLit, worker: w, syncNames: syncNames, pkg: filepath.Base(dir)}
				c.body(lit.Type, lit.Body, nil)
				out = append(out, c.found...)
				return false
			})
		}
	}
	return out
}

// isOp says whether a function type is runner.Op's.
func isOp(ft *ast.FuncType) bool {
	if ft.Params == nil || len(ft.Params.List) != 3 || ft.Results == nil || len(ft.Results.List) != 1 {
		return false
	}
	want := []string{"context.Context", "int", "int64"}
	for i, f := range ft.Params.List {
		if len(f.Names) > 1 || types(f.Type) != want[i] {
			return false
		}
	}
	return types(ft.Results.List[0].Type) == "error"
}

func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}

type checker struct {
	fset      *token.FileSet
	funcs     map[string][]*ast.FuncDecl
	lits      map[string][]*ast.FuncLit
	seen      map[*ast.FuncDecl]bool
	seenLit   map[*ast.FuncLit]bool
	worker    string
	pkg       string
	syncNames map[string]bool
	found     []string
}

// body checks one function body; its parameters and the names it
// declares are the goroutine's own.
func (c *checker) body(ft *ast.FuncType, b *ast.BlockStmt, local map[string]bool) {
	own := map[string]bool{}
	for k := range local {
		own[k] = true
	}
	for _, f := range ft.Params.List {
		for _, n := range f.Names {
			own[n.Name] = true
		}
	}
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						own[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				own[id.Name] = true
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					own[id.Name] = true
				}
			}
		case *ast.FuncLit:
			for _, f := range n.Type.Params.List {
				for _, id := range f.Names {
					own[id.Name] = true
				}
			}
		case *ast.SendStmt:
			// A channel the goroutine made itself (a semaphore bounding
			// the requests one operation has in flight) is its own.
			if !c.owned(n.Chan, own) && !sharedByDesign[c.pkg+"."+exprString(n.Chan)] {
				c.report(n, "a channel send")
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW && !c.owned(n.X, own) && !sharedByDesign[c.pkg+"."+exprString(n.X)] {
				c.report(n, "a channel receive")
			}
		case *ast.CallExpr:
			switch fn := n.Fun.(type) {
			case *ast.SelectorExpr:
				if sharedOps[fn.Sel.Name] && c.syncNames[lastName(fn.X)] && !c.owned(fn.X, own) && !sharedByDesign[c.pkg+"."+exprString(fn.X)] {
					c.report(n, fmt.Sprintf("%s.%s on state the goroutines share", exprString(fn.X), fn.Sel.Name))
				}
				c.follow(fn.Sel.Name, true)
			case *ast.Ident:
				c.follow(fn.Name, false)
			}
		}
		return true
	})
}

// follow checks the package's functions (or methods) called name.
func (c *checker) follow(name string, method bool) {
	if method {
		for _, lit := range c.lits[name] {
			if !c.seenLit[lit] {
				c.seenLit[lit] = true
				c.body(lit.Type, lit.Body, nil)
			}
		}
	}
	for _, fd := range c.funcs[name] {
		if (fd.Recv != nil) != method || c.seen[fd] {
			continue
		}
		c.seen[fd] = true
		// A method's receiver is not the goroutine's own (it is whatever
		// the call was made on, typically state of the whole run), but
		// for the types that are one per load goroutine.
		var own map[string]bool
		if fd.Recv != nil && len(fd.Recv.List[0].Names) > 0 && perGoroutine[types(unstar(fd.Recv.List[0].Type))] {
			own = map[string]bool{fd.Recv.List[0].Names[0].Name: true}
		}
		c.body(fd.Type, fd.Body, own)
	}
}

// owned says whether x is the goroutine's own state: indexed by the
// worker number, or rooted at a local name.
func (c *checker) owned(x ast.Expr, own map[string]bool) bool {
	for {
		switch e := x.(type) {
		case *ast.Ident:
			return own[e.Name]
		case *ast.SelectorExpr:
			x = e.X
		case *ast.IndexExpr:
			if id, ok := e.Index.(*ast.Ident); ok && id.Name == c.worker && c.worker != "" {
				return true
			}
			x = e.X
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.CallExpr:
			// ctx.Done(): what a call on the goroutine's own returns.
			x = e.Fun
		case *ast.UnaryExpr:
			x = e.X
		default:
			return false
		}
	}
}

func (c *checker) report(n ast.Node, what string) {
	c.found = append(c.found, fmt.Sprintf("%s: %s on the operation path", c.fset.Position(n.Pos()), what))
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.IndexExpr:
		return exprString(e.X) + "[" + exprString(e.Index) + "]"
	}
	return "…"
}

// sharedByDesign is the shared state the workloads' contracts require,
// each with why. documents: insert and delete give each collection the
// next (or take the highest) _id, so that _id stays exactly 1..max, as
// the tool's one counter per collection does; a partition by goroutine
// would leave gaps when a duration ends the mode.
// geo: ingest batches (1,000 points each) are claimed in order from one
// counter, so that when a duration ends the load the points ingested are
// exactly 0..P-1 and the GC's cutoff is exact; done tells the GC how far
// the committed batches reach. One atomic add per 1,000 points.
//
// Engine serialisation, where the engine itself admits one writer:
// SQLite's write lock (oltp's s.mu and c.s.mu, the target's
// SQLWriteLock, which its kv writes hold too) makes the writers wait in
// the process instead of spinning on SQLITE_BUSY; it stands for the
// engine's lock, which they would wait on anyway.
//
// Once per batch or per collection, not per operation: geo's s.mu (the
// CQL layout's set of listed partitions, taken once per 1,000-point
// ingest batch, so that a partition is listed once however many
// goroutines write to it); documents' s.smu (SQLite's statements of a
// collection, made on its first use in the step; later operations Load
// them from a sync.Map without a lock).
var sharedByDesign = map[string]bool{"documents.top[c]": true, "geo.claimed": true, "geo.done": true,
	"oltp.s.mu": true, "oltp.c.s.mu": true, "geo.s.mu": true, "documents.s.smu": true}

// perGoroutine are the receiver types of which each load goroutine has
// its own: http's client, one connection slot (its mutex guards it against the goroutine that
// cancels the step, not against another load goroutine).
var perGoroutine = map[string]bool{"client": true}

func unstar(e ast.Expr) ast.Expr {
	if s, ok := e.(*ast.StarExpr); ok {
		return s.X
	}
	return e
}

func lastName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return lastName(e.X)
	}
	return ""
}
