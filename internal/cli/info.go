package cli

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	costmodel "storebench/internal/cost"
	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/machine"
	"storebench/internal/powerfs"
	"storebench/internal/redact"
	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/safefile"
	"storebench/internal/server"
	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/target"
	"storebench/internal/worker"
	"storebench/internal/workload"
)

const listUsage = `
Usage: storebench list

Lists the built-in studies, the workloads and the targets. For each target
it says whether this binary can run it and, if not, exactly why and what
installs it; a server target no package ships a server of (Aerospike)
is by URI only, and SERVERS says so. PARAMETERS gives the range of every numeric parameter of
every workload, its sweep and its faults: a value outside it is refused
before anything runs (exit 2). CRASH TESTS says whether the durability
workload's power-loss crashes can run here (storebench's own FUSE file
system: /dev/fuse and root) and, if not, why. MACHINE SHAPES says which
limits of --machine this machine can enforce (cgroup v1, root) and why
not the others: a shape with one it cannot enforce is n/a, never run
without it. CATALOGS are the machine catalogs storebench cost prices
from.

Example:
  storebench list
`

func cmdList(args []string, stdout, stderr io.Writer) int {
	if code, stop := newFlags("list", listUsage, stderr).parse(args, stdout); stop {
		return code
	}
	fmt.Fprintln(stdout, "STUDIES")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, name := range study.Builtin() {
		s, err := study.Load(name)
		title := ""
		if err == nil {
			title = s.Title
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, title)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nWORKLOADS")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, w := range workload.All() {
		fmt.Fprintf(tw, "  %s\t%s\n", w.Name(), w.Describe())
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nTARGETS")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	missing := 0
	for _, i := range target.All() {
		status := "available"
		if i.Open == nil {
			status = "MISSING: " + i.Unavailable
			missing++
		} else if !i.Embedded() {
			status = "by URI (" + strings.Join(i.Schemes, "://, ") + "://)"
			if i.ByURIOnly() && i.NoServer != "" {
				status = byURIOnly(i)
			} else if i.Server != "" {
				srv, err := server.Lookup(i.Server)
				switch {
				case err != nil:
				case srv.Check() != nil:
					status += fmt.Sprintf(", or managed %s: not installed yet (installed on first use, or: storebench server install %s)", srv.Name(), srv.Name())
				default:
					status += ", or managed " + srv.Name()
				}
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", i.Name, i.Title, i.Kind, i.Version, status)
	}
	tw.Flush()
	if missing > 0 {
		fmt.Fprintf(stdout, "\n%d target(s) missing from this binary; `make build` enables every engine whose C library is installed.\n", missing)
	}
	writeMatrix(stdout)
	writeParams(stdout)
	fmt.Fprintln(stdout, "\nSERVERS (storebench installs, starts and stops them; see `storebench server --help`)")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, srv := range server.All() {
		status := "installed"
		if err := srv.Check(); err != nil {
			status = "not installed: " + err.Error()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", srv.Name(), srv.Title(), status)
	}
	tw.Flush()
	// The server targets no package ships a server of (Aerospike).
	for _, i := range target.All() {
		if i.ByURIOnly() && i.NoServer != "" {
			fmt.Fprintf(stdout, "  %s: %s\n", i.Title, byURIOnly(i))
		}
	}
	fmt.Fprintln(stdout, "\nCRASH TESTS (workload durability)")
	fmt.Fprintln(stdout, "  kill-9: available")
	if why := powerfs.Unavailable(); why != "" {
		fmt.Fprintf(stdout, "  power-loss: cannot run here: %s\n", why)
	} else {
		fmt.Fprintf(stdout, "  power-loss: available (powerfs, crash models: %s)\n", strings.Join(powerfs.Models, ", "))
	}
	fmt.Fprintf(stdout, "\nMACHINE SHAPES (--machine: the limits this machine can enforce on a target, for data under results/)\n  can enforce: %s\n", machine.Summary("results"))
	listCatalogs(stdout)
	return exitOK
}

// listCatalogs lists the built-in machine catalogs storebench cost and a
// study's sizing price from.
func listCatalogs(stdout io.Writer) {
	fmt.Fprintln(stdout, "\nCATALOGS (storebench cost --catalog NAME, a study's sizing.catalog; each line's source and date in catalogs/NAME.yaml)")
	cats, err := costmodel.Builtin()
	if err != nil {
		fmt.Fprintf(stdout, "  unreadable: %v\n", err)
		return
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, c := range cats {
		fmt.Fprintf(tw, "  %s\t%s\t%d machines\t%s\t%s\n", c.Name, c.Title, len(c.Machines), c.Currency, c.Date)
	}
	tw.Flush()
}

// byURIOnly is what `list` says of a server target storebench runs no
// server of: "by URI; no package ships its server
// (aerospike://host:port/namespace)".
func byURIOnly(i target.Info) string {
	return "by URI; " + i.WhyNoServer() + " (" + i.URIExample() + ")"
}

const reportUsage = `
Usage: storebench report RUN_DIR|RUN_DIR/results.json [--out DIR] [--constraints FILE [--html OUT]]

Re-renders report.md, report.html and the charts (charts/*.png) of a
finished (or partial) run from its results.json, and prints the Markdown.
Use it after upgrading storebench or to view a run again. A run that
never finished (storebench killed: its results.json still says
"running") is reported as interrupted, with the targets and steps it did
not finish; one still under way, as running.
A results.json without a study or targets is refused (exit 2), and so is
one that is not a regular file (a symbolic link, a FIFO, a device) or is
over 256 MiB. A charts/ that is a symbolic link is refused (exit 2); of
the PNGs in charts/ only those an earlier rendering wrote are deleted.

--out DIR writes the report's files to DIR (created if missing) instead
of the run directory: for a run directory that cannot be written (a
read-only copy or mount), which is otherwise refused with exit 2.

--constraints judges the run again under other constraints (a study file
with a constraints: section, or a YAML file of the constraints alone: ram,
disk, durability, p99, throughput, rank_by; see docs/reports.md). The
report is then printed (and written as HTML with --html, and its files
to DIR with --out) without touching the run directory.

Examples:
  storebench report results/ledger-20261122-101500
  storebench report results/ledger-20261122-101500 --constraints my-node.yaml --html judged.html
  storebench report /mnt/ro/ledger-20261122-101500 --out /tmp/ledger-report
`

func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("report", reportUsage, stderr)
	if code, stop := fs.parse(args, stdout); stop {
		return code
	}
	constraints, htmlOut, outDir := fs.str("constraints"), fs.str("html"), fs.str("out")
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "storebench: report needs one run directory (try `storebench report --help`)")
		return exitUsage
	}
	run, dir, err := readRun(fs.Arg(0))
	if err != nil {
		return fail(stderr, usagef("%v", err))
	}
	if constraints != "" {
		c, err := study.LoadConstraints(constraints)
		if err != nil {
			return fail(stderr, err)
		}
		phases := map[string]bool{}
		for _, t := range run.Targets {
			for _, s := range t.Steps {
				phases[s.Workload+"."+s.Phase] = true
			}
		}
		if err := (&study.Study{File: constraints, Constraints: c}).CheckFigures(phases); err != nil {
			return fail(stderr, err)
		}
		run.Constraints = c
		if outDir != "" {
			if code := writeReport(stderr, outDir, run, true); code != exitOK {
				return code
			}
		}
		if htmlOut != "" {
			if err := safefile.WriteFile(htmlOut, report.HTML(run, report.Charts(run)), 0o644); err != nil {
				return fail(stderr, usagef("--html %s: cannot write it: %v", htmlOut, pathErr(err)))
			}
		}
		return printOut(stdout, stderr, report.Markdown(run))
	}
	if htmlOut != "" {
		return fail(stderr, usagef("--html goes with --constraints (report.html is always written to the run directory)"))
	}
	to, chosen := dir, outDir != ""
	if chosen {
		to = outDir
	}
	if code := writeReport(stderr, to, run, chosen); code != exitOK {
		return code
	}
	return printOut(stdout, stderr, report.Markdown(run))
}

// writeReport writes the report's files into dir (created when it was
// named by --out). A directory it cannot write is one line naming it and
// why, exit 2 like every other bad output place, and for the run
// directory itself the way round it: --out.
func writeReport(stderr io.Writer, dir string, run *results.Run, chosen bool) int {
	if chosen {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(stderr, usagef("--out %s: cannot create it: %v", dir, err))
		}
	}
	err := report.WriteAll(dir, run)
	if err == nil {
		return exitOK
	}
	// errors.Join puts each file's error on its own line: one line here.
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if chosen {
		return fail(stderr, usagef("--out %s: cannot write the report there: %s", dir, msg))
	}
	return fail(stderr, usagef("cannot write the report into the run directory %s: %s (--out DIR writes it elsewhere)", dir, msg))
}

const versionUsage = `
Usage: storebench version

Prints storebench's version, the Go toolchain, and each engine's version.
`

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	if code, stop := newFlags("version", versionUsage, stderr).parse(args, stdout); stop {
		return code
	}
	fmt.Fprintf(stdout, "storebench %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, e := range kv.Engines() {
		v := e.Version
		if e.Open == nil {
			v += " (not built in)"
		}
		fmt.Fprintf(stdout, "  %-10s %s\n", e.Name, v)
	}
	return exitOK
}

