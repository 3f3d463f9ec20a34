// Package reexec lets a package start this same storebench binary as a
// helper process of its own (the durability workload's engine, the
// process its crashes kill) without the binary's main naming that
// package: the package registers its helper's entry point in its init,
// starts the binary with Setting(name) in the environment, and main runs
// Main before the CLI. A new helper is then one Register call in its own
// package, and cmd/storebench keeps importing workloads only through
// internal/workload/all.
//
// The helper is recognised by an environment variable, not an argument,
// so that it is found before any flag is parsed and also in a test
// binary, whose arguments are go test's (a package's TestMain calls Main
// too). The package imports nothing of storebench: every package that
// starts a helper may import it.
package reexec

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Env is the environment variable whose value names the registered helper
// a process of this binary runs instead of its usual main.
const Env = "STOREBENCH_REEXEC"

// mains are the registered helpers by name. Register is called from init
// functions, before main and before any goroutine, so there is no lock.
var mains = map[string]func() int{}

// Register makes main the entry point of the helper process called name:
// a process of this binary started with Setting(name) runs it and exits
// with what it returns. It panics on an empty name, a nil main or a name
// registered twice, all of them programming errors that would otherwise
// run the wrong process or none.
func Register(name string, main func() int) {
	switch {
	case name == "":
		panic("reexec.Register: empty name")
	case main == nil:
		panic("reexec.Register(" + name + "): nil main")
	}
	if _, dup := mains[name]; dup {
		panic("reexec.Register(" + name + "): registered twice")
	}
	mains[name] = main
}

// Setting returns the environment entry (NAME=VALUE) that makes a process
// of this binary run the helper registered as name: the starter appends
// it to the child's environment.
func Setting(name string) string { return Env + "=" + name }

// Main runs the registered helper this process was started as, if it was
// started as one (Env set and not empty), and says so: ran is false, and
// nothing runs, for a process started as anything else. Env is removed
// from the helper's environment before its main runs, so that a process
// the helper starts in turn (a server, the same binary for another
// purpose) is not taken for a helper too. A name no package registered
// (a binary built without that package, a mistyped variable) is a usage
// error: Main prints why on stderr and returns code 2 with ran true,
// rather than fall through to the CLI with arguments that were never
// meant for it.
func Main() (code int, ran bool) {
	name := os.Getenv(Env)
	if name == "" {
		return 0, false
	}
	os.Unsetenv(Env)
	main, err := lookup(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "storebench: %v\n", err)
		return 2, true
	}
	return main(), true
}

// lookup returns the entry point of the helper called name, or an error
// naming the helpers this binary has.
func lookup(name string) (func() int, error) {
	if main, ok := mains[name]; ok {
		return main, nil
	}
	return nil, fmt.Errorf("%s=%q names no helper process of this binary (registered: %s)", Env, name, names())
}

// names returns the registered helpers' names, sorted and joined by
// commas ("none" when no package registered one), for error messages.
func names() string {
	if len(mains) == 0 {
		return "none"
	}
	names := make([]string, 0, len(mains))
	for n := range mains {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
