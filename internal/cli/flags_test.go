package cli

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	costmodel "storebench/internal/cost"
	"storebench/internal/event"
	"storebench/internal/output"
)

// tableProblems lists what is wrong with a flag table for the commands
// cmds: a flag a command would bind twice, a command that does not
// exist, a default of no flag type, a flag without help, one flag
// written twice (same name, same help: one entry with both commands).
func tableProblems(defs []flagDef, cmds []string) []string {
	var bad []string
	bound := map[string]bool{} // "cmd --name"
	helps := map[string]bool{} // "name\thelp"
	for i := range defs {
		d := &defs[i]
		if d.help == "" {
			bad = append(bad, "--"+d.name+": no help")
		}
		if helps[d.name+"\t"+d.help] {
			bad = append(bad, "--"+d.name+": declared twice with the same help: one entry, with every command that takes it")
		}
		helps[d.name+"\t"+d.help] = true
		func() {
			defer func() {
				if r := recover(); r != nil {
					bad = append(bad, fmt.Sprint(r))
				}
			}()
			d.bind(flag.NewFlagSet("t", flag.ContinueOnError), d.help)
		}()
		for _, c := range d.cmds {
			if !slices.Contains(cmds, c) {
				bad = append(bad, "--"+d.name+": no command "+c)
			}
			if bound[c+" --"+d.name] {
				bad = append(bad, "--"+d.name+": bound twice by "+c)
			}
			bound[c+" --"+d.name] = true
		}
		for c := range d.with {
			if !slices.Contains(d.cmds, c) {
				bad = append(bad, "--"+d.name+": with names "+c+", which does not take it")
			}
		}
		for _, c := range d.hidden {
			if !slices.Contains(d.cmds, c) {
				bad = append(bad, "--"+d.name+": hidden in "+c+", which does not take it")
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func commandNames(hidden bool) []string {
	var out []string
	for _, c := range commands() {
		if hidden || !c.hidden {
			out = append(out, c.name)
		}
	}
	return out
}

// Every flag is declared once, for commands that exist, with a type and
// a help; no command takes one name twice.
func TestFlagTableDeclaresEachFlagOnce(t *testing.T) {
	if bad := tableProblems(flagTable, commandNames(false)); len(bad) > 0 {
		t.Errorf("the flag table:\n  %s", strings.Join(bad, "\n  "))
	}
}

// The check above catches a planted duplicate, a flag bound twice, an
// unknown command and a default of no flag type.
func TestFlagTableCheckCatchesPlantedMistakes(t *testing.T) {
	planted := []flagDef{
		{name: "out", def: "", help: "where", cmds: in("run")},
		{name: "out", def: "", help: "where it goes", cmds: in("run")},
		{name: "ladder", def: "", help: "sizes", cmds: in("run")},
		{name: "ladder", def: "", help: "sizes", cmds: in("seed")},
		{name: "x", def: "", help: "x", cmds: in("nosuch")},
		{name: "y", def: uint8(1), help: "y", cmds: in("run")},
		{name: "z", def: false, cmds: in("run"), hidden: in("seed")},
	}
	got := strings.Join(tableProblems(planted, commandNames(false)), "\n")
	for _, want := range []string{"--out: bound twice by run", "--ladder: declared twice with the same help", "--x: no command nosuch", "flag --y: default", "--z: no help", "--z: hidden in seed"} {
		if !strings.Contains(got, want) {
			t.Errorf("planted mistakes: %q not found in\n%s", want, got)
		}
	}
}

// helpFlags are the flags a --help lists, by name.
var helpFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)

// Each command's --help lists every flag the table gives it (but those
// hidden in it), each with its help, and no other; and the command
// parses each of them, hidden ones included: it binds its flags from
// the table, and only from it.
func TestEveryCommandBindsItsTableFlags(t *testing.T) {
	for _, c := range commands() {
		if c.hidden {
			continue // worker, server-main: no flags, and not to be run here
		}
		if err := binds(c.name); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		stdout, stderr, code := call(c.run, "--help")
		if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "Usage: storebench "+c.name) {
			t.Errorf("%s --help: exit %d, stderr %q, stdout %.80q", c.name, code, stderr, stdout)
			continue
		}
		_, listed, _ := strings.Cut(stdout, "\nFlags:\n")
		var got, want []string
		for _, m := range helpFlag.FindAllStringSubmatch(listed, -1) {
			got = append(got, m[1])
		}
		for _, d := range flagsOf(c.name) {
			if !slices.Contains(d.hidden, c.name) {
				want = append(want, d.name)
				if !strings.Contains(listed, "\t"+d.helpIn(c.name)) {
					t.Errorf("%s --help: --%s without its help %q", c.name, d.name, d.helpIn(c.name))
				}
			}
			// A flag given before --help is parsed: the command binds it.
			arg := "--" + d.name + "=" + sampleValue(d)
			if _, stderr, code := call(c.run, arg, "--help"); code != exitOK {
				t.Errorf("%s %s --help: exit %d: %s", c.name, arg, code, stderr)
			}
		}
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s --help lists flags %v; the table gives it %v", c.name, got, want)
		}
	}
}

// binds binds cmd's flags from the table: a flag bound twice is the
// flag package's panic, returned.
func binds(cmd string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	newFlags(cmd, "", io.Discard)
	return nil
}

// sampleValue is a value the flag's type parses.
func sampleValue(d *flagDef) string {
	switch d.def.(type) {
	case bool:
		return "true"
	case int, int64:
		return "1"
	case float64:
		return "0.5"
	}
	return "x"
}

// readsByFile are the flags each source file of the package reads
// through cmdFlags (f.str("out"), fs.on("quiet"), ...), and whether it
// applies the study overrides (f.override()).
func readsByFile(t *testing.T) (map[string][]string, map[string]bool, map[string]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	reads, overrides, cmdFile := map[string][]string{}, map[string]bool{}, map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "flags.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var fn string
			switch x := call.Fun.(type) {
			case *ast.SelectorExpr:
				fn = x.Sel.Name
			case *ast.Ident:
				fn = x.Name
			}
			var arg string
			if len(call.Args) > 0 {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					arg, _ = strconv.Unquote(lit.Value)
				}
			}
			switch fn {
			case "str", "num", "float", "on", "list", "given":
				if arg != "" {
					reads[name] = append(reads[name], arg)
				}
			case "override":
				overrides[name] = true
			case "outputValues":
				// The optional outputs' flags, read through their registry.
				reads[name] = append(reads[name], outputFlagNames()...)
			case "newFlags":
				cmdFile[arg] = name
			}
			return true
		})
	}
	return reads, overrides, cmdFile
}

