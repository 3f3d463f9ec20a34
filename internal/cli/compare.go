package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"storebench/internal/compare"
	"storebench/internal/results"
)

const compareUsage = `
Usage: storebench compare RUN_A RUN_B
       storebench compare RUN --targets A,B

Puts two measurements side by side, step by step: throughput and median
and p99 service time, the ratio B/A, and a verdict that respects noise:
the per-second intervals of each phase give a spread, and a difference
inside twice its standard error is "no significant difference". Phases
shorter than 3 seconds are too short to judge. Markdown on stdout.

Examples:
  storebench compare results/ledger-20261122-101500 results/ledger-20261123-090000
  storebench compare results/ledger-20261122-101500 --targets pebble,rocksdb
`

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", compareUsage, stderr)
	targets := fs.String("targets", "", "compare two targets of one run: A,B")
	if code, stop := parse(fs, args); stop {
		return code
	}
	load := func(dir string) (*results.Run, error) {
		r, err := results.Read(filepath.Join(dir, "results.json"))
		if err != nil {
			return nil, usagef("%v", err)
		}
		return r, nil
	}
	find := func(r *results.Run, name string) *results.Target {
		for _, t := range r.Targets {
			if t.Name == name {
				return t
			}
		}
		return nil
	}
	var pairs [][2]compare.Side
	switch {
	case *targets != "" && fs.NArg() == 1:
		run, err := load(fs.Arg(0))
		if err != nil {
			return fail(stderr, err)
		}
		names := strings.Split(*targets, ",")
		if len(names) != 2 {
			return fail(stderr, usagef("--targets wants two names: A,B"))
		}
		a, b := find(run, names[0]), find(run, names[1])
		if a == nil || b == nil {
			return fail(stderr, usagef("%s has no target %q or %q", fs.Arg(0), names[0], names[1]))
		}
		pairs = append(pairs, [2]compare.Side{{Label: a.Title + " in " + fs.Arg(0), Target: a}, {Label: b.Title + " in " + fs.Arg(0), Target: b}})
	case *targets == "" && fs.NArg() == 2:
		ra, err := load(fs.Arg(0))
		if err != nil {
			return fail(stderr, err)
		}
		rb, err := load(fs.Arg(1))
		if err != nil {
			return fail(stderr, err)
		}
		for _, a := range ra.Targets {
			if b := find(rb, a.Name); b != nil {
				pairs = append(pairs, [2]compare.Side{{Label: a.Title + " in " + fs.Arg(0), Target: a}, {Label: b.Title + " in " + fs.Arg(1), Target: b}})
			}
		}
		if len(pairs) == 0 {
			return fail(stderr, usagef("the two runs share no target"))
		}
	default:
		fs.Usage()
		return exitUsage
	}
	for _, p := range pairs {
		fmt.Fprintln(stdout, compare.Markdown(p[0], p[1], compare.Compare(p[0], p[1])))
	}
	return exitOK
}
