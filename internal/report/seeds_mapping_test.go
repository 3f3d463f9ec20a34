package report

import (
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

// againstSeedOf renders a kept run's "Against the seed" section, and the
// part of it under finding title.
func againstSeedOf(t *testing.T, run, title string) string {
	t.Helper()
	r, err := results.Read(filepath.Join("..", "..", "docs", "runs", run, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	againstSeed(&b, r)
	md := b.String()
	i := strings.Index(md, "### "+title+"\n")
	if i < 0 {
		t.Fatalf("%s: no finding %q in:\n%s", run, title, md)
	}
	md = md[i:]
	if j := strings.Index(md[4:], "\n### "); j >= 0 {
		md = md[:j+4]
	}
	return md
}

// Issue 34 (3.3): seed 000's "2.88 of load for 4 cpu" is a load average,
// not a percentage: its cell printed "2.88 %".
func TestLoadAverageCellIsNoPercentage(t *testing.T) {
	for _, run := range []string{"ledger-seed", "ledger-seed-20261127"} {
		md := againstSeedOf(t, run, "Load average under the stress, more than 150 GB stored")
		if !strings.Contains(md, "| — | seed 2.88 load average (l. 121, nuc) for 4 CPUs<br>not measured by storebench |") {
			t.Errorf("%s: the load average's cell:\n%s", run, md)
		}
		cpu := againstSeedOf(t, run, "CPU under the stress, more than 150 GB stored")
		if strings.Contains(cpu, "2.88") || !strings.Contains(cpu, "seed 70 % (l. 120, nuc) maximum<br>ours ") {
			t.Errorf("%s: the CPU finding:\n%s", run, cpu)
		}
	}
}

// Issue 34 (3.6): the GC cell is how the passes went, with no ratio of a
// mean over the passes to the seed's 2 minutes.
func TestGCCellIsNoMeanRatio(t *testing.T) {
	for _, run := range []string{"geo-seed-uncut-20261128", "geo-seed-complete-20261128"} {
		md := againstSeedOf(t, run, "A GC pass on a filled database")
		if strings.Contains(md, "× the seed's") || !strings.Contains(md, "<br>ours: 29 GC passes during the ingest: 24 kept up") ||
			!strings.Contains(md, "fell behind") || !strings.Contains(md, "insert rate while a pass ran") {
			t.Errorf("%s: the GC cell:\n%s", run, md)
		}
	}
}

// Issue 34 (3.1): a seed engine no target stands for says why.
func TestNoStandInSaysWhy(t *testing.T) {
	md := againstSeedOf(t, "tokens-n1e5-20261125-1853", "Genacc")
	for _, want := range []string{
		"| 1e8 | seed 5402 s (l. 54)<br>no target of storebench stands for it | seed 3116 s (l. 54)<br>not run at this size |",
		"No target of ours stands for OnvaKV (Go B-tree): the seed's Go B-tree build",
		"OnvaKV (C++ B-tree) (ours: moeingads)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}