// Each command reads every flag the table gives it, in the file that
// binds its flags, and that file reads no flag the table gives none of
// its commands: a flag declared for a command and never read (or read
// where no command takes it) fails here, not when someone passes it.
func TestCommandsReadTheirFlags(t *testing.T) {
	reads, overrides, cmdFile := readsByFile(t)
	taken := map[string][]string{} // file → the flags of its commands
	for _, c := range commandNames(false) {
		file, ok := cmdFile[c]
		if !ok {
			t.Errorf("%s: no newFlags(%q, ...) call: it does not bind its flags from the table", c, c)
			continue
		}
		for _, d := range flagsOf(c) {
			taken[file] = append(taken[file], d.name)
			read := slices.Contains(reads[file], d.name) || (d.override != nil && overrides[file])
			if !read {
				t.Errorf("%s (%s) never reads --%s, which the flag table gives it", c, file, d.name)
			}
		}
	}
	for file, names := range reads {
		for _, r := range names {
			if !slices.Contains(taken[file], r) {
				t.Errorf("%s reads --%s, which the flag table gives none of its commands", file, r)
			}
		}
	}
}

// Good flags of run parse into the values given, flags after the study
// too, and override exactly the parts of the study they name.
func TestRunFlagsParseAndOverrideTheStudy(t *testing.T) {
	var stderr bytes.Buffer
	f := newFlags("run", runUsage, &stderr)
	out := t.TempDir()
	code, stop := f.parse([]string{"--ladder", "10,1e3", "ledger", "--targets=pebble,bbolt", "--set", "ledger.selects=5", "--set", "ledger.payload=64",
		"--concurrency", "8", "--seed", "7", "--durability", "async", "--time-limit", "30m", "--quiet", "--out", out,
		"--export", "csv=" + out, "--profile", "cpu,block", "--allow-nonempty", "redis", "--keep-data"}, &stderr)
	if stop || stderr.Len() > 0 {
		t.Fatalf("parse: exit %d, %s", code, stderr.String())
	}
	if f.NArg() != 1 || f.Arg(0) != "ledger" || f.str("out") != out || !f.on("quiet") || !f.on("keep-data") || f.on("accept-estimate") ||
		!slices.Equal(f.list("export"), []string{"csv=" + out}) || !slices.Equal(f.list("allow-nonempty"), []string{"redis"}) {
		t.Errorf("parsed: args %v, out %q, quiet %v, keep %v, export %v", f.Args(), f.str("out"), f.on("quiet"), f.on("keep-data"), f.list("export"))
	}
	o := f.override()
	if o.Ladder == nil || *o.Ladder != "10,1e3" || o.Targets == nil || *o.Targets != "pebble,bbolt" || *o.Concurrency != 8 || *o.Seed != 7 ||
		*o.Durability != "async" || *o.TimeLimit != "30m" || !slices.Equal(o.Set, []string{"ledger.selects=5", "ledger.payload=64"}) {
		t.Errorf("override %+v", o)
	}
	// Flags not given leave the study's values: no override at all.
	if o.Workers != nil || o.Crash != nil || o.Hosts != nil || o.ClientCPUs != nil || o.SSHIdentity != nil || o.Scale != "" || o.Machines != nil || o.SSHOptions != nil {
		t.Errorf("flags not given override the study: %+v", o)
	}
	r, err := runFromFlags(f)
	if err != nil {
		t.Fatal(err)
	}
	s := r.s
	if len(s.Ladder) != 2 || s.Ladder[1] != 1000 || len(s.Targets) != 2 || s.Targets[1].Name != "bbolt" || s.Concurrency != 8 || s.Seed != 7 || s.Durability != "async" {
		t.Errorf("study after the flags: ladder %v, %d targets, concurrency %d, seed %d, durability %s", s.Ladder, len(s.Targets), s.Concurrency, s.Seed, s.Durability)
	}
	if !slices.Equal(r.kinds, []string{"cpu", "block"}) || len(r.outs) != 1 || r.outs[0].def.Flag != "export" || r.outs[0].value != "csv="+out ||
		r.out != out || !r.quiet || !r.keep || r.accept || r.scale != "" {
		t.Errorf("run plan: %+v", r)
	}
}

