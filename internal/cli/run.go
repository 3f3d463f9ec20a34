package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"storebench/internal/coordinator"
	"storebench/internal/event"
	"storebench/internal/output"
	"storebench/internal/output/console"
	"storebench/internal/output/reportfile"
	"storebench/internal/output/resultsfile"
	"storebench/internal/progress"
	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/study"
	"storebench/internal/wire"
)

var runUsage = `
Usage: storebench run STUDY|FILE [flags]

Runs a study: a built-in one by name (see "storebench list") or a YAML
file. Each target runs in its own worker process, one after another. The
results go to results/<study>-<time>/: results.json (machine-readable),
report.md (also printed here) with its charts in charts/, report.html (the
same report with every chart, one file that works offline), hdr/
(HdrHistogram interval logs per phase), logs/ (each worker's log),
profiles/ (with --profile: pprof profiles per target and step),
study.yaml (the study as run, overrides applied: run it again with
"storebench run RUN/study.yaml") and study.original.yaml (the text given).

A study file is data: it runs no command, reads no local file but the ssh
key it names and reaches no address but its targets and hosts. Its
ssh.options may only tune the connection (ConnectTimeout, Ciphers, ...);
ProxyCommand, UserKnownHostsFile and the like are the user's to give with
--ssh-option, and are left out of study.yaml (give them again).

A step a target cannot run (it lacks a capability the step requires, e.g.
ordered scans for YCSB E on Redis) is "n/a" with the reason in every table
and in results.json; the target's other steps run. A target that can run
nothing of the study is refused before anything starts.

Faults: a workload entry's faults: list acts on a target while a phase
runs, each action at its offset from the phase's timed start, recorded as
an event. On a cluster storebench starts (cassandra-cluster,
redis-cluster): stop, kill, pause (for: ...) or restart a node. On a
single server it starts (redis, postgres, mariadb, ...): kill-9 (SIGKILL,
then a restart on the same data) or power-loss (the same, its data on
storebench's power-loss file system, which drops what was not synced),
e.g.
  faults: [{at: 5s, action: power-loss, phase: load}]
or at an instant drawn from [at, until) by the study's seed:
  faults: [{at: 1s, until: 10s, action: kill-9, phase: load}]
Writes are retried while the server is down and every acknowledged one is
read back afterwards: under --durability sync a lost one fails the step,
under async the losses are the measured figure, written again afterwards
so that the phases after it check every record. A crash on an embedded
engine (storebench run durability does that) or on a server named by URI
is refused before anything starts.

A server named by URI (one storebench did not start) is someone else's:
storebench writes there only under its own key prefixes, tables or
collections, never empties the database (no FLUSHDB, flush_all or
dropped database), and removes what it wrote at the end of the run, also
after Ctrl-C (--keep-data keeps it). A database that already holds
anything is refused, exit 2, unless --allow-nonempty names the target
(redis, or its URI); even then data under storebench's own names (e.g.
usertable:*) is refused.

A scale (--scale seed: a seed's own sizes) whose workloads can estimate
their cost prints the estimate of time and disk first; one that does not
fit this machine (more disk than is free or limits.disk allows, longer
than limits.time or, with no time limit, a day) is refused, exit 2, unless
--accept-estimate is given.

Ctrl-C stops within 2 s (also while a server starts), keeps what was
measured and the report with status "interrupted" (the steps not finished
listed), stops its servers, removes its data, and exits with status 130;
SIGTERM, SIGHUP (its terminal or ssh session closed) and a closed output
(| head) do the same. results.json says "running" until the run ends: after a kill -9,
"storebench report RUN" shows the run interrupted and what never ran.

Exit status:
  0    complete: every target ran every step it can
  1    a target failed (a failure is never hidden by a time limit)
  2    bad command line or study; nothing ran
  3    cut short by a limit (limits.time, --time-limit, limits.target_time,
       limits.disk or not enough free disk): partial results written
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP, output closed): partial results
       written

Examples:
  storebench run ledger
  storebench run ledger --ladder 10,1e3,1e5,1e6 --targets pebble,rocksdb,lmdb
  storebench run ledger --durability async --set ledger.stress.rate=5000
  storebench run ledger --crash 20 --targets pebble,postgres   # and 20 power failures and 20 kill -9 each, acknowledged writes checked
  storebench run tokens --scale seed --targets moeingads
  storebench run ycsb --targets redis://10.0.0.5:6379/2 --allow-nonempty redis   # beside the data already there
  storebench run ledger --scale seed --ladder 10,1e3,1e5   # the seed's method, its ladder cut here
  storebench run ./my-study.yaml --out /data/results
  storebench run ycsb --targets pebble --concurrency 8 --profile cpu,mutex,block
  storebench run ledger --metrics 127.0.0.1:9464 --export csv=/tmp/ledger-csv
  storebench run ycsb --targets redis --workers 4          # four worker processes, merged exactly
  storebench run ycsb --targets postgres --hosts local,ssh://bench@10.0.0.7 --ssh-identity ~/.ssh/bench
  storebench run ycsb --targets rocksdb,redis --machine cpus=0.5,memory=256MiB --machine cpus=1,memory=1GiB

Machines (--machine SHAPE, repeatable, or a study's machines: list of
the same strings): each target runs once per machine shape, each time on
a fresh worker process (an embedded engine) or a fresh managed server,
with fresh data, its processes held by the kernel (cgroup v1, as root) to
the shape's limits: cpus (a CFS quota, e.g. 0.5 of a core), cpuset (the
CPUs it may run on), memory (anonymous memory and page cache together),
disk_iops and disk_mbps (on the disk that holds the data). An embedded
engine's worker is placed in the machine as it starts; a server's process
tree right after it started (memory charged before stays outside); the
load generator (the coordinator, and a server's client worker) stays
outside. The target is named TARGET@SHAPE and titled "Title on SHAPE",
so tables print the shapes side by side; results.json has its machine,
and each step the group's own counters as metrics machine_cpu_seconds,
machine_cpu_cores, machine_cpu_throttled_seconds,
machine_memory_peak_bytes, machine_page_cache_bytes,
machine_disk_read_bytes, machine_disk_write_bytes and others. A limit
that cannot be enforced here (not root, no controller, a server named by
URI, a device the kernel cannot throttle such as tmpfs) makes that
target's steps on that machine "n/a: reason", never a run without the
limit. Groups are removed when the target ends, also after Ctrl-C; those
of a storebench killed with -9 by the next run.

` + outputsUsage() + `
Profiles (--profile cpu,mutex,block, any of them): each worker profiles
every step it runs and the coordinator writes
profiles/<target>/<step>.<kind>.pprof (go tool pprof -top FILE). Mutex and
block sampling is switched on only when asked, and only while a step runs:
it costs the load goroutines time. A mutex or block profile covers the
worker's profiled steps up to the end of its step; go tool pprof -base
PREVIOUS FILE gives one step's share. The CPU profile is the step's alone.
`

