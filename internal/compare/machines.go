package compare

import (
	"fmt"
	"slices"
	"strings"

	"storebench/internal/results"
)

// A target run on a machine shape (issue 35: --machine, a study's
// machines:) is named ENGINE@TITLE, TITLE the shape's name or limits, and
// results.json's target says the whole shape in Machine. Across runs a
// target is the same engine on the same machine: rocksdb on
// cpus=0.5,memory=256MiB in A is compared with rocksdb on
// cpus=0.5,memory=256MiB in B, never with rocksdb on cpus=1; and a named
// shape whose limits changed between the runs is a different machine.

// engine is a target's name without its machine.
func engine(t *results.Target) string {
	if i := strings.LastIndexByte(t.Name, '@'); i > 0 && t.Machine != "" {
		return t.Name[:i]
	}
	return t.Name
}

// Counterpart is the target of r that is t's engine on t's machine (nil:
// none).
func Counterpart(r *results.Run, t *results.Target) *results.Target {
	for _, o := range r.Targets {
		if o.Machine == t.Machine && engine(o) == engine(t) {
			return o
		}
	}
	return nil
}

// sideOf gathers t's counterpart in every run of a side, labelled with
// arg (the side's run directories as given); false when a run lacks it.
func sideOf(runs []*results.Run, arg string, t *results.Target) (Side, bool) {
	var sd Side
	for i, r := range runs {
		o := Counterpart(r, t)
		if o == nil {
			return sd, false
		}
		if i == 0 {
			sd = Side{Label: o.Title + " in " + arg, Target: o}
		} else {
			sd.Repeats = append(sd.Repeats, o)
		}
	}
	return sd, true
}

// Pairs are the targets two sides compare: each target of A's first run
// that every run of both sides has, the same engine on the same machine.
// Skipped says, for a target whose name every run has but on another
// machine in some (a named shape whose limits changed), that it is not
// compared and why.
func Pairs(ra, rb []*results.Run, argA, argB string) (pairs [][2]Side, skipped []string) {
	if len(ra) == 0 || len(rb) == 0 {
		return nil, nil
	}
	for _, t := range ra[0].Targets {
		a, okA := sideOf(ra, argA, t)
		b, okB := sideOf(rb, argB, t)
		if okA && okB {
			pairs = append(pairs, [2]Side{a, b})
			continue
		}
		if ms := machinesOf(append(slices.Clone(ra), rb...), t.Name); len(ms) > 1 {
			skipped = append(skipped, fmt.Sprintf("**%s is not compared**: it ran on different machines in the runs (%s).", t.Name, strings.Join(ms, "; ")))
		}
	}
	return pairs, skipped
}

// machinesOf are the distinct machines the target named name ran on in
// runs, "" for this machine as it is; nil when a run lacks the name.
func machinesOf(runs []*results.Run, name string) []string {
	var ms []string
	for _, r := range runs {
		o := findTarget(r, name)
		if o == nil {
			return nil
		}
		if m := machineOrAsIs(o.Machine); !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

func machineOrAsIs(m string) string {
	if m == "" {
		return "this machine as it is"
	}
	return m
}

// machineLine says in a comparison's heading the machine each side's
// target ran on; "" when neither ran on a shape.
func machineLine(a, b Side) string {
	ma, mb := a.Target.Machine, b.Target.Machine
	switch {
	case ma == "" && mb == "":
		return ""
	case ma == mb:
		return "Machine: " + ma + " (both sides)\n"
	}
	return "Machine: A " + machineOrAsIs(ma) + "; B " + machineOrAsIs(mb) + "\n"
}

// SplitTargets reads --targets A,B against the names of r's targets. A
// target on a machine shape has commas in its name
// (rocksdb@cpus=0.5,memory=256MiB), so the comma between the two names
// is the one that leaves a target's name on either side of it.
func SplitTargets(arg string, r *results.Run) (a, b string, err error) {
	var found [][2]string
	for i, c := range arg {
		if c == ',' && findTarget(r, arg[:i]) != nil && findTarget(r, arg[i+1:]) != nil {
			found = append(found, [2]string{arg[:i], arg[i+1:]})
		}
	}
	switch {
	case len(found) == 1:
		return found[0][0], found[0][1], nil
	case len(found) > 1:
		return "", "", fmt.Errorf("--targets %s: two targets can be read from it more than one way", arg)
	}
	if parts := strings.Split(arg, ","); len(parts) == 2 {
		// Names the run lacks: the caller says which.
		return parts[0], parts[1], nil
	}
	var names []string
	for _, t := range r.Targets {
		names = append(names, t.Name)
	}
	return "", "", fmt.Errorf("--targets %s: want two of the run's targets, A,B (its targets: %s)", arg, strings.Join(names, ", "))
}
