package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	costmodel "storebench/internal/cost"
	"storebench/internal/output"
	_ "storebench/internal/output/all" // every optional output registers its flag
	"storebench/internal/redact"
	"storebench/internal/study"
)

// flagDef is one flag of storebench's command line, declared once: its
// name, its default (whose type is the flag's: string, int, int64,
// float64, bool, or multiFlag for a repeatable one), its help, and the
// commands that take it. Every command binds its flags from flagTable,
// and only from it. A flag that means the same in several commands (run
// and seed's --out) is one entry; a name that means something else in
// another command (compare's --targets A,B, server's --durability) is an
// entry of its own, so that no command takes a name twice.
type flagDef struct {
	name string
	def  any
	help string
	cmds []string
	// with names, per command, the flag this one goes with: its help
	// there starts "with --FLAG: " (seed's --out applies with --run).
	with map[string]string
	// hidden are the commands whose --help leaves it out (a flag that
	// only tests and storebench itself pass).
	hidden []string
	// override, for a flag that overrides the study (run), sets o from
	// the flag's value (a pointer of the default's type) when given.
	override func(o *study.Override, v any)
}

// in lists the commands that take a flag.
func in(cmds ...string) []string { return cmds }

// withRun: in seed, the flag applies to the studies --run runs.
var withRun = map[string]string{"seed": "run"}

// The optional outputs' flags (package output's registry) are run's,
// before --profile.
func init() {
	i := slices.IndexFunc(flagTable, func(d flagDef) bool { return d.name == "profile" })
	flagTable = slices.Insert(flagTable, i, outputFlags(output.Defs())...)
}

// outputFlags are the flags of outputs defs, run's: one value, a list for
// a repeatable one, a boolean for a switch.
func outputFlags(defs []output.Def) []flagDef {
	var out []flagDef
	for _, d := range defs {
		def := any("")
		switch {
		case d.Repeat:
			def = multiFlag(nil)
		case d.Switch:
			def = false
		}
		out = append(out, flagDef{name: d.Flag, def: def, cmds: in("run"), help: d.Help})
	}
	return out
}