// A flag given empty or zero is given: it overrides (and is then
// refused by the study), it is never "the study's".
func TestRunFlagsGivenEmptyStillOverride(t *testing.T) {
	f := newFlags("run", runUsage, &bytes.Buffer{})
	if _, stop := f.parse([]string{"ledger", "--targets=", "--workers", "0", "--scale", "seed", "--machine", "cpus=1", "--machine", "memory=1GiB"}, &bytes.Buffer{}); stop {
		t.Fatal("parse stopped")
	}
	o := f.override()
	if o.Targets == nil || *o.Targets != "" || o.Workers == nil || *o.Workers != 0 || o.Scale != "seed" || !slices.Equal(o.Machines, []string{"cpus=1", "memory=1GiB"}) {
		t.Errorf("override %+v", o)
	}
	if !f.given("targets") || f.given("ladder") {
		t.Errorf("given: targets %v, ladder %v", f.given("targets"), f.given("ladder"))
	}
}

// The other commands' flags parse into their values, defaults where not
// given.
func TestOtherCommandsFlagsParse(t *testing.T) {
	parsed := func(cmd string, args ...string) *cmdFlags {
		t.Helper()
		var e bytes.Buffer
		f := newFlags(cmd, "Usage: storebench "+cmd, &e)
		if code, stop := f.parse(args, &e); stop {
			t.Fatalf("%s %v: exit %d: %s", cmd, args, code, e.String())
		}
		return f
	}
	f := parsed("seed", "000", "--run", "--out", "d", "--yes", "--expect", "holds", "--expect", "insert=holds", "--set", "ledger.selects=5")
	if f.Arg(0) != "000" || !f.on("run") || f.str("out") != "d" || !f.on("yes") || f.on("accept-estimate") ||
		!slices.Equal(f.list("expect"), []string{"holds", "insert=holds"}) || !slices.Equal(f.list("set"), []string{"ledger.selects=5"}) {
		t.Errorf("seed: %v", f.vals)
	}
	if f := parsed("seed"); f.str("out") != "results" || f.on("run") {
		t.Errorf("seed defaults: out %q, run %v", f.str("out"), f.on("run"))
	}
	f = parsed("server", "start", "redis", "--port", "7000")
	if f.str("durability") != "sync" || f.given("durability") || f.num("port") != 7000 || f.on("uri-only") || f.Arg(1) != "redis" {
		t.Errorf("server: durability %q (given %v), port %d", f.str("durability"), f.given("durability"), f.num("port"))
	}
	if f := parsed("server", "start", "redis", "--durability", "async", "--uri-only"); f.str("durability") != "async" || !f.given("durability") || !f.on("uri-only") {
		t.Errorf("server --durability async: %q given %v", f.str("durability"), f.given("durability"))
	}
	o, err := overheadFlags(parsed("overhead"))
	if err != nil || o.keys != 100000 || o.gets != 500000 || o.rounds != 7 || o.target != "pebble" || o.workload != "get" || !slices.Equal(o.levels, []int{1}) {
		t.Errorf("overhead defaults: %+v %v", o, err)
	}
	o, err = overheadFlags(parsed("overhead", "--concurrency", "1,2, 8", "--workload", "ycsb-c", "--keys", "10", "--gets", "20", "--rounds", "3"))
	if err != nil || o.keys != 10 || o.gets != 20 || o.rounds != 3 || o.workload != "ycsb-c" || !slices.Equal(o.levels, []int{1, 2, 8}) {
		t.Errorf("overhead: %+v %v", o, err)
	}
	c := costFlagsOf(parsed("cost", "RUN"))
	if c.replicas != 1 || c.maxMachines != costmodel.DefaultMaxMachines || c.utilisation != costmodel.DefaultUtilisation || c.catalogs != nil || c.asJSON {
		t.Errorf("cost defaults: %+v", c)
	}
	c = costFlagsOf(parsed("cost", "RUN", "--load", "5e4/s", "--data", "1e9", "--mix", "a=1", "--growth", "5%", "--p99", "5ms", "--replicas", "3",
		"--max-machines", "9", "--utilisation", "0.5", "--catalog", "aws", "--catalog", "mine.yaml", "--json"))
	want := costFlags{load: "5e4/s", data: "1e9", mix: "a=1", growth: "5%", p99: "5ms", replicas: 3, maxMachines: 9, utilisation: 0.5, catalogs: multiFlag{"aws", "mine.yaml"}, asJSON: true}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("cost: %+v, want %+v", c, want)
	}
	f = parsed("compare", "A", "--targets", "a,b", "--html", "x.html", "--force")
	if f.str("targets") != "a,b" || f.str("html") != "x.html" || !f.on("force") {
		t.Errorf("compare: %v", f.vals)
	}
	f = parsed("report", "RUN", "--constraints", "c.yaml", "--html", "r.html", "--out", "o")
	if f.str("constraints") != "c.yaml" || f.str("html") != "r.html" || f.str("out") != "o" {
		t.Errorf("report: %v", f.vals)
	}
}