func cmdRun(args []string, stdout, stderr io.Writer) int { return runStudy(args, stdout, stderr, nil) }

// runStudy is storebench run with args. ended, when not nil, is told the
// run's results directory once the run has ended, complete, cut short,
// failed or interrupted (not called when no run started): storebench
// seed --run reads the results.json there.
func runStudy(args []string, stdout, stderr io.Writer, ended func(dir string)) int {
	f := newFlags("run", runUsage, stderr)
	if code, stop := f.parse(args, stdout); stop {
		return code
	}
	r, code, stop := prepareRun(f, stderr)
	if stop {
		return code
	}
	r.command = append([]string{"storebench", "run"}, args...)
	return r.execute(stdout, stderr, ended)
}

// runPlan is a run read from the command line, checked and planned:
// nothing has started yet.
type runPlan struct {
	s       *study.Study
	plan    *coordinator.Plan
	command []string // the command line, for results.json
	scale   string   // --scale, "" for none
	out     string   // --out
	kinds   []string // --profile
	outs    []chosen // the optional outputs' flags (package output)
	keep    bool     // --keep-data
	accept  bool     // --accept-estimate
	quiet   bool     // --quiet
}

// prepareRun reads the study and the flags, and checks that the run can
// start here, before anything starts: an exit code (stop) when not.
func prepareRun(f *cmdFlags, stderr io.Writer) (*runPlan, int, bool) {
	r, err := runFromFlags(f)
	if err == nil {
		err = r.check(f.list("allow-nonempty"))
	}
	if err != nil {
		return nil, fail(stderr, err), true
	}
	if r.scale != "" {
		if code, stop := r.checkEstimate(stderr); stop {
			return nil, code, true
		}
	}
	return r, 0, false
}