// flagTable is every flag of every command. The flags storebench run
// shares with seed come first, then run's, then each other command's.
var flagTable = []flagDef{
	{name: "out", def: "results", cmds: in("run", "seed"), with: withRun,
		help: "directory under which each run's results directory is created"},
	{name: "accept-estimate", def: false, cmds: in("run", "seed"), with: withRun,
		help: "run a --scale whose up-front estimate of time and disk does not fit this machine (its free disk, the study's limits, or a day without a time limit); without it such a run is refused with the estimate"},
	{name: "set", def: multiFlag(nil), cmds: in("run", "seed"), with: withRun, hidden: in("seed"),
		help:     "override a workload parameter: workload.param=value (repeatable), e.g. ledger.selects=5000",
		override: func(o *study.Override, v any) { o.Set = *v.(*multiFlag) }},

	// storebench run: the flags that override the study.
	{name: "ladder", def: "", cmds: in("run"),
		help:     "data sizes to measure, comma-separated (e.g. 10,1e3,1e5; from 1 to 1e9, at most 64 sizes)",
		override: func(o *study.Override, v any) { o.Ladder = v.(*string) }},
	{name: "targets", def: "", cmds: in("run"),
		help:     "targets to run, comma-separated (e.g. pebble,rocksdb); see \"storebench list\"",
		override: func(o *study.Override, v any) { o.Targets = v.(*string) }},
	{name: "durability", def: "", cmds: in("run"),
		help:     "sync (each write batch fsynced on return) or async, for every target; default: each engine as it ships (the seeds' method; the report says what each default is)",
		override: func(o *study.Override, v any) { o.Durability = v.(*string) }},
	{name: "seed", def: int64(0), cmds: in("run"),
		help:     "seed of every generated key, value and choice, 0 or more (same seed, same operations; default: the study's)",
		override: func(o *study.Override, v any) { o.Seed = v.(*int64) }},
	{name: "concurrency", def: 0, cmds: in("run"),
		help:     "load goroutines where a workload runs concurrently, 1..4096 (default: the study's)",
		override: func(o *study.Override, v any) { o.Concurrency = v.(*int) }},
	{name: "workers", def: 0, cmds: in("run"),
		help:     "worker processes driving each server target at once, 1..256, each a disjoint share of the operations (default: one per host; docs/distributed.md); more than 1 needs a target whose data they can share (storebench list says which)",
		override: func(o *study.Override, v any) { o.Workers = v.(*int) }},
	{name: "client-cpus", def: 0, cmds: in("run"),
		help:     "CPUs each worker's load goroutines run on (GOMAXPROCS; 0: every core); side by side with a native tool, give both the same threads",
		override: func(o *study.Override, v any) { o.ClientCPUs = v.(*int) }},
	{name: "hosts", def: "", cmds: in("run"),
		help:     "where workers run, comma-separated, round-robin: local, ssh://[user@]host[:port] (keys from ssh-agent or ~/.ssh, never a password)",
		override: func(o *study.Override, v any) { o.Hosts = v.(*string) }},
	{name: "ssh-identity", def: "", cmds: in("run"),
		help:     "private key file for the ssh hosts (ssh -i), checked before anything starts",
		override: func(o *study.Override, v any) { o.SSHIdentity = v.(*string) }},
	{name: "ssh-option", def: multiFlag(nil), cmds: in("run"),
		help:     "an ssh -o option for the ssh hosts, Key=value (repeatable), e.g. UserKnownHostsFile=/path; any option ssh takes, where a study file's ssh.options may only tune the connection",
		override: func(o *study.Override, v any) { o.SSHOptions = *v.(*multiFlag) }},
	{name: "time-limit", def: "", cmds: in("run"),
		help:     "stop the study after this long (e.g. 30m, at most 2562047h), keeping what was measured; none: no limit, not even the study's",
		override: func(o *study.Override, v any) { o.TimeLimit = v.(*string) }},
	{name: "crash", def: 0, cmds: in("run"),
		help:     "add a crash phase: this many power failures (powerfs) and as many kill -9 of each target under the study's durability, every acknowledged write read back after each (the durability workload; docs/durability.md)",
		override: func(o *study.Override, v any) { o.Crash = v.(*int) }},
	{name: "scale", def: "", cmds: in("run"),
		help:     "apply one of the study's named scales (e.g. seed: the seed's own sizes) before the other overrides",
		override: func(o *study.Override, v any) { o.Scale = *v.(*string) }},
	{name: "machine", def: multiFlag(nil), cmds: in("run"),
		help:     "run every target on this machine shape (repeatable: once per shape, each on a fresh worker or server with fresh data), limits as cpus=0.5,memory=256MiB,disk_iops=3000,disk_mbps=125,cpuset=1; replaces the study's machines: (--machine none: this machine as it is, without them). A limit this machine cannot enforce makes the target's steps n/a with the reason",
		override: func(o *study.Override, v any) { o.Machines = *v.(*multiFlag) }},

	// storebench run: how it runs and what it writes.
	{name: "keep-data", def: false, cmds: in("run"),
		help: "keep the engines' data directories after the run"},
	{name: "quiet", def: false, cmds: in("run"),
		help: "do not print the report at the end (it is still written)"},
	{name: "allow-nonempty", def: multiFlag(nil), cmds: in("run"),
		help: "run on a server named by URI whose database already holds data: TARGET (its name, e.g. redis) or its URI, comma-separated or repeated; storebench then writes only under its own key prefixes (tables, collections) and removes only what it wrote. Without it such a server is refused, exit 2"},
	{name: "profile", def: "", cmds: in("run"),
		help: "write pprof profiles of each worker's steps, comma-separated kinds of cpu,mutex,block, to profiles/<target>/<step>.<kind>.pprof (read them with go tool pprof)"},

	// storebench seed.
	{name: "run", def: false, cmds: in("seed"),
		help: "run the studies that test the seed's findings (at --scale seed), then print each finding's verdict"},
	{name: "yes", def: false, cmds: in("seed"), with: withRun,
		help: "run without asking, whatever the estimate"},
	{name: "expect", def: multiFlag(nil), cmds: in("seed"), with: withRun,
		help: "holds (every comparable finding must hold) or FINDING=holds (that one must), repeatable; exit 4 when one does not"},

	// storebench compare.
	{name: "targets", def: "", cmds: in("compare"),
		help: "compare two targets of one run: A,B"},
	{name: "html", def: "", cmds: in("compare"),
		help: "also write the comparison as HTML to this file"},
	{name: "force", def: false, cmds: in("compare"),
		help: "compare runs of different studies or workloads anyway"},

	// storebench report.
	{name: "constraints", def: "", cmds: in("report"),
		help: "judge the run under the constraints in this file (study or constraints YAML)"},
	{name: "html", def: "", cmds: in("report"), with: map[string]string{"report": "constraints"},
		help: "also write the report as HTML to this file"},
	{name: "out", def: "", cmds: in("report"),
		help: "write report.md, report.html and the charts to this directory instead of the run directory"},

	// storebench cost.
	{name: "load", def: "", cmds: in("cost"),
		help: "the operations per second to carry: 50000/s, 5e4, 3M/min"},
	{name: "data", def: "", cmds: in("cost"),
		help: "the data: bytes as the workload writes them (500GiB, 2TB) or items (5e8)"},
	{name: "mix", def: "", cmds: in("cost"),
		help: "shares of the load per step, e.g. ycsb/a=3,ycsb/c=1 (default: every step measured, equal shares)"},
	{name: "growth", def: "", cmds: in("cost"),
		help: "data and load added per month: 5% (the month the next machine is needed)"},
	{name: "p99", def: "", cmds: in("cost"),
		help: "the highest p99 latency allowed, e.g. 10ms"},
	{name: "replicas", def: 1, cmds: in("cost"),
		help: "copies of the data, each on machines of its own"},
	{name: "max-machines", def: costmodel.DefaultMaxMachines, cmds: in("cost"),
		help: "refuse a plan needing more machines than this"},
	{name: "utilisation", def: costmodel.DefaultUtilisation, cmds: in("cost"),
		help: "the share of a machine's CPU the load may use"},
	{name: "catalog", def: multiFlag(nil), cmds: in("cost"),
		help: "a built-in catalog (aws, scaleway, owned) or a YAML file; repeat to add lines to the first (default aws)"},
	{name: "json", def: false, cmds: in("cost"),
		help: "print the projections as JSON (results.json's projection block)"},

	// storebench server.
	{name: "durability", def: "sync", cmds: in("server"),
		help: "sync or async: how the server makes writes durable"},
	{name: "port", def: 0, cmds: in("server"),
		help: "port on 127.0.0.1 (0: a free one)"},
	{name: "uri-only", def: false, cmds: in("server"),
		help: "start: print only the URI"},

	// storebench overhead.
	{name: "keys", def: 100000, cmds: in("overhead"),
		help: "keys loaded into Pebble"},
	{name: "gets", def: 500000, cmds: in("overhead"),
		help: "random gets per round"},
	{name: "rounds", def: 7, cmds: in("overhead"),
		help: "rounds of each (alternating), 1..1000"},
	{name: "target", def: "pebble", cmds: in("overhead"),
		help: "target to read from"},
	{name: "concurrency", def: "1", cmds: in("overhead"),
		help: "goroutines of both the bare loop and the runner, comma-separated (e.g. 1,2,4,8), each 1..4096"},
	{name: "workload", def: "get", cmds: in("overhead"),
		help: "what the runner runs: get (random gets) or ycsb-c (YCSB workload C, every read verified)"},
}