func cmdWorker(args []string, stdout, stderr io.Writer) int {
	// Its coordinator stops it (and the kernel kills it should the
	// coordinator die): a closed terminal must not kill it first, with
	// what it measured and its engine's data.
	ignoreHangup()
	// The protocol owns stdout. Engines that print (loggers, C libraries)
	// must not corrupt it: keep a private copy of stdout for the protocol
	// and point descriptor 1 at stderr.
	proto, err := protectStdout()
	if err != nil {
		fmt.Fprintln(stderr, "storebench worker:", err)
		return exitFailed
	}
	// The worker has its target's URI, password included: what it and
	// the drivers' loggers write to its log (stderr) has it masked.
	log.SetOutput(redact.Writer(stderr))
	if err := worker.Serve(os.Stdin, proto, Version); err != nil {
		fmt.Fprintln(stderr, "storebench worker:", redact.Text(err.Error()))
		return exitFailed
	}
	return exitOK
}

// readRun reads a finished run given as its directory or as the path of
// its results.json, and returns the run directory too.
func readRun(arg string) (*results.Run, string, error) {
	dir, file := arg, filepath.Join(arg, "results.json")
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		dir, file = filepath.Dir(arg), arg
	}
	run, err := results.Read(file)
	if err != nil {
		return nil, dir, err
	}
	// A run written before secrets were masked whole is shown masked.
	redact.Value(run)
	// A results.json that parses may still hold nothing of a run (a
	// schema_version alone): refuse it, naming what it lacks, instead of
	// rendering an empty report or comparing nothing.
	var missing []string
	if run.Study == "" {
		missing = append(missing, "no study")
	}
	if len(run.Targets) == 0 {
		missing = append(missing, "no targets")
	}
	if len(missing) > 0 {
		return nil, dir, fmt.Errorf("%s is not the results of a run: it has %s", file, strings.Join(missing, " and "))
	}
	return run, dir, nil
}

