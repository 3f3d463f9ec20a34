// Package cli turns command lines into calls and errors into one clear
// line and an exit code: 0 success, 1 a run that failed (a target failed
// or a read did not verify), 2 bad usage or a bad study file, 3 a run cut
// short by a limit, 4 a seed finding pinned with --expect that does not
// hold, 130 interrupted (what was measured is kept).
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"storebench/internal/redact"
	"storebench/internal/study"
)

// Version is set at build time by the Makefile (-ldflags -X).
var Version = "dev"

// Exit codes of every command (run documents them in its --help and the
// README): a failure is never reported as success, and a run cut short
// is told apart from a complete one.
const (
	exitOK          = 0   // done; for run: every target ran every step it can (n/a steps are not failures)
	exitFailed      = 1   // a target failed (also when the run was cut short after it)
	exitUsage       = 2   // bad command line or study: nothing ran
	exitPartial     = 3   // run: cut short by a limit (time, target time, disk) before every step ran
	exitNotHeld     = 4   // seed --run --expect: a pinned finding's verdict is not "holds"
	exitInterrupted = 130 // run: interrupted (Ctrl-C, SIGTERM, SIGHUP); partial results written
)

type command struct {
	name    string
	summary string
	usage   string // the --help text after the synopsis
	run     func(args []string, stdout, stderr io.Writer) int
	hidden  bool
}

func commands() []command {
	return []command{
		{name: "run", summary: "run a study (built-in name or YAML file) and write its report", usage: runUsage, run: cmdRun},
		{name: "list", summary: "list built-in studies, workloads and targets, and which targets this machine lacks", usage: listUsage, run: cmdList},
		{name: "report", summary: "re-render the report of a finished run directory", usage: reportUsage, run: cmdReport},
		{name: "seed", summary: "list a seed study's findings and the studies that test them; --run: does each hold here?", usage: seedUsage, run: cmdSeed},
		{name: "cost", summary: "project machines and a monthly bill for your load from a finished run's measurements", usage: costUsage, run: cmdCost},
		{name: "compare", summary: "compare two runs, or two targets of one run, with noise-aware verdicts", usage: compareUsage, run: cmdCompare},
		{name: "version", summary: "print the version of storebench and of every engine it contains", usage: versionUsage, run: cmdVersion},
		{name: "server", summary: "install, start, stop or check the servers storebench manages", usage: serverUsage(), run: cmdServer},
		{name: "overhead", summary: "measure the harness's own cost: runner vs bare loop on Pebble", usage: overheadUsage, run: cmdOverhead},
		{name: "worker", summary: "internal: serve one target for a coordinator over stdin/stdout", run: cmdWorker, hidden: true},
		{name: "server-main", summary: "internal: run an in-process server (FerretDB)", run: cmdServerMain, hidden: true},
	}
}

// Main runs storebench with args (without the program name).
func Main(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return Main([]string{args[1], "--help"})
		}
		// Help asked for goes to stdout; a bare "storebench" is a usage
		// error, and its usage goes to stderr.
		if len(args) == 0 {
			mainUsage(os.Stderr)
			return exitUsage
		}
		mainUsage(os.Stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], os.Stdout, os.Stderr)
		}
	}
	fmt.Fprintf(os.Stderr, "storebench: unknown command %q (try `storebench --help`)\n", args[0])
	return exitUsage
}

func mainUsage(w io.Writer) {
	fmt.Fprint(w, `storebench — which data store should my system use, and what will it cost me?

It runs studies: real workloads on real engines, each engine in its own
process, every read verified, latency from HdrHistograms, and a report
shaped like the study it reproduces.

Usage:
  storebench COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
Examples:
  storebench run ledger                          # the default study, all embedded engines
  storebench run ledger --ladder 10,1e3,1e5 --targets pebble,rocksdb
  storebench list                                # what this machine can run
  storebench report results/ledger-20261122-101500

Run "storebench COMMAND --help" for the flags of a command.
`)
}

// fail prints one clear line, its secrets masked (an error may quote a
// URI), and picks the exit code for err.
func fail(stderr io.Writer, err error) int {
	var se *study.Error
	if errors.As(err, &se) {
		fmt.Fprintln(stderr, "storebench: "+clipWords(redact.Text(se.Error())))
		return exitUsage
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "storebench: "+clipWords(redact.Text(ue.Error())))
		return exitUsage
	}
	fmt.Fprintln(stderr, "storebench: "+clipWords(redact.Text(err.Error())))
	return exitFailed
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