// multiFlag is a repeatable flag: every value given, in order.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// helpIn is the flag's help in command cmd.
func (d *flagDef) helpIn(cmd string) string {
	if w := d.with[cmd]; w != "" {
		return "with --" + w + ": " + d.help
	}
	return d.help
}

// bind adds the flag to fs and returns where its value goes: a pointer
// of its default's type.
func (d *flagDef) bind(fs *flag.FlagSet, help string) any {
	switch def := d.def.(type) {
	case string:
		return fs.String(d.name, def, help)
	case int:
		return fs.Int(d.name, def, help)
	case int64:
		return fs.Int64(d.name, def, help)
	case float64:
		return fs.Float64(d.name, def, help)
	case bool:
		return fs.Bool(d.name, def, help)
	case multiFlag:
		v := append(multiFlag(nil), def...)
		fs.Var(&v, d.name, help)
		return &v
	}
	panic(fmt.Sprintf("flag --%s: default %#v is of no flag type", d.name, d.def))
}

// flagsOf are the entries of flagTable that command cmd takes.
func flagsOf(cmd string) []*flagDef {
	var out []*flagDef
	for i := range flagTable {
		if slices.Contains(flagTable[i].cmds, cmd) {
			out = append(out, &flagTable[i])
		}
	}
	return out
}