// writeParams prints the declared range of every numeric parameter (the
// params types the workloads decoded in writeMatrix, a sweep's and a
// fault's), as the decoder checks them.
func writeParams(stdout io.Writer) {
	fmt.Fprintln(stdout, "\nPARAMETERS (numeric ones, with the range a given value must be in)")
	types := study.Declared()
	types["workloads.<name>.sweep"] = reflect.TypeOf(sweep.Spec{})
	types["workloads.<name>.faults[]"] = reflect.TypeOf(fault.Action{})
	paths := make([]string, 0, len(types))
	for p := range types {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		var ps []string
		for _, p := range study.Params(types[path]) {
			if p.Numeric {
				ps = append(ps, p.Path+" "+p.Range.String())
			}
		}
		if len(ps) > 0 {
			fmt.Fprintf(stdout, "  %s: %s\n", path, strings.Join(ps, ", "))
		}
	}
}

// writeMatrix prints which workload each target can run: "yes", "n/a" (it
// can run none of the workload's steps) or the phases it cannot run, and
// why: the capabilities it lacks. The steps are the workload's own with
// its default parameters, matched as `storebench run` matches them.
func writeMatrix(stdout io.Writer) {
	type wsteps struct {
		name  string
		steps []workload.Step
	}
	var ws []wsteps
	s := workload.Planning{File: "list", Ladder: []int64{10}, Seed: 1, Concurrency: 1}
	for _, w := range workload.All() {
		raw, err := w.DecodeParams(s, study.Entry{Name: w.Name()})
		if err != nil {
			continue
		}
		steps, err := w.Plan(s, raw)
		if err != nil {
			continue
		}
		ws = append(ws, wsteps{w.Name(), steps})
	}
	fmt.Fprintln(stdout, "\nWORKLOADS × TARGETS (yes, n/a, or the phases that are n/a; why: what the target lacks)")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "  target")
	for _, w := range ws {
		fmt.Fprintf(tw, "\t%s", w.name)
	}
	fmt.Fprintln(tw, "\twhy not")
	for _, i := range target.All() {
		fmt.Fprintf(tw, "  %s", i.Name)
		var whys []string
		for _, w := range ws {
			var naPhases []string
			var lack target.Caps
			var anyOf []string // what the target meets none of (RequiresAny)
			for _, st := range w.steps {
				m := i.Provides.Missing(st.Requires)
				none := ""
				if len(m) == 0 {
					none = i.Provides.CannotRunAny(st.RequiresAny)
				}
				if len(m) == 0 && none == "" {
					continue
				}
				if none != "" && !contains(anyOf, none) {
					anyOf = append(anyOf, none)
				}
				if !contains(naPhases, st.Phase) {
					naPhases = append(naPhases, st.Phase)
				}
				for _, c := range m {
					if !lack.Has(c) {
						lack = append(lack, c)
					}
				}
			}
			why := strings.Join(append([]string{lack.Lack()}, anyOf...), ", ")
			if len(lack) == 0 {
				why = strings.Join(anyOf, ", ")
			}
			cell := "yes"
			switch {
			case len(naPhases) == len(uniquePhases(w.steps)):
				cell = "n/a"
				whys = append(whys, w.name+": "+why)
			case len(naPhases) > 0:
				cell = strings.Join(naPhases, ",") + " n/a"
				whys = append(whys, w.name+" "+strings.Join(naPhases, ",")+": "+why)
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintf(tw, "\t%s\n", strings.Join(whys, "; "))
	}
	tw.Flush()
	var shared []string
	for _, i := range target.All() {
		if !i.Embedded() && i.Provides.Has(target.Shared) {
			shared = append(shared, i.Name)
		}
	}
	fmt.Fprintf(stdout, "\nSeveral workers (--workers N, 1..256) can share a step that splits (ycsb) on: %s.\n", strings.Join(shared, ", "))
}

func uniquePhases(steps []workload.Step) []string {
	var out []string
	for _, st := range steps {
		if !contains(out, st.Phase) {
			out = append(out, st.Phase)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