// Reading a flag the table does not give the command is a bug, said as
// such.
func TestReadingAnUnboundFlagPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "no flag --ladder") {
			t.Errorf("recovered %v, want a panic naming --ladder", r)
		}
	}()
	newFlags("compare", compareUsage, &bytes.Buffer{}).str("ladder")
}

// Bad command lines are one clear line on stderr, nothing on stdout, and
// exit 2 (bad usage: nothing ran), whatever the command: an unknown
// flag, a value its type does not parse, a bad ladder, machine shape or
// --set, flags that conflict.
func TestBadFlagsAreOneLineAndExit2(t *testing.T) {
	run := copyRun(t)
	for _, c := range []struct {
		cmd  func([]string, io.Writer, io.Writer) int
		args []string
		want string
	}{
		{cmdRun, []string{"ledger", "--nosuch"}, "storebench run: flag provided but not defined: -nosuch (try `storebench run --help`)"},
		{cmdRun, []string{"ledger", "--concurrency", "x"}, `invalid value "x" for flag -concurrency`},
		{cmdRun, []string{"ledger", "--quiet=maybe"}, `invalid boolean value "maybe" for -quiet`},
		{cmdRun, []string{}, "run needs exactly one study name or file"},
		{cmdRun, []string{"ledger", "ycsb"}, "run needs exactly one study name or file"},
		{cmdRun, []string{"nosuchstudy"}, "nosuchstudy: no built-in study or file of that name"},
		{cmdRun, []string{"ledger", "--ladder", "abc"}, `--ladder abc: "abc" is not a count`},
		{cmdRun, []string{"ledger", "--ladder", "0"}, "--ladder 0: 0: a data size is a whole number from 1 to 1e9"},
		{cmdRun, []string{"ledger", "--ladder="}, "--ladder '': empty"},
		{cmdRun, []string{"ledger", "--machine", "cpus=abc"}, `--machine cpus=abc: machine shape "cpus=abc": cpus: "abc" is not a number`},
		{cmdRun, []string{"ledger", "--machine", "bogus=1"}, `unknown key "bogus"`},
		{cmdRun, []string{"ledger", "--machine", "none", "--machine", "cpus=1"}, "--machine none runs on this machine as it is: it goes alone"},
		{cmdRun, []string{"ledger", "--set", "nosuch"}, "--set nosuch: want workload.param=value"},
		{cmdRun, []string{"ledger", "--set", "ledger.nosuch=1"}, "--set ledger.nosuch=1: unknown field"},
		{cmdRun, []string{"ledger", "--scale="}, "--scale: empty: name one of the study's scales (seed)"},
		{cmdRun, []string{"ledger", "--profile", "heap"}, `--profile "heap": "heap" is not one of cpu,mutex,block`},
		{cmdRun, []string{"ledger", "--profile="}, "--profile: empty"},
		{cmdRun, []string{"ledger", "--metrics", ":9464"}, "would serve every interface"},
		{cmdRun, []string{"ledger", "--export", "xml=/tmp"}, `"xml" is not one of csv, jsonl`},
		{cmdRun, []string{"ledger", "--targets="}, "--targets '': empty"},
		{cmdRun, []string{"ledger", "--workers", "0"}, "--workers 0: want 1..256"},
		{cmdRun, []string{"ledger", "--durability", "maybe"}, `--durability: "maybe": want sync, async or default`},
		{cmdRun, []string{"ledger", "--out="}, "--out: empty"},
		{cmdSeed, []string{"--out", "x"}, "seed: --out without --run"},
		{cmdSeed, []string{"000", "--yes", "--expect", "holds"}, "seed: --expect, --yes without --run"},
		{cmdSeed, []string{"000", "--run", "--expect", "maybe"}, `--expect "maybe": want holds`},
		{cmdSeed, []string{"--run"}, "seed --run needs a seed's number"},
		{cmdSeed, []string{"1", "2"}, "seed takes one seed's number, not 2 arguments"},
		{cmdServer, []string{"start", "redis", "--port", "70000"}, "--port 70000: want 1..65535"},
		{cmdServer, []string{"start", "redis", "--durability", "maybe"}, `--durability: "maybe": want sync or async`},
		{cmdServer, []string{"redis"}, "server redis: say what to do first"},
		{cmdOverhead, []string{"--rounds", "0"}, "--keys, --gets and --rounds must be at least 1"},
		{cmdOverhead, []string{"--concurrency", "1,x"}, `--concurrency "1,x": "x" is not a number of goroutines`},
		{cmdOverhead, []string{"--workload", "z"}, `--workload "z": want get or ycsb-c`},
		{cmdOverhead, []string{"--target", "nosuch"}, `unknown target "nosuch"`},
		{cmdCompare, []string{run, run, "--targets", "a,b"}, "compare --targets A,B compares two targets of one run (storebench compare RUN --targets A,B); given 2"},
		{cmdCompare, []string{run}, "compare takes two runs (RUN_A RUN_B, several runs of a side comma-separated) or one run and --targets A,B; given 1"},
		{cmdCompare, []string{"--force=maybe", run, run}, `invalid boolean value "maybe" for -force`},
		{cmdCost, []string{"--replicas", "x"}, `invalid value "x" for flag -replicas`},
		{cmdCost, []string{"--load", "5e4/s"}, "cost needs a run directory"},
		{cmdReport, []string{run, "--html", "x.html"}, "--html goes with --constraints"},
		{cmdList, []string{"--x"}, "storebench list: flag provided but not defined: -x"},
		{cmdVersion, []string{"--x"}, "storebench version: flag provided but not defined: -x"},
	} {
		stdout, stderr, code := call(c.cmd, c.args...)
		oneLine(t, fmt.Sprint(c.args), stderr, code, c.want)
		if stdout != "" {
			t.Errorf("%v: printed on stdout: %.200q", c.args, stdout)
		}
	}
}

