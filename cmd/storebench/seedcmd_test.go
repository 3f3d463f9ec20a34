package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/seedcmp"
)

// storebench seed lists every transcribed seed with its title.
func TestSeedListsTheSeeds(t *testing.T) {
	stdout, stderr, code := runCLI(t, "seed")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ids := seedcmp.IDs()
	if !slices.Equal(ids, []string{"000", "001", "002", "003", "004"}) {
		t.Fatalf("seeds transcribed: %v", ids)
	}
	for _, id := range ids {
		s, err := seedcmp.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, "  "+id+"  "+s.Title) {
			t.Errorf("seed %s (%s) not listed:\n%s", id, s.Title, stdout)
		}
	}
}

// storebench seed 003 lists each finding under the study that tests it,
// with the command that runs it at the seed's scale; that study names
// seed 003 and runs the finding's workload.
func TestSeedShowsTheStudiesThatTestItsFindings(t *testing.T) {
	stdout, stderr, code := runCLI(t, "seed", "003")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	seed, err := seedcmp.Load("003")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "web-oltp: storebench run web-oltp --scale seed\n") || !strings.Contains(stdout, "logical CPUs") ||
		!strings.Contains(stdout, "storebench seed 003 --run") {
		t.Fatalf("no study, command or machine:\n%s", stdout)
	}
	blocks := strings.Split(stdout, "\n\n")
	for _, f := range seed.Findings {
		i := slices.IndexFunc(blocks, func(b string) bool { return strings.Contains(b, "\n  "+f.ID+" ") })
		if i < 0 {
			t.Errorf("finding %s not listed:\n%s", f.ID, stdout)
			continue
		}
		name, _, _ := strings.Cut(blocks[i], ":")
		src, err := os.ReadFile(filepath.Join("..", "..", "studies", name+".yaml"))
		if err != nil {
			t.Fatalf("finding %s is under %q: %v", f.ID, name, err)
		}
		if !strings.Contains(string(src), `seed_study: "003"`) || !strings.Contains(string(src), "- name: "+f.WorkloadOf()+"\n") {
			t.Errorf("finding %s (workload %s) is under %s, which does not run it for seed 003", f.ID, f.WorkloadOf(), name)
		}
		lines := f.Source
		if len(lines) == 0 {
			lines = f.Figures[0].Source
		}
		if line := lines[0]; !strings.Contains(blocks[i], strconv.Itoa(line)) {
			t.Errorf("finding %s: its seed line %d not given", f.ID, line)
		}
	}
}

