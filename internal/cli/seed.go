package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"storebench/internal/coordinator"
	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/seedcmp"
	"storebench/internal/study"
	"storebench/internal/sysinfo"
)

const seedUsage = `
Usage: storebench seed [NNN [--run [--out DIR] [--yes] [--expect holds|FINDING=holds]...]]

Does a seed's conclusion hold here? The seeds are the studies storebench
reproduces (000..004). Each one's figures are transcribed once as data
(studies/seeds/NNN.yaml), every figure with the line of the seed's text
it is on, grouped in findings: one table of the seed, or one column of
one.

With no argument, lists the seeds. With a seed's number, lists its
findings (id, title, the seed's lines their figures cite) under the
built-in study that tests them: the one whose seed_study names the seed
and that runs the finding's workload (where several do, the one that
tests the most of the seed's findings). For each study it gives the
command that runs it at the seed's own scale (storebench run STUDY
--scale seed), what that scale sets, its estimate, and this machine
beside the seed's. A finding whose workload no study runs says so.

With --run, runs those studies one after another at --scale seed, as
storebench run does (each writes results/<study>-<time>/ under --out, its
report included), then prints every finding with its verdict, computed
from results.json against the seed's figures as the report's "Against
the seed" section computes it: holds (same engine ordering, same growth
with size), differs (with what this run measured that sets it apart:
durability class, page cache, CPU count) or not comparable (and why).
The last line counts them.

Before anything runs, every study is checked and its time estimated
(from the workloads that estimate theirs, else the study's time limit).
Over an hour in all, or unknown, storebench asks on the terminal first;
--yes runs without asking, and with no terminal to ask on the run is
refused (exit 2). A study whose estimate does not fit this machine (see
storebench run --help) is refused before anything starts unless
--accept-estimate.

--expect turns the verdicts into a guard for a CI pipeline: "--expect
holds" wants every comparable finding to hold; "--expect FINDING=holds"
(repeatable) wants that finding to hold, and a finding that is not
comparable does not. Every verdict is printed first; then each
expectation not met is named on stderr and the exit status is 4.

Ctrl-C stops the study running as storebench run does (what was measured
is written, its servers stopped, its data removed), starts no other
study, and exits 130; so do SIGTERM and SIGHUP.

Exit status:
  0    every study ran whole, every expectation met
  1    a target of a study failed (the verdicts are printed all the same;
       1 wins over 4 and 3)
  2    bad command line, unknown seed or finding, a study refused before it
       started, or a long run not confirmed
  3    a study was cut short by a limit (partial results; 4 wins over 3)
  4    --expect: a pinned finding's verdict is not "holds"
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP): no further study started

Examples:
  storebench seed                                # the seeds, each with its title
  storebench seed 003                            # its findings, and the commands that test them here
  storebench seed 004 --run                      # run them, then each finding's verdict
  storebench seed 000 --run --yes --out /data/results
  storebench seed 004 --run --yes --expect holds                 # exit 4 unless every comparable finding holds
  storebench seed 000 --run --yes --expect insert=holds --expect select=holds
`

// seedStudy is a built-in study that tests some of a seed's findings.
type seedStudy struct {
	name     string       // its built-in name (storebench run NAME)
	s        *study.Study // as it will run: its seed scale and --set applied
	scale    string       // "seed", or "" for a study without a seed scale
	findings []*seedcmp.Finding
	also     []string // other studies of the seed that run these findings' workloads
	sets     []string // the --set overrides that go to it
}

// seedPlan is what tests a seed here: its studies, and the findings
// whose workload no built-in study runs.
type seedPlan struct {
	seed    *seedcmp.Seed
	studies []*seedStudy
	none    []*seedcmp.Finding
}

// expectations are what --expect pins.
type expectations struct {
	all bool     // every comparable finding holds
	ids []string // these findings hold
}

type seedRunOpts struct {
	out         string
	yes, accept bool
	want        expectations
}