// runFromFlags loads the study named and applies the flags given to it.
// Only the flags given override the study, and every one given is
// checked, empty or zero included: an empty --targets is not "the study's".
func runFromFlags(f *cmdFlags) (*runPlan, error) {
	kinds, err := parseProfile(f.str("profile"))
	if err != nil {
		return nil, err
	}
	if f.NArg() != 1 {
		return nil, usagef("run needs exactly one study name or file (try `storebench run --help`)")
	}
	s, err := study.Load(f.Arg(0))
	if err != nil {
		return nil, err
	}
	r := &runPlan{s: s, scale: f.str("scale"), out: f.str("out"), kinds: kinds,
		keep: f.on("keep-data"), accept: f.on("accept-estimate"), quiet: f.on("quiet")}
	if r.outs, err = outputsChosen(f); err != nil {
		return nil, err
	}
	if f.given("scale") && r.scale == "" {
		return nil, usagef("--scale: empty: name one of the study's scales (%s)", strings.Join(s.ScaleNames(), ", "))
	}
	if err := s.Apply(f.override()); err != nil {
		var se *study.Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, usagef("%v", err)
	}
	return r, nil
}

// outputsUsage is each registered output's paragraph of `storebench run
// --help` (output.Def.Usage), a blank line between them.
func outputsUsage() string {
	var ps []string
	for _, d := range output.Defs() {
		if d.Usage != "" {
			ps = append(ps, strings.TrimSuffix(d.Usage, "\n")+"\n")
		}
	}
	return strings.Join(ps, "\n")
}

// chosen is one value of an optional output's flag (--metrics ADDR,
// each --export FORMAT=DIR).
type chosen struct {
	def   output.Def
	value string
}

// outputsChosen checks the flags of the run's extra outputs as given:
// --profile, and each registered output's (package output): --metrics,
// --export, ...
func outputsChosen(f *cmdFlags) ([]chosen, error) {
	if f.given("profile") && f.str("profile") == "" {
		return nil, usagef("--profile: empty: name kinds of %s", strings.Join(wire.ProfileKinds, ","))
	}
	var out []chosen
	for _, d := range output.Defs() {
		for _, v := range outputValues(f, d) {
			if d.Check != nil {
				if err := d.Check(v); err != nil {
					return nil, usagef("--%s %v", d.Flag, err)
				}
			}
			out = append(out, chosen{def: d, value: v})
		}
	}
	return out, nil
}

// outputValues are the values given to d's flag: each of a repeatable
// one, "true" for a switch that is on, else its one value when given.
func outputValues(f *cmdFlags, d output.Def) []string {
	switch {
	case d.Repeat:
		return f.list(d.Flag)
	case d.Switch:
		if f.on(d.Flag) {
			return []string{"true"}
		}
		return nil
	}
	if f.given(d.Flag) {
		return []string{f.str(d.Flag)}
	}
	return nil
}

// check plans the study and makes sure it can start here: the files it
// names (an ssh key), a server named by URI that already holds data
// (refused unless --allow-nonempty names it), a ladder whose first size
// already exceeds limits.disk, and --out; each refused before a results
// directory exists.
func (r *runPlan) check(allowNonempty []string) error {
	s := r.s
	if err := s.CheckFiles(); err != nil {
		return err
	}
	plan, err := coordinator.Prepare(s)
	if err != nil {
		return err
	}
	if err := coordinator.CheckExternal(context.Background(), s, plan, append(splitList(allowNonempty), allowNonempty...)); err != nil {
		return err
	}
	if why := plan.Unstartable(s); why != "" {
		return usagef("%s: %s; cut it with %s", s.Name, why, cutHint(s))
	}
	r.plan = plan
	return checkOut(r.out)
}