// An unknown seed, an unknown finding, a malformed --expect or an
// --expect without --run: one line, exit 2, nothing run.
func TestSeedRefusesBadArguments(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"seed", "999"},
		{"seed", "4"},
		{"seed", "004", "--run", "--yes", "--out", out, "--expect", "nosuch=holds"},
		{"seed", "004", "--run", "--yes", "--out", out, "--expect", "maybe"},
		{"seed", "004", "--run", "--yes", "--out", out, "--expect", "ticks_per_s=differs"},
		{"seed", "004", "--expect", "holds"},
		{"seed", "004", "--run", "--yes", "--out", out, "--set", "nosuch.rate=1"},
		{"seed", "004", "--run", "--yes", "--out", out, "--set", "tripcache.rate=-5"},
		{"seed", "003", "004"},
	} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.HasPrefix(stderr, "storebench") {
			t.Errorf("%v: exit %d, want 2 with one line on stderr:\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
	}
	if _, stderr, _ := runCLI(t, "seed", "999"); !strings.Contains(stderr, "seed 999") {
		t.Errorf("the unknown seed is not named: %s", stderr)
	}
	if _, stderr, _ := runCLI(t, "seed", "004", "--run", "--expect", "nosuch=holds"); !strings.Contains(stderr, `"nosuch"`) || !strings.Contains(stderr, "ticks_per_s") {
		t.Errorf("the unknown finding, and the seed's, are not named: %s", stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("a refused command left %v", ents)
	}
}

// A run of unknown length is not started without --yes when there is no
// terminal to ask on.
func TestSeedRunAsksBeforeALongRun(t *testing.T) {
	out := t.TempDir()
	_, stderr, code := runCLI(t, "seed", "001", "--run", "--out", out)
	if code != 2 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("exit %d, want 2 saying to pass --yes:\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("a run not confirmed left %v", ents)
	}
}

// tinyTripcache cuts seed 004's study to seconds (the tripcache seed
// scale test's sizes): 20 base sensors x 5 clones, trips of 3-8 ticks,
// 4 rounds, 2 trials.
var tinyTripcache = []string{
	"--set", "tripcache.sensors=20", "--set", "tripcache.multiplier=5", "--set", "tripcache.min_ticks=3",
	"--set", "tripcache.max_ticks=8", "--set", "tripcache.rounds=4", "--set", "tripcache.rate=200",
	"--set", "tripcache.sweep.rate.start=200", "--set", "tripcache.sweep.rate.max_trials=2", "--set", "tripcache.grace=1s",
}

// storebench seed 004 --run runs tripcache at --scale seed (cut here by
// --set) and prints each finding's verdict as seedcmp computes it from
// the run's results.json. ticks_per_s is not comparable here (Aerospike,
// the seed's other engine, runs by URI only): pinned with --expect it
// fails the command with exit 4, after the verdicts; --expect holds,
// which asks it of comparable findings only, does not.
func TestSeedRunPrintsEachVerdictAndGuardsIt(t *testing.T) {
	out := t.TempDir()
	args := append([]string{"seed", "004", "--run", "--yes", "--out", out, "--expect", "ticks_per_s=holds", "--expect", "holds"}, tinyTripcache...)
	stdout, stderr, code := runCLIWithin(t, 3*time.Minute, args...)
	if code != 4 || !strings.Contains(stderr, "--expect ticks_per_s=holds not met") || strings.Contains(stderr, "--expect holds not met") {
		t.Fatalf("exit %d, want 4 naming the pinned finding only\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "estimate for storebench run tripcache --scale seed: about ") {
		t.Errorf("no estimate before the run:\n%s", stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := seedcmp.Load("004")
	if err != nil {
		t.Fatal(err)
	}
	res := seedcmp.Against(seed, run)
	if len(res.Findings) != len(seed.Findings) {
		t.Fatalf("%d of the seed's %d findings set beside the run", len(res.Findings), len(seed.Findings))
	}
	want := fmt.Sprintf("\nstorebench run tripcache --scale seed (%s):\n", filepath.Join(dir, "report.md"))
	n := map[string]int{}
	for _, fr := range res.Findings {
		want += fmt.Sprintf("  %s (%s)\n    %s\n", fr.Finding.ID, fr.Finding.Title, fr.Verdict.Summary(seedSize))
		n[fr.Verdict.Outcome]++
	}
	want += fmt.Sprintf("\nseed 004: %d holds, %d differs, %d not comparable\n", n[seedcmp.Holds], n[seedcmp.Differs], n[seedcmp.NotComparable])
	if stdout != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	for _, fr := range res.Findings {
		if fr.Finding.ID == "ticks_per_s" && fr.Verdict.Outcome != seedcmp.NotComparable {
			t.Fatalf("ticks_per_s: want not comparable with RocksDB alone:\n%s", stdout)
		}
	}

	// --expect holds alone: no comparable finding differs, exit 0.
	out = t.TempDir()
	args = append([]string{"seed", "004", "--run", "--yes", "--out", out, "--expect", "holds"}, tinyTripcache...)
	if stdout, stderr, code := runCLIWithin(t, 3*time.Minute, args...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// seedSize is the report's size format (internal/report's seedSize).
func seedSize(n float64) string {
	if n <= 0 {
		return "—"
	}
	if n == math.Trunc(n) && n < 1<<62 {
		return section.Count(int64(n))
	}
	return strconv.FormatFloat(n, 'g', 4, 64)
}

// Ctrl-C during seed --run stops the study running (storebench run's
// interrupt: exit 130, its results written as interrupted) and starts
// none of the others: seed 001 runs ads-rw, then tokens.
func TestSeedRunStopsAtAnInterrupt(t *testing.T) {
	out := t.TempDir()
	cmd := storebench(t, "seed", "001", "--run", "--yes", "--out", out)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, &e, "study ads-rw,")
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after SIGINT\n%s", e.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(e.String(), "not started: tokens") {
		t.Fatalf("exit %d, want 130 with tokens not started\n%s", code, e.String())
	}
	dir := onlyDir(t, out)
	if !strings.HasPrefix(filepath.Base(dir), "ads-rw-") {
		t.Fatalf("results directory %s, want ads-rw's only", dir)
	}
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusInterrupted {
		t.Fatalf("ads-rw: status %q, want interrupted", run.Status)
	}
}

// storebench seed --help teaches, with examples, on stdout; the --set
// that tests pass through stays out of it.
func TestSeedHelp(t *testing.T) {
	for _, h := range []string{"--help", "-h"} {
		stdout, stderr, code := runCLI(t, "seed", h)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage: storebench seed") || !strings.Contains(stdout, "Examples:") ||
			!strings.Contains(stdout, "-expect value") || !strings.Contains(stdout, "  4 ") || strings.Contains(stdout, "-set") {
			t.Errorf("seed %s: exit %d: stdout %q, stderr %q", h, code, stdout, stderr)
		}
	}
	if stdout, _, _ := runCLI(t, "--help"); !strings.Contains(stdout, "  seed ") {
		t.Errorf("storebench --help does not list seed:\n%s", stdout)
	}
}
