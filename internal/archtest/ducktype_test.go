package archtest

import (
	"fmt"
	"go/types"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// A target offers engine primitives (interfaces of package target and
// target/conn, kv.Store) and knows no workload. A type under
// internal/target that has the methods of a workload's own interface
// (ycsb.DB, geo.Store, ...) satisfies it by duck typing: nothing at
// compile time holds the two together, so changing the interface breaks
// the target only when a run reaches it. Such a type is allowed only
// where the workload names it (its table of layouts lists the type, as
// package ycsb's layout_targets.go does), so the compiler checks it. An
// alias of a target's interface (setget.Session = target.Session) is the
// target's primitive, not the workload's, and is not counted.

// typedPackages loads the module's packages under internal/ with their
// types, built with the Makefile's tags (scripts/build-tags.sh); overlay
// replaces or adds files (absolute paths), for the test that plants a
// fault.
func typedPackages(t *testing.T, overlay map[string][]byte) []*packages.Package {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tags, err := exec.Command("bash", filepath.Join(root, "scripts", "build-tags.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/build-tags.sh: %v", err)
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  root, Overlay: overlay,
		BuildFlags: []string{"-tags=" + strings.TrimSpace(string(tags))},
	}
	pkgs, err := packages.Load(cfg, "./internal/...")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
	}
	return pkgs
}

// inTree says whether package path p is dir (relative to the module) or
// below it.
func inTree(p, dir string) bool {
	d := module + "/" + dir
	return p == d || strings.HasPrefix(p, d+"/")
}

// typeNames are the package's named types, declared in its scope.
func typeNames(p *packages.Package) []*types.TypeName {
	var out []*types.TypeName
	sc := p.Types.Scope()
	for _, n := range sc.Names() {
		if tn, ok := sc.Lookup(n).(*types.TypeName); ok {
			out = append(out, tn)
		}
	}
	return out
}

// workloadInterfaces are the exported interfaces with methods that the
// workload packages declare (aliases of other packages' excluded).
func workloadInterfaces(pkgs []*packages.Package) []*types.TypeName {
	var out []*types.TypeName
	for _, p := range pkgs {
		if !inTree(p.PkgPath, "internal/workload") {
			continue
		}
		for _, tn := range typeNames(p) {
			it, ok := tn.Type().Underlying().(*types.Interface)
			if ok && tn.Exported() && !tn.IsAlias() && it.NumMethods() > 0 {
				out = append(out, tn)
			}
		}
	}
	return out
}

// targetTypes are the named non-interface types declared under
// internal/target.
func targetTypes(pkgs []*packages.Package) []*types.TypeName {
	var out []*types.TypeName
	for _, p := range pkgs {
		if !inTree(p.PkgPath, "internal/target") {
			continue
		}
		for _, tn := range typeNames(p) {
			if _, isIface := tn.Type().Underlying().(*types.Interface); !isIface && !tn.IsAlias() {
				out = append(out, tn)
			}
		}
	}
	return out
}

// named are the types each package's own files refer to, as
// "importpath.Name".
func named(pkgs []*packages.Package) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, p := range pkgs {
		m := map[string]bool{}
		for _, obj := range p.TypesInfo.Uses {
			if tn, ok := obj.(*types.TypeName); ok && tn.Pkg() != nil {
				m[tn.Pkg().Path()+"."+tn.Name()] = true
			}
		}
		out[p.PkgPath] = m
	}
	return out
}

// duckTyped lists each type under internal/target that implements an
// interface of a workload package which does not name the type.
func duckTyped(pkgs []*packages.Package) []string {
	names := named(pkgs)
	var out []string
	for _, i := range workloadInterfaces(pkgs) {
		it := i.Type().Underlying().(*types.Interface)
		for _, c := range targetTypes(pkgs) {
			if !types.Implements(c.Type(), it) && !types.Implements(types.NewPointer(c.Type()), it) {
				continue
			}
			typ := c.Pkg().Path() + "." + c.Name()
			if !names[i.Pkg().Path()][typ] {
				out = append(out, fmt.Sprintf("%s implements %s.%s, which does not name it", typ, i.Pkg().Path(), i.Name()))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestNoDuckTypedWorkloadInterfaces(t *testing.T) {
	for _, d := range duckTyped(typedPackages(t, nil)) {
		t.Errorf("%s: list the type in the workload's table of layouts "+
			"(as package ycsb's layout_targets.go), or move the layout into the workload "+
			"on a primitive the target offers", d)
	}
}

// A type planted under internal/target with the methods of ycsb.DB, and
// not named by package ycsb, fails the rule.
func TestDuckTypeRuleCatchesAPlantedLayout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(root, "internal", "target", "kafka", "zz_planted.go")
	src := `package kafka

import "context"

type PlantedYCSB struct{}

func (PlantedYCSB) Init(context.Context, int) error                 { return nil }
func (PlantedYCSB) Insert(context.Context, []byte, [][]byte) error  { return nil }
func (PlantedYCSB) Update(context.Context, []byte, [][]byte) error  { return nil }
func (PlantedYCSB) Read(context.Context, []byte) ([][]byte, error)  { return nil, nil }
`
	got := duckTyped(typedPackages(t, map[string][]byte{planted: []byte(src)}))
	want := module + "/internal/target/kafka.PlantedYCSB implements " + module + "/internal/workload/ycsb.DB"
	for _, d := range got {
		if strings.HasPrefix(d, want) {
			return
		}
	}
	t.Errorf("the planted type was not caught; the rule found %q", got)
}
