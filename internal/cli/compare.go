package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"storebench/internal/compare"
	"storebench/internal/results"
	"storebench/internal/safefile"
	"storebench/internal/study"
)

const compareUsage = `
Usage: storebench compare RUN_A RUN_B [--force] [--html FILE]
       storebench compare RUN --targets A,B [--html FILE]

Puts two measurements side by side, step by step: throughput and median
and p99 service time, the ratio B/A, and a verdict that respects noise.
Across runs a target on a machine shape (--machine) is compared with the
same target on the same shape only, and each comparison names its
machines.

The noise: a side may be several runs of the same study, separated by
commas (RUN_A1,RUN_A2,RUN_A3); with two or more runs on both sides a
difference must stand out of the spread between runs (Welch's t-test at
95%). With one run per side it must stand out of the spread of the
per-second intervals within each phase (Welch's t-test at 95%, Student's
t for the few intervals a short phase has); percentiles of phases shorter
than 3 seconds are judged from their whole HdrHistograms. Anything inside
the noise is "no significant difference".

The runs must be comparable: runs of different studies, or whose studies
have different workloads, are refused (exit 2, naming the difference)
unless --force is given; so are repeated runs of one side that differ so.
Every other way the runs differ (durability, the workloads' parameters,
ladder, concurrency, seed, the machine, storebench version, the targets'
versions and settings) is listed above the verdicts, which may reflect it.
A results.json without a study or targets is refused (exit 2), and so is
one that is not a regular file in its run directory (a symbolic link, a
FIFO, a device) or is over 256 MiB, or a study.yaml beside it that is not
a regular file.

Markdown on stdout; --html FILE also writes the comparison as a
self-contained HTML page.

Examples:
  storebench compare results/ledger-20261122-101500 results/ledger-20261123-090000
  storebench compare results/ledger-20261122-101500 --targets pebble,rocksdb
  storebench compare results/ledger-a1,results/ledger-a2 results/ledger-b1,results/ledger-b2 --html cmp.html
  storebench compare results/ledger-20261122-101500 results/tripcache-20261123-090000 --force
`

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", compareUsage, stderr)
	if code, stop := fs.parse(args, stdout); stop {
		return code
	}
	var c comparison
	var err error
	targets := fs.str("targets")
	switch {
	case targets != "" && fs.NArg() == 1:
		err = c.twoTargets(fs.Arg(0), targets)
	case targets == "" && fs.NArg() == 2:
		err = c.twoRuns(fs.Arg(0), fs.Arg(1))
	case targets == "" && fs.NArg() == 0:
		fs.Usage()
		return exitUsage
	default:
		err = compareArgsErr(targets != "", fs.NArg())
	}
	if err != nil {
		return fail(stderr, err)
	}
	// Runs of different studies or workloads measured different things:
	// a verdict between them would be false. Every other difference is
	// listed above the verdicts.
	if err := compare.Incomparable(c.checked); err != nil && !fs.on("force") {
		return fail(stderr, usagef("%v (--force compares them anyway)", err))
	}
	md := c.markdown()
	code := printOut(stdout, stderr, md)
	if htmlOut := fs.str("html"); htmlOut != "" {
		if err := safefile.WriteFile(htmlOut, compareHTML(md), 0o644); err != nil {
			return fail(stderr, usagef("--html %s: cannot write it: %v", htmlOut, pathErr(err)))
		}
		fmt.Fprintf(stderr, "comparison: %s\n", htmlOut)
	}
	return code
}

// compareArgsErr says in one line what is wrong with compare's
// arguments: n runs given, with --targets or without.
func compareArgsErr(targets bool, n int) error {
	const try = " (try `storebench compare --help`)"
	if targets {
		return usagef("compare --targets A,B compares two targets of one run (storebench compare RUN --targets A,B); given %d"+try, n)
	}
	return usagef("compare takes two runs (RUN_A RUN_B, several runs of a side comma-separated) or one run and --targets A,B; given %d"+try, n)
}

// comparison is what compare puts side by side.
type comparison struct {
	// checked are every run read, labelled, for the check that they
	// measured the same thing the same way.
	checked []compare.Run
	// notes go above the verdicts: a run that did not finish (its
	// missing steps are missing because it stopped, not because they
	// were not planned), a target left out.
	notes []string
	pairs [][2]compare.Side
}