func cmdSeed(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("seed", seedUsage, stderr)
	if code, stop := fs.parse(args, stdout); stop {
		return code
	}
	run := fs.on("run")
	if fs.NArg() > 1 {
		return fail(stderr, usagef("seed takes one seed's number, not %d arguments (try `storebench seed --help`)", fs.NArg()))
	}
	if !run {
		var given []string
		fs.Visit(func(f *flag.Flag) { given = append(given, "--"+f.Name) })
		if len(given) > 0 {
			return fail(stderr, usagef("seed: %s without --run: it applies to a run (storebench seed NNN --run)", strings.Join(given, ", ")))
		}
	}
	if fs.NArg() == 0 {
		if run {
			return fail(stderr, usagef("seed --run needs a seed's number (storebench seed lists them)"))
		}
		return listSeeds(stdout, stderr)
	}
	seed, err := seedcmp.Load(fs.Arg(0))
	if err != nil {
		return fail(stderr, usagef("%v; transcribed: %s", err, strings.Join(seedcmp.IDs(), ", ")))
	}
	want, err := parseExpect(fs.list("expect"), seed)
	if err != nil {
		return fail(stderr, err)
	}
	p, err := planSeed(seed, fs.list("set"))
	if err != nil {
		return fail(stderr, err)
	}
	if !run {
		return printOut(stdout, stderr, showSeed(p))
	}
	return runSeed(p, seedRunOpts{out: fs.str("out"), yes: fs.on("yes"), accept: fs.on("accept-estimate"), want: want}, stdout, stderr)
}

// parseExpect reads --expect: holds, or FINDING=holds for one of the
// seed's findings.
func parseExpect(vals []string, s *seedcmp.Seed) (expectations, error) {
	var e expectations
	for _, v := range vals {
		id, what, pinned := strings.Cut(v, "=")
		if !pinned {
			id, what = "", v
		}
		if what != seedcmp.Holds || (pinned && id == "") {
			return e, usagef("--expect %q: want holds (every comparable finding) or FINDING=holds", clip(v))
		}
		if !pinned {
			e.all = true
			continue
		}
		if findingOf(s, id) == nil {
			return e, usagef("--expect %s: seed %s has no finding %q (its findings: %s)", clip(v), s.ID, clip(id), strings.Join(findingIDs(s), ", "))
		}
		if !slices.Contains(e.ids, id) {
			e.ids = append(e.ids, id)
		}
	}
	return e, nil
}

func findingOf(s *seedcmp.Seed, id string) *seedcmp.Finding {
	for i := range s.Findings {
		if s.Findings[i].ID == id {
			return &s.Findings[i]
		}
	}
	return nil
}

func findingIDs(s *seedcmp.Seed) []string {
	var ids []string
	for _, f := range s.Findings {
		ids = append(ids, f.ID)
	}
	return ids
}

// seedCandidate is a built-in study that names a seed.
type seedCandidate struct {
	name string
	s    *study.Study
}

// seedStudies are the built-in studies whose seed_study names a seed (id
// "": every one that names any), by name. One that does not load is left
// out: it could not run either.
func seedStudies(id string) []seedCandidate {
	var out []seedCandidate
	for _, name := range study.Builtin() {
		s, err := study.Load(name)
		if err == nil && s.SeedStudy != "" && (id == "" || s.SeedStudy == id) {
			out = append(out, seedCandidate{name, s})
		}
	}
	return out
}

func runsWorkload(s *study.Study, w string) bool {
	for _, e := range s.Workloads {
		if e.Name == w {
			return true
		}
	}
	return false
}

