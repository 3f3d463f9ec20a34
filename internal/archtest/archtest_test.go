// Package archtest keeps the arrows between storebench's layers one way:
// targets offer what their engine has and know no workload, workloads
// know no coordinator, CLI or output, the coordinator and the outputs
// know no CLI, and the building blocks (kv, measure) know none of them.
// It reads the import lines of every Go file under internal/, cmd/ and
// catalogs/ (test files and every build tag's files included), so an arrow in the
// wrong direction fails `make test` whichever tags built it.
package archtest

import (
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

// module is the import path of the module (see go.mod).
const module = "storebench"

// A rule forbids the files under From (a package path relative to the
// module, with its subpackages) to import any package under one of To,
// except those under one of Except. Tests, when set, applies the rule to
// test files too; unset, test files are exempt (a workload's test may
// render its sections through the report).
type rule struct {
	From   string
	To     []string
	Except []string
	Tests  bool
	Why    string
}

// outputs are the packages that show or write a run's results. A
// workload writes its own report sections through internal/report/section,
// the report's interface to the workloads, which is not an output.
var outputs = []string{"internal/progress", "internal/report", "internal/output"}

var sections = []string{"internal/report/section"}

var rules = []rule{
	{From: "internal/target", To: []string{"internal/workload"}, Tests: true,
		Why: "a target offers what its engine has (a KV handle, SQL, CQL, RESP, ...); each workload holds its own layouts for them"},
	{From: "internal/target", To: append([]string{"internal/coordinator", "internal/cli", "internal/worker"}, outputs...), Tests: true,
		Why: "a target is opened by the run; it does not drive one or show its results"},
	{From: "internal/workload", To: []string{"internal/coordinator", "internal/cli", "internal/worker"}, Tests: true,
		Why: "a workload is run by the coordinator (through the worker); it does not drive the run"},
	{From: "internal/workload", To: outputs, Except: sections,
		Why: "a workload returns its results (and its report sections through report/section); the outputs show them"},
	{From: "internal/coordinator", To: []string{"internal/cli"}, Tests: true,
		Why: "the CLI drives the coordinator"},
	{From: "internal/coordinator", To: outputs,
		Why: "the coordinator emits events; the outputs (console, results, report) take them"},
	{From: "internal/progress", To: []string{"internal/coordinator", "internal/cli", "internal/target", "internal/workload"}, Tests: true,
		Why: "an output takes the run's events; it does not reach back into the run"},
	{From: "internal/report", To: []string{"internal/coordinator", "internal/cli"},
		Why: "an output takes the run's events and results; it does not reach back into the run"},
	{From: "internal/output", To: []string{"internal/coordinator", "internal/cli", "internal/target", "internal/workload", "internal/worker"}, Tests: true,
		Why: "an output takes the run's events and results; it does not reach back into the run"},
	{From: "internal/event", To: []string{"internal/coordinator", "internal/cli", "internal/output", "internal/progress", "internal/report"}, Tests: true,
		Why: "events are plain data the coordinator emits and the outputs take"},
	{From: "internal/kv", To: []string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli"}, Tests: true,
		Why: "package kv is the engines' interface, below targets and workloads"},
	{From: "internal/measure", To: []string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli"}, Tests: true,
		Why: "measurement is a building block, below targets and workloads"},
	{From: "internal/machine", To: append([]string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli", "internal/worker"}, outputs...), Tests: true,
		Why: "a machine shape is a building block (cgroups for a process tree); the coordinator places its processes there"},
	{From: "internal/server", To: append([]string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli", "internal/worker",
		"internal/results", "internal/sweep", "internal/seedcmp", "internal/cost", "internal/shapes"}, outputs...), Tests: true,
		Why: "a managed server is installed, started and stopped for a target; it knows no run, workload, result or output"},
	{From: "internal/results", To: append([]string{"internal/server", "internal/target", "internal/workload", "internal/coordinator", "internal/cli", "internal/worker",
		"internal/runner", "internal/sweep", "internal/seedcmp", "internal/cost", "internal/shapes"}, outputs...), Tests: true,
		Why: "results are the run's data (measure's figures, the study it ran); the run writes them and the outputs, comparisons and models read them"},
	{From: "internal/study", To: []string{"internal"}, Except: []string{"internal/study", "internal/redact"}, Tests: true,
		Why: "a study is the plan everything else reads; it reads only its YAML (and redact for what it prints)"},
	{From: "internal/runner", To: append([]string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli", "internal/worker",
		"internal/results", "internal/server", "internal/sweep"}, outputs...), Tests: true,
		Why: "the runner drives the operations a workload gives it and measures them; it knows no workload, target or result"},
	{From: "internal/sweep", To: append([]string{"internal/target", "internal/coordinator", "internal/cli", "internal/worker", "internal/server"}, outputs...), Tests: true,
		Why: "a sweep expands a workload's steps and searches a rate; the coordinator runs them and the outputs show them"},
	{From: "internal/seedcmp", To: append([]string{"internal/target", "internal/coordinator", "internal/cli", "internal/worker", "internal/server", "internal/sweep"}, outputs...), Except: sections, Tests: true,
		Why: "a seed comparison reads results (and formats its cells through report/section); the report shows it"},
	{From: "internal/seedcmp", To: []string{"internal/workload"},
		Why: "a seed comparison reads results, not workloads (its tests register them to look up their sections)"},
	{From: "internal/cost", To: append([]string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli", "internal/worker",
		"internal/server", "internal/sweep", "internal/seedcmp"}, outputs...), Tests: true,
		Why: "the cost model projects results onto machine shapes and catalogs; the CLI, the coordinator and seedcmp use it"},
	{From: "internal/shapes", To: append([]string{"internal/target", "internal/workload", "internal/coordinator", "internal/cli", "internal/worker",
		"internal/server", "internal/sweep", "internal/seedcmp", "internal/cost"}, outputs...), Tests: true,
		Why: "a result's shapes are read from results alone; the cost model and the report use them"},
	{From: "catalogs", To: []string{"internal", "cmd", "studies"}, Tests: true,
		Why: "the machine catalogs are embedded data; the cost model reads them"},
	{From: "cmd/storebench", To: []string{"internal/workload"}, Except: []string{"internal/workload/all"},
		Why: "the binary links its workloads through internal/workload/all and runs their helper processes through internal/reexec; a new workload needs no edit to main"},
	{From: "internal/reexec", To: []string{"internal", "cmd", "catalogs"}, Except: []string{"internal/reexec"}, Tests: true,
		Why: "the helper-process registry sits below every package that starts a helper (workloads among them), so it imports none of storebench"},
}