// loadAll reads a side: one run directory or several, comma-separated.
// Its runs are labelled side (one run) or side1, side2…
func (c *comparison) loadAll(arg, side string) ([]*results.Run, error) {
	var dirs []string
	for _, dir := range strings.Split(arg, ",") {
		if dir = strings.TrimSpace(dir); dir != "" {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, usagef("no run directory in %q", arg)
	}
	var runs []*results.Run
	for i, path := range dirs {
		r, dir, err := readRun(path)
		if err != nil {
			return nil, usagef("%v", err)
		}
		runs = append(runs, r)
		label := side
		if len(dirs) > 1 {
			label = fmt.Sprintf("%s%d", side, i+1)
		}
		st, err := studyAsRun(dir, r)
		if err != nil {
			return nil, err
		}
		c.checked = append(c.checked, compare.Run{Label: label, Path: path, Run: r, Study: st})
		if r.Status == results.StatusInterrupted {
			c.notes = append(c.notes, fmt.Sprintf("> **%s was interrupted** (%s): the steps it never ran are absent from this comparison.\n", dir, r.Reason))
		}
	}
	return runs, nil
}

// twoTargets compares two targets of one run (or of each of several),
// A,B.
func (c *comparison) twoTargets(arg, targets string) error {
	runs, err := c.loadAll(arg, "run")
	if err != nil {
		return err
	}
	// A,B: a name on a machine shape has commas of its own.
	nameA, nameB, err := compare.SplitTargets(targets, runs[0])
	if err != nil {
		return usagef("%v", err)
	}
	a, okA := sideOf(runs, arg, nameA)
	b, okB := sideOf(runs, arg, nameB)
	if !okA || !okB {
		return usagef("%s: not every run has targets %q and %q", arg, nameA, nameB)
	}
	c.pairs = append(c.pairs, [2]compare.Side{a, b})
	return nil
}

// twoRuns compares two runs (or sides of several), target by target:
// the same engine on the same machine shape in every run.
func (c *comparison) twoRuns(argA, argB string) error {
	ra, err := c.loadAll(argA, "A")
	if err != nil {
		return err
	}
	nA := len(c.checked)
	rb, err := c.loadAll(argB, "B")
	if err != nil {
		return err
	}
	// A run compared with itself (the same directory, named twice or
	// by another path, or a copy of it) would show no difference
	// that means anything: refused. (Sides of repeated runs may share
	// one: A1,A2 against A2,A1 is how repeats are compared.)
	if a, b := c.checked[:nA], c.checked[nA:]; len(a) == 1 && len(b) == 1 && sameRun(a[0], b[0]) {
		return usagef("compare: %s and %s are the same run", clip(a[0].Path), clip(b[0].Path))
	}
	var skipped []string
	c.pairs, skipped = compare.Pairs(ra, rb, argA, argB)
	for _, sk := range skipped {
		c.notes = append(c.notes, "> "+sk+"\n")
	}
	if len(c.pairs) == 0 {
		return usagef("the two sides share no target (present in every run of each)")
	}
	return nil
}

// sideOf gathers target name from every run of a side.
func sideOf(runs []*results.Run, arg, name string) (compare.Side, bool) {
	var sd compare.Side
	for i, r := range runs {
		t := findTarget(r, name)
		if t == nil {
			return sd, false
		}
		if i == 0 {
			sd = compare.Side{Label: t.Title + " in " + arg, Target: t}
		} else {
			sd.Repeats = append(sd.Repeats, t)
		}
	}
	return sd, true
}

func findTarget(r *results.Run, name string) *results.Target {
	for _, t := range r.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// markdown is the comparison: the notes, how the runs differ, and each
// pair's verdicts.
func (c *comparison) markdown() string {
	var md strings.Builder
	for _, n := range c.notes {
		md.WriteString(n + "\n")
	}
	if len(c.checked) > 1 {
		md.WriteString(compare.RunsMarkdown(c.checked, compare.Differences(c.checked)))
	}
	for _, p := range c.pairs {
		md.WriteString(compare.Markdown(p[0], p[1], compare.Compare(p[0], p[1])))
		md.WriteString("\n")
	}
	return md.String()
}

// sameRun tells whether two runs read are one: the same results file.
func sameRun(a, b compare.Run) bool {
	// The same file only: a copy of a run (an older schema's rendition
	// of it, say) is a comparison someone may want.
	fa, fb := resultsFile(a.Path), resultsFile(b.Path)
	return fa != nil && fb != nil && os.SameFile(fa, fb)
}

// resultsFile is the file info of a run argument's results.json.
func resultsFile(arg string) os.FileInfo {
	file := filepath.Join(arg, "results.json")
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		file = arg
	}
	st, err := os.Stat(file)
	if err != nil {
		return nil
	}
	return st
}

// studyAsRun is the study a run ran: study.yaml of its directory (scale
// and --set overrides applied), or else the text as given, from
// results.json. study.yaml is read only as a regular file in the run
// directory, of at most the size of a study file: a symbolic link planted
// there (to ~/.kube/config) is refused, its content never shown.
func studyAsRun(dir string, r *results.Run) (string, error) {
	b, err := safefile.ReadRegular(dir, "study.yaml", study.MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return r.StudySource, nil
	}
	if err != nil {
		return "", usagef("%s", runFileErr(filepath.Join(dir, "study.yaml"), err))
	}
	return string(b), nil
}

// runFileErr says in one line why a file of a run directory is not read.
func runFileErr(path string, err error) string {
	var tl *safefile.TooLargeError
	switch {
	case errors.As(err, &tl):
		return fmt.Sprintf("%s: %s, over the %s a run's file may have", path, safefile.Size(tl.Size), safefile.Size(tl.Max))
	case errors.Is(err, safefile.ErrLink):
		return fmt.Sprintf("%s: a symbolic link: storebench reads a run's files only as regular files in its directory", path)
	case errors.Is(err, safefile.ErrNotRegular):
		return fmt.Sprintf("%s: not a regular file: storebench reads a run's files only as regular files in its directory", path)
	}
	return fmt.Sprintf("%s: %v", path, pathErr(err))
}