// execute runs the plan, with its outputs, until it ends or is
// interrupted, and says how it ended.
func (r *runPlan) execute(stdout, stderr io.Writer, ended func(dir string)) int {
	exe, err := os.Executable()
	if err != nil {
		return fail(stderr, fmt.Errorf("cannot find my own binary to start workers: %w", err))
	}
	extra, announce, err := extraOutputs(r.outs)
	defer func() { _ = extra.Close() }()
	if err != nil {
		return fail(stderr, err)
	}

	ctx, stopSignals := notifyInterrupt(context.Background())
	defer stopSignals()
	errFile, _ := stderr.(*os.File)
	tty := errFile != nil && progress.IsTerminal(errFile)
	// A closed stdout or stderr (`storebench run … | head -1`) is the
	// reader gone: the run stops as if interrupted, stopping its servers
	// and removing its data, instead of dying of SIGPIPE on the next
	// line printed and leaving both behind.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	closedOutput := func() { cancel(errors.New("its output was closed (broken pipe)")) }
	stopPipe := ignoreSIGPIPE()
	defer stopPipe()
	stdout, stderr = onBrokenPipe(stdout, closedOutput), onBrokenPipe(stderr, closedOutput)
	con := console.New(stderr, tty)
	s := r.s
	con.Println(fmt.Sprintf("storebench %s: study %s, %d targets, ladder %s, durability %s", Version, s.Name, len(s.Targets), ladderString(s), s.Durability))
	for _, line := range announce {
		con.Println(line)
	}
	outputs := append(event.List{con, resultsfile.New(), reportfile.New()}, extra...)

	run, dir, err := coordinator.Run(ctx, coordinator.Options{
		Study: s, OutDir: r.out, Exe: exe, Version: Version, Command: r.command,
		Output: outputs, KeepData: r.keep, Profile: r.kinds,
	}, r.plan)
	if ended != nil && dir != "" {
		ended(dir)
	}
	if cerr := extra.Close(); cerr != nil {
		fmt.Fprintf(stderr, "storebench: warning: %v\n", cerr)
	}
	extra = nil
	if run == nil {
		return fail(stderr, err)
	}
	return r.finish(run, dir, err, stdout, stderr)
}

// finish prints the report of a run that ended (unless --quiet), names
// its files, and picks the exit code for how it ended.
func (r *runPlan) finish(run *results.Run, dir string, err error, stdout, stderr io.Writer) int {
	printed := exitOK
	if !r.quiet {
		printed = printOut(stdout, stderr, "\n"+report.Markdown(run))
	}
	// Only files that were written are named (a full disk may have
	// stopped them; every one is written whole or not at all).
	if written(filepath.Join(dir, "report.md")) {
		fmt.Fprintf(stderr, "results: %s\n", filepath.Join(dir, "report.md"))
	}
	if written(filepath.Join(dir, "report.html")) {
		fmt.Fprintf(stderr, "html:    %s\n", filepath.Join(dir, "report.html"))
	}
	switch {
	case errors.Is(err, coordinator.ErrInterrupted):
		fmt.Fprintln(stderr, "storebench: interrupted; partial results written to "+dir)
		return exitInterrupted
	case err != nil && run.Status == results.StatusInterrupted:
		// Interrupted, and the results could not be written either.
		fmt.Fprintln(stderr, "storebench: interrupted; "+err.Error())
		return exitInterrupted
	case err != nil:
		return fail(stderr, err)
	case run.Status == "failed":
		for _, t := range run.Targets {
			if t.Status == "failed" {
				fmt.Fprintf(stderr, "storebench: target %s failed: %s\n", t.Name, t.Reason)
			}
		}
		// The run's reason also says when a limit cut it short after.
		fmt.Fprintf(stderr, "storebench: run failed: %s\n", run.Reason)
		return exitFailed
	case run.Status == "partial":
		fmt.Fprintf(stderr, "storebench: run cut short: %s; partial results written to %s\n", run.Reason, dir)
		return exitPartial
	}
	return printed
}

// extraOutputs are the outputs the flags ask for beside the console,
// results.json and the report (package output's: the live metrics
// endpoint, the flat files, ...), with the lines they announce. Each is
// set up before anything runs, so that an address in use or a directory
// that cannot be written is the command line's error (exit 2).
func extraOutputs(outs []chosen) (event.List, []string, error) {
	var l event.List
	var announce []string
	for _, c := range outs {
		o, line, err := c.def.Open(c.value)
		if err != nil {
			return l, announce, usagef("--%s %s: %v", c.def.Flag, c.value, err)
		}
		l = append(l, o)
		if line != "" {
			announce = append(announce, line)
		}
	}
	return l, announce, nil
}

func ladderString(s *study.Study) string {
	var p []string
	for _, n := range s.Ladder {
		p = append(p, study.FormatCount(int64(n)))
	}
	return strings.Join(p, ",")
}

// written reports whether the file exists.
func written(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// brokenPipe calls stop on the first write that fails with EPIPE: the
// reader of the output is gone.
type brokenPipe struct {
	w    io.Writer
	stop func()
}

func onBrokenPipe(w io.Writer, stop func()) io.Writer { return &brokenPipe{w: w, stop: stop} }

func (b *brokenPipe) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		b.stop()
	}
	return n, err
}