// The exit codes are the ones documented: run's and seed's --help and
// the README's table list the codes of the constants, and only them.
func TestExitCodesAreDocumented(t *testing.T) {
	codes := func(text string) []int {
		_, list, _ := strings.Cut(text, "\nExit status:\n")
		list, _, _ = strings.Cut(list, "\n\n")
		var out []int
		for _, m := range regexp.MustCompile(`(?m)^  (\d+) `).FindAllStringSubmatch(list, -1) {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
		return out
	}
	if got, want := codes(runUsage), []int{exitOK, exitFailed, exitUsage, exitPartial, exitInterrupted}; !slices.Equal(got, want) {
		t.Errorf("run --help documents exit codes %v, want %v", got, want)
	}
	all := []int{exitOK, exitFailed, exitUsage, exitPartial, exitNotHeld, exitInterrupted}
	if got := codes(seedUsage); !slices.Equal(got, all) {
		t.Errorf("seed --help documents exit codes %v, want %v", got, all)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| `).FindAllStringSubmatch(string(readme), -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	if !slices.Equal(got, all) {
		t.Errorf("README documents exit codes %v, want %v", got, all)
	}
	if !strings.Contains(string(readme), fmt.Sprintf("| %d | bad command line or study: nothing ran |", exitUsage)) {
		t.Errorf("README does not document exit %d as bad usage", exitUsage)
	}
}

// Issue 37: no function of the command line above 80 lines or 6
// parameters (the repository's bound, internal/archtest, is 100).
func TestCLIFunctionsStayShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			params := 0
			for _, p := range fn.Type.Params.List {
				params += max(1, len(p.Names))
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > 80 || params > 6 {
				t.Errorf("%s:%s: %d lines, %d parameters; split it (at most 80 lines, 6 parameters)", name, fn.Name.Name, lines, params)
			}
		}
	}
}

// outputFlagNames are the flags of the registered outputs (package
// output), which run.go reads through outputValues.
func outputFlagNames() []string {
	var n []string
	for _, d := range outputFlags(output.Defs()) {
		n = append(n, d.name)
	}
	return n
}

// An output's flag is bound by its kind (one value, repeatable, a
// switch) and read back as the values its Open is given.
func TestOutputFlagsBindEachKind(t *testing.T) {
	open := func(string) (event.Output, string, error) { return nil, "", nil }
	defs := []output.Def{
		{Flag: "x-one", Help: "h", Open: open},
		{Flag: "x-many", Help: "h", Repeat: true, Open: open},
		{Flag: "x-switch", Help: "h", Switch: true, Open: open},
		{Flag: "x-off", Help: "h", Switch: true, Open: open},
		{Flag: "x-absent", Help: "h", Open: open},
	}
	saved := flagTable
	t.Cleanup(func() { flagTable = saved })
	for _, d := range outputFlags(defs) {
		d.cmds = in("x-test")
		flagTable = append(slices.Clip(flagTable), d)
	}
	f := newFlags("x-test", "", &bytes.Buffer{})
	if err := f.Parse([]string{"--x-one", "a", "--x-many", "b", "--x-many", "c", "--x-switch"}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"x-one": {"a"}, "x-many": {"b", "c"}, "x-switch": {"true"}}
	for _, d := range defs {
		if got := outputValues(f, d); !slices.Equal(got, want[d.Flag]) {
			t.Errorf("--%s: values %q, want %q", d.Flag, got, want[d.Flag])
		}
	}
}