// knownWrong lists the imports that break a rule today, each by file
// (relative to the module root) and imported package. The list only
// shrinks: a file here that no longer has the import fails the test too,
// so that its line is deleted with the fix. Nothing may be added.
var knownWrong = map[string][]string{}

// under reports whether package path p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// fileImports returns, for every Go file under the module's internal/,
// cmd/ and catalogs/, the module packages it imports (relative to the
// module root).
func fileImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, top := range []string{"internal", "cmd", "catalogs"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || (strings.HasPrefix(n, ".") && path != root) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			for _, s := range f.Imports {
				p, err := strconv.Unquote(s.Path.Value)
				if err != nil {
					return err
				}
				if under(p, module) {
					out[rel] = append(out[rel], strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// moduleRoot is the directory of go.mod, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// wrongArrows returns the imports of files that break a rule: file ->
// imported packages, each once, sorted, and why.
func wrongArrows(files map[string][]string) (map[string][]string, map[string]string) {
	wrong := map[string][]string{}
	why := map[string]string{}
	for file, imps := range files {
		dir := filepath.ToSlash(filepath.Dir(file))
		test := strings.HasSuffix(file, "_test.go")
		for _, r := range rules {
			if !under(dir, r.From) || (test && !r.Tests) {
				continue
			}
			for _, imp := range imps {
				if slices.ContainsFunc(r.Except, func(e string) bool { return under(imp, e) }) {
					continue
				}
				for _, to := range r.To {
					if under(imp, to) && !slices.Contains(wrong[file], imp) {
						wrong[file] = append(wrong[file], imp)
						why[file+" -> "+imp] = r.Why
					}
				}
			}
		}
	}
	for f := range wrong {
		slices.Sort(wrong[f])
	}
	return wrong, why
}

// TestImportDirection fails on an import that runs against the layers'
// direction and is not on the known-wrong list, and on a known-wrong
// entry that is no longer there (delete its line).
func TestImportDirection(t *testing.T) {
	files := fileImports(t, moduleRoot(t))
	if len(files) < 100 {
		t.Fatalf("read the imports of only %d files: is the module root right?", len(files))
	}
	wrong, why := wrongArrows(files)
	for file, imps := range wrong {
		for _, imp := range imps {
			if !slices.Contains(knownWrong[file], imp) {
				t.Errorf("%s imports %s: wrong direction (%s)", file, imp, why[file+" -> "+imp])
			}
		}
	}
	for file, imps := range knownWrong {
		for _, imp := range imps {
			if !slices.Contains(wrong[file], imp) {
				t.Errorf("%s no longer imports %s: delete it from knownWrong in archtest_test.go", file, imp)
			}
		}
	}
}

// TestRulesCatchAWrongArrow checks the checker: a made-up target file that
// imports a workload, and a workload file that imports the coordinator,
// are caught; the arrows the other way are not.
func TestRulesCatchAWrongArrow(t *testing.T) {
	wrong, _ := wrongArrows(map[string][]string{
		"internal/target/newdb/layout.go":     {"internal/kv", "internal/workload/ledger"},
		"internal/workload/newwl/newwl.go":    {"internal/target", "internal/coordinator"},
		"internal/coordinator/coordinator.go": {"internal/target", "internal/workload"},
		"internal/kv/kv.go":                   {"internal/target"},
	})
	want := map[string][]string{
		"internal/target/newdb/layout.go":  {"internal/workload/ledger"},
		"internal/workload/newwl/newwl.go": {"internal/coordinator"},
		"internal/kv/kv.go":                {"internal/target"},
	}
	if len(wrong) != len(want) {
		t.Errorf("wrong arrows %v, want %v", wrong, want)
	}
	for f, imps := range want {
		if !slices.Equal(wrong[f], imps) {
			t.Errorf("%s: wrong arrows %v, want %v", f, wrong[f], imps)
		}
	}
}

// TestNewRulesCatchAWrongArrow checks the rules for the managed servers,
// results, study and seedcmp: a server importing the report and results
// importing server/proc are caught (issue 37: both compiled and passed
// before these rules); the arrows they may have are not.
func TestNewRulesCatchAWrongArrow(t *testing.T) {
	wrong, _ := wrongArrows(map[string][]string{
		"internal/server/redis/report.go":     {"internal/server/proc", "internal/kv", "internal/report"},
		"internal/results/unfinished.go":      {"internal/measure/procstat", "internal/study", "internal/server/proc"},
		"internal/study/study.go":             {"internal/redact", "internal/sysinfo"},
		"internal/seedcmp/against.go":         {"internal/report/section", "internal/cost", "internal/workload"},
		"internal/seedcmp/studies_test.go":    {"internal/report/section", "internal/workload/all"},
		"internal/sweep/plan.go":              {"internal/workload", "internal/results", "internal/study"},
		"internal/server/redis/redis_test.go": {"internal/server/servertest"},
	})
	want := map[string][]string{
		"internal/server/redis/report.go": {"internal/report"},
		"internal/results/unfinished.go":  {"internal/server/proc"},
		"internal/study/study.go":         {"internal/sysinfo"},
		"internal/seedcmp/against.go":     {"internal/workload"},
	}
	if len(wrong) != len(want) {
		t.Errorf("wrong arrows %v, want %v", wrong, want)
	}
	for f, imps := range want {
		if !slices.Equal(wrong[f], imps) {
			t.Errorf("%s: wrong arrows %v, want %v", f, wrong[f], imps)
		}
	}
}

// TestHelperRulesCatchAWrongArrow checks the rules of issue 37's helper
// registry: cmd/storebench naming a workload (as it named durability to
// start its engine) and internal/reexec importing storebench are caught;
// the binary's registries (workload/all, reexec) and the test files' own
// workloads are not.
func TestHelperRulesCatchAWrongArrow(t *testing.T) {
	wrong, _ := wrongArrows(map[string][]string{
		"cmd/storebench/main.go":                 {"internal/cli", "internal/reexec", "internal/workload/all", "internal/workload/durability"},
		"cmd/storebench/results_test.go":         {"internal/workload/roots"},
		"internal/reexec/reexec.go":              {"internal/kv"},
		"internal/reexec/reexec_test.go":         {"internal/workload"},
		"internal/workload/durability/engine.go": {"internal/reexec", "internal/target"},
	})
	want := map[string][]string{
		"cmd/storebench/main.go":         {"internal/workload/durability"},
		"internal/reexec/reexec.go":      {"internal/kv"},
		"internal/reexec/reexec_test.go": {"internal/workload"},
	}
	if len(wrong) != len(want) {
		t.Errorf("wrong arrows %v, want %v", wrong, want)
	}
	for f, imps := range want {
		if !slices.Equal(wrong[f], imps) {
			t.Errorf("%s: wrong arrows %v, want %v", f, wrong[f], imps)
		}
	}
}