// cmdFlags are a command's flags, bound from flagTable, and after parse
// their values. Reading a flag the table does not give the command is a
// bug, and panics naming it.
type cmdFlags struct {
	*flag.FlagSet
	defs map[string]*flagDef
	vals map[string]any
}

// newFlags binds command name's flags from the table to a flag set whose
// --help prints the command's usage and its flags (but those hidden in
// it). Its output is stderr, where fs.Usage() prints after a usage
// error; parse sends the help asked for with --help to stdout.
func newFlags(name, usage string, stderr io.Writer) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), defs: map[string]*flagDef{}, vals: map[string]any{}}
	f.SetOutput(stderr)
	// shown holds the flags --help lists, on the same values: the same
	// types and defaults are printed.
	shown := flag.NewFlagSet(name, flag.ContinueOnError)
	for _, d := range flagsOf(name) {
		help := d.helpIn(name)
		f.defs[d.name], f.vals[d.name] = d, d.bind(f.FlagSet, help)
		if !slices.Contains(d.hidden, name) {
			shown.Var(f.Lookup(d.name).Value, d.name, help)
		}
	}
	f.Usage = func() {
		fmt.Fprint(f.Output(), strings.TrimLeft(usage, "\n"))
		fmt.Fprintln(f.Output(), "\nFlags:")
		shown.SetOutput(f.Output())
		shown.PrintDefaults()
	}
	return f
}

// value is where flag name's value is, a pointer of its default's type.
func (f *cmdFlags) value(name string) any {
	v, ok := f.vals[name]
	if !ok {
		panic(fmt.Sprintf("storebench %s: no flag --%s in the flag table for it", f.Name(), name))
	}
	return v
}

func (f *cmdFlags) str(name string) string     { return *f.value(name).(*string) }
func (f *cmdFlags) num(name string) int        { return *f.value(name).(*int) }
func (f *cmdFlags) float(name string) float64  { return *f.value(name).(*float64) }
func (f *cmdFlags) on(name string) bool        { return *f.value(name).(*bool) }
func (f *cmdFlags) list(name string) multiFlag { return *f.value(name).(*multiFlag) }

// given says whether the command line gave flag name, even with its
// default value.
func (f *cmdFlags) given(name string) (set bool) {
	f.value(name) // a flag the command does not take panics
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// override is the study's override by the flags given: only those, and
// every one given, empty or zero included (an empty --targets is not "the
// study's").
func (f *cmdFlags) override() study.Override {
	var o study.Override
	f.Visit(func(fl *flag.Flag) {
		if d := f.defs[fl.Name]; d.override != nil {
			d.override(&o, f.vals[fl.Name])
		}
	})
	return o
}

// parse parses the command line; it returns an exit code when the
// command should end: 0 after --help (printed to stdout), 2 after a bad
// flag (one line on stderr).
func (f *cmdFlags) parse(args []string, stdout io.Writer) (int, bool) {
	stderr := f.Output()
	var help bytes.Buffer
	f.SetOutput(&help)
	defer f.SetOutput(stderr)
	// Let flags follow positional arguments too: "run ledger --ladder 10".
	var pos []string
	for len(args) > 0 {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				stdout.Write(help.Bytes())
				return exitOK, true
			}
			fmt.Fprintf(stderr, "storebench %s: %s (try `storebench %s --help`)\n", f.Name(), redact.Text(err.Error()), f.Name())
			return exitUsage, true
		}
		args = f.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	_ = f.Parse(append([]string{"--"}, pos...))
	return 0, false
}