// planSeed picks the studies that test a seed's findings: the study that
// tests the most of those left, until none is left or no study tests
// any (ties: by name). The studies come in the order of their first
// finding, each with its seed scale and the --set overrides of its
// workloads applied.
func planSeed(seed *seedcmp.Seed, sets []string) (*seedPlan, error) {
	cands := seedStudies(seed.ID)
	p := &seedPlan{seed: seed}
	var rest []*seedcmp.Finding
	for i := range seed.Findings {
		rest = append(rest, &seed.Findings[i])
	}
	for len(rest) > 0 {
		var best *seedCandidate
		var cover []*seedcmp.Finding
		for i, c := range cands {
			var cv []*seedcmp.Finding
			for _, f := range rest {
				if runsWorkload(c.s, f.WorkloadOf()) {
					cv = append(cv, f)
				}
			}
			if len(cv) > len(cover) {
				best, cover = &cands[i], cv
			}
		}
		if best == nil {
			break
		}
		p.studies = append(p.studies, &seedStudy{name: best.name, s: best.s, findings: cover})
		rest = slices.DeleteFunc(rest, func(f *seedcmp.Finding) bool { return slices.Contains(cover, f) })
	}
	p.none = rest
	sort.SliceStable(p.studies, func(i, j int) bool {
		return findingIndex(seed, p.studies[i].findings[0]) < findingIndex(seed, p.studies[j].findings[0])
	})
	for _, st := range p.studies {
		st.also = alsoRunBy(cands, st)
		if _, ok := st.s.Scales["seed"]; ok {
			st.scale = "seed"
		}
	}
	return p, p.apply(sets)
}

func findingIndex(s *seedcmp.Seed, f *seedcmp.Finding) int {
	return slices.IndexFunc(s.Findings, func(g seedcmp.Finding) bool { return g.ID == f.ID })
}

// alsoRunBy names the other studies of the seed that run a workload of
// st's findings.
func alsoRunBy(cands []seedCandidate, st *seedStudy) []string {
	var out []string
	for _, c := range cands {
		if c.name == st.name {
			continue
		}
		for _, f := range st.findings {
			if runsWorkload(c.s, f.WorkloadOf()) {
				out = append(out, c.name)
				break
			}
		}
	}
	return out
}

// apply gives each --set to the studies that run its workload, and
// applies every study's seed scale and overrides, checking them.
func (p *seedPlan) apply(sets []string) error {
	for _, v := range sets {
		key, _, ok := strings.Cut(v, "=")
		w, _, dotted := strings.Cut(key, ".")
		if !ok || !dotted || w == "" {
			return usagef("--set %s: want workload.param=value", clip(v))
		}
		var to []string
		for _, st := range p.studies {
			if runsWorkload(st.s, w) {
				st.sets = append(st.sets, v)
				to = append(to, st.name)
			}
		}
		if len(to) == 0 {
			return usagef("--set %s: no study of seed %s runs workload %q (they run: %s)", clip(v), p.seed.ID, clip(w), strings.Join(p.workloads(), ", "))
		}
	}
	for _, st := range p.studies {
		if err := st.s.Apply(study.Override{Scale: st.scale, Set: st.sets}); err != nil {
			if _, ok := err.(*study.Error); ok {
				return err
			}
			return usagef("%s: %v", st.name, err)
		}
	}
	return nil
}

func (p *seedPlan) workloads() []string {
	var out []string
	for _, st := range p.studies {
		for _, e := range st.s.Workloads {
			if !slices.Contains(out, e.Name) {
				out = append(out, e.Name)
			}
		}
	}
	return out
}

// command is the storebench run command line that runs the study at the
// seed's scale.
func (st *seedStudy) command() string {
	c := "storebench run " + st.name
	if st.scale != "" {
		c += " --scale " + st.scale
	}
	return c
}

