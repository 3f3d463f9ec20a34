// Package output is the registry of the optional outputs of `storebench
// run`: those a flag asks for beside the console, results.json and the
// report (the live metrics endpoint, the flat-file exports, ...). Each
// output's own package registers itself in init with its flag, and the
// CLI binds every registered flag, checks its values before anything
// runs and makes the outputs, so that a new output is its own package
// and one line in internal/output/all.
package output

import (
	"slices"
	"strings"
	"sync"

	"storebench/internal/event"
)

// Def is an optional output, chosen by its flag.
type Def struct {
	// Flag is the name of the flag of `storebench run` that asks for
	// it, without dashes ("metrics").
	Flag string
	// Help is the flag's help, for --help.
	Help string
	// Usage is its paragraph of `storebench run --help`: what it
	// serves or writes, and how to read it.
	Usage string
	// Repeat says that the flag may be given more than once, each value
	// one more output (--export csv=A --export jsonl=B); else it takes
	// one value.
	Repeat bool
	// Switch says that the flag takes no value (--steps-tsv): given, it
	// asks for the output, whose Check and Open see "true".
	Switch bool
	// Check checks a value as given, before anything runs: its error is
	// the command line's (exit 2). nil: every value will do.
	Check func(value string) error
	// Open makes the output for one value, before anything runs (an
	// address in use, a directory that cannot be written: the command
	// line's error), with a line the console prints as the run starts
	// ("" for none).
	Open func(value string) (o event.Output, announce string, err error)
}

var (
	mu   sync.Mutex
	defs []Def
)

// Register adds an output; called from its package's init. It panics on
// a flag registered twice or a Def without a flag, help or Open.
func Register(d Def) {
	mu.Lock()
	defer mu.Unlock()
	if d.Flag == "" || d.Help == "" || d.Open == nil {
		panic("output: a Def needs Flag, Help and Open (" + d.Flag + ")")
	}
	if d.Repeat && d.Switch {
		panic("output: flag " + d.Flag + " is both a switch and repeatable")
	}
	for _, x := range defs {
		if x.Flag == d.Flag {
			panic("output: flag " + d.Flag + " registered twice")
		}
	}
	defs = append(defs, d)
}

// Defs are the registered outputs, by flag.
func Defs() []Def {
	mu.Lock()
	defer mu.Unlock()
	out := slices.Clone(defs)
	slices.SortFunc(out, func(a, b Def) int { return strings.Compare(a.Flag, b.Flag) })
	return out
}