// checkOut makes sure --out is a directory, or can be created as one, before
// anything runs: a file there, or a path that cannot be a directory, is
// the user's to fix (exit 2), said once.
func checkOut(out string) error {
	if out == "" {
		return usagef("--out: empty: give the directory under which results go")
	}
	st, err := os.Stat(out)
	if err == nil {
		if !st.IsDir() {
			return usagef("--out %s: not a directory", out)
		}
		// A directory we cannot write in (read-only mount, its mode,
		// /proc) is refused now, not when the results are due: the run
		// makes its results directory in it, so the probe makes one too.
		probe, err := os.MkdirTemp(out, ".storebench-probe-")
		if err != nil {
			return usagef("--out %s: cannot create the results directory there: %v", out, pathErr(err))
		}
		_ = os.Remove(probe)
		return nil
	}
	// A symbolic link that leads nowhere, --out's or a parent's, would
	// read as "file exists" or "no such file".
	if why := brokenLink(out); why != "" {
		return usagef("--out %s: %s", out, why)
	}
	if !os.IsNotExist(err) {
		return usagef("--out %s: %v", out, pathErr(err))
	}
	// --out does not exist yet: it is created with the results directory,
	// once every other flag has been checked (a --metrics address in use
	// must not leave it behind); its nearest existing parent must be a
	// directory it can be created in.
	for p := filepath.Dir(out); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return usagef("--out %s: not a directory", out)
		case err == nil:
			probe, err := os.MkdirTemp(p, ".storebench-probe-")
			if err != nil {
				return usagef("--out %s: cannot create it in %s: %v", out, p, pathErr(err))
			}
			_ = os.Remove(probe)
			return nil
		case !os.IsNotExist(err):
			return usagef("--out %s: %v", out, pathErr(err))
		case filepath.Dir(p) == p:
			return nil
		}
	}
}

// brokenLink says which of p and its parents is a symbolic link that
// leads nowhere, a loop or a dangling one ("" if none is).
func brokenLink(p string) string {
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if lst, err := os.Lstat(q); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(q); err != nil {
				dest, _ := os.Readlink(q)
				what := ""
				if q != filepath.Clean(p) {
					what = q + " is "
				}
				if errors.Is(err, syscall.ELOOP) {
					return fmt.Sprintf("%sa symbolic link loop (it points to %s, which leads back to it)", what, dest)
				}
				return fmt.Sprintf("%sa dangling symbolic link (it points to %s: %v)", what, dest, pathErr(err))
			}
		}
		if q == filepath.Dir(q) {
			return ""
		}
	}
}

// pathErr is err without the path a *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseProfile checks --profile: comma-separated kinds of
// wire.ProfileKinds, each at most once; "" is none.
func parseProfile(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var kinds []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(wire.ProfileKinds, k) {
			return nil, usagef("--profile %q: %q is not one of %s", v, k, strings.Join(wire.ProfileKinds, ","))
		}
		if slices.Contains(kinds, k) {
			return nil, usagef("--profile %q: %s given twice", v, k)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// checkEstimate prints the up-front estimate of a scaled run (from the
// workloads that can tell) and refuses one that does not fit this
// machine unless --accept-estimate accepts it. With --keep-data every
// target's data stays, so the disk is every target's.
func (r *runPlan) checkEstimate(stderr io.Writer) (code int, stop bool) {
	s := r.s
	e, ok, err := coordinator.Estimate(s)
	if err != nil {
		return fail(stderr, err), true
	}
	if !ok {
		return 0, false
	}
	if r.keep {
		e.DiskBytes *= float64(max(len(s.Targets), 1))
	}
	fmt.Fprintf(stderr, "estimate for %s --scale %s: %s\n", s.Name, r.scale, e)
	why := e.TooBig(s, r.out)
	switch {
	case why == "":
		return 0, false
	case r.accept:
		fmt.Fprintf(stderr, "estimate accepted (--accept-estimate): %s\n", why)
		return 0, false
	}
	return fail(stderr, usagef("%s --scale %s does not fit this machine: %s; give --accept-estimate to run it anyway, or cut it with %s",
		s.Name, r.scale, why, cutHint(s))), true
}

// cutHint says how to make a run smaller: a shorter ladder (its lower
// half, say) where the study has one, or smaller sizes with --set.
func cutHint(s *study.Study) string {
	if len(s.Ladder) < 2 {
		return "--set (e.g. smaller sizes)"
	}
	var p []string
	for _, n := range s.Ladder[:len(s.Ladder)/2] {
		p = append(p, study.FormatCount(int64(n)))
	}
	return fmt.Sprintf("--ladder (e.g. --ladder %s) or --set (e.g. smaller sizes)", strings.Join(p, ","))
}

// splitList splits repeated, comma-separated flag values.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}