// listSeeds lists the transcribed seeds, each with its title and the
// studies that name it.
func listSeeds(stdout, stderr io.Writer) int {
	var b strings.Builder
	b.WriteString("SEEDS (storebench seed NNN: a seed's findings, and the studies that test them here)\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	cands := seedStudies("")
	for _, id := range seedcmp.IDs() {
		title := ""
		if s, err := seedcmp.Load(id); err != nil {
			title = "cannot read: " + err.Error()
		} else {
			title = s.Title
		}
		var names []string
		for _, c := range cands {
			if c.s.SeedStudy == id {
				names = append(names, c.name)
			}
		}
		studies := "no built-in study"
		if len(names) > 0 {
			studies = "studies: " + strings.Join(names, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t(%s)\n", id, title, studies)
	}
	tw.Flush()
	return printOut(stdout, stderr, b.String())
}

// showSeed is seed NNN's findings under the studies that test them.
func showSeed(p *seedPlan) string {
	s := p.seed
	var b strings.Builder
	fmt.Fprintf(&b, "Seed %s: %s\n", s.ID, s.Title)
	fmt.Fprintf(&b, "Its figures: studies/seeds/%s.yaml, each citing its line of the seed's text (studies/seeds/text/%s).\n", s.ID, s.File)
	var hw []string
	for _, h := range s.Hardware {
		hw = append(hw, h.ID+": "+h.What)
	}
	fmt.Fprintf(&b, "The seed's machines: %s.\n", strings.Join(hw, "; "))
	host := sysinfo.Collect()
	for _, st := range p.studies {
		b.WriteString("\n")
		writeSeedStudy(&b, s, st, host)
	}
	if len(p.none) > 0 {
		b.WriteString("\nNo built-in study runs the workload of these findings:\n")
		writeFindings(&b, p.none, true)
	}
	if len(p.studies) > 0 {
		fmt.Fprintf(&b, "\nRun them here and see whether each finding holds: storebench seed %s --run\n", s.ID)
	}
	return b.String()
}

func writeSeedStudy(b *strings.Builder, seed *seedcmp.Seed, st *seedStudy, host sysinfo.Host) {
	s := st.s
	fmt.Fprintf(b, "%s: %s\n", st.name, st.command())
	var targets []string
	for _, t := range s.Targets {
		targets = append(targets, t.Name)
	}
	scale := "scale seed"
	if st.scale == "" {
		scale = "no seed scale: the study as it is"
	}
	limit := "no time limit"
	if s.Limits.Time > 0 {
		limit = "time limit " + time.Duration(s.Limits.Time).String()
	}
	fmt.Fprintf(b, "  %s: ladder %s, targets %s, durability %s, %s\n", scale, ladderString(s), strings.Join(targets, ","), s.Durability, limit)
	c, err := estimateStudy(s, ".")
	if err != nil {
		fmt.Fprintf(b, "  estimate: none (%v)\n", err)
	} else {
		fmt.Fprintf(b, "  estimate: %s\n", c.text)
	}
	where := "this machine"
	if len(s.Machines) > 0 {
		// The scale's machine shapes (the seed's machines, scaled).
		where = "machine shapes " + strings.Join(s.Machines, "; ") + " (needs root and cgroup v1; docs/machines.md) on this machine"
	}
	fmt.Fprintf(b, "  runs on: %s, %d logical CPUs, %s RAM (%s); the seed's: %s\n",
		where, host.LogicalCPUs, section.Bytes(host.MemTotalBytes), host.CPUModel, seedHardware(seed, st.findings))
	if len(st.also) > 0 {
		fmt.Fprintf(b, "  the same workloads, fewer of the seed's findings: %s\n", strings.Join(st.also, ", "))
	}
	writeFindings(b, st.findings, false)
}

// seedHardware is the machines a finding's figures were measured on.
func seedHardware(s *seedcmp.Seed, fs []*seedcmp.Finding) string {
	var out []string
	for _, f := range fs {
		for _, g := range f.Figures {
			h := s.HardwareOf(g.Hardware)
			x := h.ID
			var what []string
			if h.CPUs > 0 {
				what = append(what, fmt.Sprintf("%d CPUs", h.CPUs))
			}
			if h.RAMGiB > 0 {
				what = append(what, fmt.Sprintf("%g GiB RAM", h.RAMGiB))
			}
			if len(what) > 0 {
				x += " (" + strings.Join(what, ", ") + ")"
			}
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	return strings.Join(out, "; ")
}

// writeFindings lists findings: id, title, the seed's lines, and with
// workload the workload each belongs to.
func writeFindings(b *strings.Builder, fs []*seedcmp.Finding, workload bool) {
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	for _, f := range fs {
		extra := ""
		if workload {
			extra = fmt.Sprintf("; its workload: %s", f.WorkloadOf())
		}
		fmt.Fprintf(tw, "  %s\t%s\t(%s%s)\n", f.ID, f.Title, seedLines(f), extra)
	}
	tw.Flush()
}

// seedLines are the seed's lines a finding cites: a conclusion's own
// sentence, else its figures': "seed lines 30–31, 45".
func seedLines(f *seedcmp.Finding) string {
	ls := append([]int(nil), f.Source...)
	for _, g := range f.Figures {
		if len(f.Source) > 0 {
			break
		}
		for _, l := range g.Source {
			if !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
		}
	}
	sort.Ints(ls)
	var parts []string
	for i := 0; i < len(ls); {
		j := i
		for j+1 < len(ls) && ls[j+1] == ls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", ls[i], ls[j]))
		} else {
			parts = append(parts, strconv.Itoa(ls[i]))
		}
		i = j + 1
	}
	switch len(ls) {
	case 0:
		return "no seed line"
	case 1:
		return "seed line " + parts[0]
	}
	return "seed lines " + strings.Join(parts, ", ")
}

// seedCost is a study's estimated time.
type seedCost struct {
	d      time.Duration
	known  bool
	text   string // how, one line
	short  string // how long, a few words
	tooBig string // why it does not fit this machine ("" when it does)
}

// estimateStudy is the study's estimate where its workloads make one
// (storebench run prints the same), else its time limit; with neither
// the time is unknown.
func estimateStudy(s *study.Study, out string) (seedCost, error) {
	e, ok, err := coordinator.Estimate(s)
	if err != nil {
		return seedCost{}, err
	}
	if ok {
		return seedCost{d: e.Time, known: true, text: e.String(), short: "about " + roundDuration(e.Time), tooBig: e.TooBig(s, out)}, nil
	}
	if lim := time.Duration(s.Limits.Time); lim > 0 {
		text := fmt.Sprintf("at most %s, its time limit (its workloads do not estimate theirs)", lim)
		return seedCost{d: lim, known: true, text: text, short: text}, nil
	}
	text := "unknown: its workloads do not estimate theirs, and it has no time limit"
	return seedCost{text: text, short: text}, nil
}

// runSeed runs the plan's studies one after another, then prints each
// finding's verdict and checks --expect.
func runSeed(p *seedPlan, o seedRunOpts, stdout, stderr io.Writer) int {
	if len(p.studies) == 0 {
		return fail(stderr, usagef("seed %s: no built-in study runs the workload of any of its findings", p.seed.ID))
	}
	if err := checkOut(o.out); err != nil {
		return fail(stderr, err)
	}
	total, known, err := p.precheck(o, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	if code, stop := confirmSeed(p, total, known, o.yes, stderr); stop {
		return code
	}
	ran, code := p.runStudies(o, stdout, stderr)
	if code != exitOK {
		return code
	}
	text, outcome := seedVerdicts(p, ran)
	if code := printOut(stdout, stderr, text); code != exitOK {
		return code
	}
	met := checkExpect(p, o.want, outcome, stderr)
	code = exitOK
	for _, r := range ran {
		switch {
		case r.code == exitPartial && code == exitOK:
			code = exitPartial
		case r.code != exitOK && r.code != exitPartial:
			code = exitFailed
		}
	}
	if !met && code != exitFailed {
		code = exitNotHeld
	}
	return code
}

// precheck plans every study as storebench run would and estimates it,
// so that a bad override or a study that does not fit is refused before
// anything runs. It returns the time of them all (known false: some
// study's is unknown).
func (p *seedPlan) precheck(o seedRunOpts, stderr io.Writer) (time.Duration, bool, error) {
	var total time.Duration
	known := true
	for _, st := range p.studies {
		if _, err := coordinator.Prepare(st.s); err != nil {
			return 0, false, err
		}
		c, err := estimateStudy(st.s, o.out)
		if err != nil {
			return 0, false, err
		}
		fmt.Fprintf(stderr, "estimate for %s: %s\n", st.command(), c.short)
		if c.tooBig != "" && !o.accept {
			return 0, false, usagef("%s does not fit this machine: %s; give --accept-estimate to run it anyway", st.command(), c.tooBig)
		}
		total += c.d
		known = known && c.known
	}
	return total, known, nil
}

// confirmSeed asks on the terminal before a run of over an hour, or of
// a time unknown, unless --yes; with no terminal, or no answer, nothing
// runs (exit 2).
func confirmSeed(p *seedPlan, total time.Duration, known, yes bool, stderr io.Writer) (int, bool) {
	how := "about " + roundDuration(total)
	if !known {
		how = "an unknown time"
		if total > 0 {
			how = "over " + roundDuration(total)
		}
	}
	studies := "1 study"
	if len(p.studies) > 1 {
		studies = fmt.Sprintf("%d studies", len(p.studies))
	}
	fmt.Fprintf(stderr, "seed %s: %s to run, %s in all\n", p.seed.ID, studies, how)
	if yes || (known && total <= time.Hour) {
		return 0, false
	}
	if _, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS); err != nil {
		fmt.Fprintf(stderr, "storebench: seed %s --run takes %s and there is no terminal to confirm on: pass --yes to run it\n", p.seed.ID, how)
		return exitUsage, true
	}
	fmt.Fprintf(stderr, "Run them (%s)? [y/N] ", how)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintf(stderr, "\nstorebench: seed %s --run not confirmed (no answer): pass --yes to run it\n", p.seed.ID)
		return exitUsage, true
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		fmt.Fprintf(stderr, "storebench: seed %s --run not confirmed: nothing ran\n", p.seed.ID)
		return exitUsage, true
	}
	return 0, false
}

func roundDuration(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// seedRan is a study that ran: its results directory ("" when none was
// made) and storebench run's exit status.
type seedRan struct {
	st   *seedStudy
	dir  string
	code int
}

func (st *seedStudy) runArgs(o seedRunOpts) []string {
	a := []string{st.name}
	if st.scale != "" {
		a = append(a, "--scale", st.scale)
	}
	a = append(a, "--out", o.out, "--quiet")
	for _, v := range st.sets {
		a = append(a, "--set", v)
	}
	if o.accept {
		a = append(a, "--accept-estimate")
	}
	return a
}

// runStudies runs the studies one after another through storebench
// run's own code. An interrupt stops the study running (run handles it)
// and starts no other: exit 130. A study refused (exit 2) stops them too.
func (p *seedPlan) runStudies(o seedRunOpts, stdout, stderr io.Writer) ([]seedRan, int) {
	ctx, stop := notifyInterrupt(context.Background())
	defer stop()
	var ran []seedRan
	for i, st := range p.studies {
		if ctx.Err() != nil {
			return ran, p.interrupted(i, stderr)
		}
		args := st.runArgs(o)
		fmt.Fprintf(stderr, "\nseed %s, study %d of %d: storebench run %s\n", p.seed.ID, i+1, len(p.studies), strings.Join(args, " "))
		r := seedRan{st: st}
		r.code = runStudy(args, stdout, stderr, func(dir string) { r.dir = dir })
		switch r.code {
		case exitInterrupted:
			return ran, p.interrupted(i+1, stderr)
		case exitUsage:
			fmt.Fprintf(stderr, "storebench: seed %s: %s was refused (above); no further study started\n", p.seed.ID, st.name)
			return ran, exitUsage
		}
		ran = append(ran, r)
	}
	return ran, exitOK
}

// interrupted says which studies were not started, from the next.
func (p *seedPlan) interrupted(next int, stderr io.Writer) int {
	var left []string
	for _, st := range p.studies[next:] {
		left = append(left, st.name)
	}
	msg := "storebench: seed " + p.seed.ID + ": interrupted"
	if len(left) > 0 {
		msg += "; not started: " + strings.Join(left, ", ")
	}
	fmt.Fprintln(stderr, msg)
	return exitInterrupted
}

// seedVerdicts prints every finding's verdict, by study, and the count
// of each outcome; it returns the text and each finding's outcome.
func seedVerdicts(p *seedPlan, ran []seedRan) (string, map[string]string) {
	var b strings.Builder
	outcome := map[string]string{}
	for _, r := range ran {
		verdicts, why := studyVerdicts(p.seed, r)
		where := why
		if why == "" {
			where = filepath.Join(r.dir, "report.md")
		}
		fmt.Fprintf(&b, "\n%s (%s):\n", r.st.command(), where)
		for _, f := range r.st.findings {
			line := seedcmp.NotComparable + ": " + why
			outcome[f.ID] = seedcmp.NotComparable
			if v, ok := verdicts[f.ID]; ok {
				line, outcome[f.ID] = v.Summary(seedCount), v.Outcome
			} else if why == "" {
				line = fmt.Sprintf("%s: the run has no step of its workload (%s)", seedcmp.NotComparable, f.WorkloadOf())
			}
			fmt.Fprintf(&b, "  %s (%s)\n    %s\n", f.ID, f.Title, line)
		}
	}
	if len(p.none) > 0 {
		b.WriteString("\nno built-in study runs the workload of:\n")
		for _, f := range p.none {
			outcome[f.ID] = seedcmp.NotComparable
			fmt.Fprintf(&b, "  %s (%s)\n    %s: no built-in study of seed %s runs its workload (%s)\n", f.ID, f.Title, seedcmp.NotComparable, p.seed.ID, f.WorkloadOf())
		}
	}
	n := map[string]int{}
	for _, o := range outcome {
		n[o]++
	}
	fmt.Fprintf(&b, "\nseed %s: %d holds, %d differs, %d not comparable\n", p.seed.ID, n[seedcmp.Holds], n[seedcmp.Differs], n[seedcmp.NotComparable])
	return b.String(), outcome
}

// studyVerdicts are the verdicts of a study's run, by finding; why says
// why there are none (no results).
func studyVerdicts(s *seedcmp.Seed, r seedRan) (map[string]seedcmp.Verdict, string) {
	if r.dir == "" {
		return nil, fmt.Sprintf("no results: its run exited %d before writing any", r.code)
	}
	run, err := results.Read(filepath.Join(r.dir, "results.json"))
	if err != nil {
		return nil, "no results: " + err.Error()
	}
	out := map[string]seedcmp.Verdict{}
	for _, fr := range seedcmp.Against(s, run).Findings {
		out[fr.Finding.ID] = fr.Verdict
	}
	return out, ""
}

// seedCount prints a size as the report's "Against the seed" does: 1e5,
// "—" for a figure at no size.
func seedCount(n float64) string {
	if n <= 0 {
		return "—"
	}
	if n == math.Trunc(n) && n < 1<<62 {
		return section.Count(int64(n))
	}
	return strconv.FormatFloat(n, 'g', 4, 64)
}

// checkExpect names each expectation not met, one line each on stderr.
func checkExpect(p *seedPlan, e expectations, outcome map[string]string, stderr io.Writer) bool {
	var bad []string
	for _, f := range p.seed.Findings {
		o := outcome[f.ID]
		pinned := slices.Contains(e.ids, f.ID)
		if o != seedcmp.Holds && (pinned || (e.all && o != seedcmp.NotComparable)) {
			bad = append(bad, f.ID)
			flag := "--expect holds"
			if pinned {
				flag = "--expect " + f.ID + "=holds"
			}
			fmt.Fprintf(stderr, "storebench: seed %s: %s not met: finding %s's verdict is %q\n", p.seed.ID, flag, f.ID, o)
		}
	}
	return len(bad) == 0
}
