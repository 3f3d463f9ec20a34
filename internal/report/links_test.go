package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

// charts/ planted as a symbolic link to another directory: the report is
// not written through it, and the PNGs found there are not deleted.
func TestWriteAllRefusesAChartsLink(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	mine := filepath.Join(elsewhere, "mydiagram.png")
	if err := os.WriteFile(mine, []byte("the user's own picture"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, ChartsDir)); err != nil {
		t.Fatal(err)
	}
	err := WriteAll(dir, syntheticRun(t, 1))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteAll through a charts link: %v, want it refused as a symbolic link", err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "the user's own picture" {
		t.Errorf("the PNG in the linked directory was touched: %q %v", b, err)
	}
	ents, _ := os.ReadDir(elsewhere)
	if len(ents) != 1 {
		t.Errorf("files written into the linked directory: %v", ents)
	}
}

// Only PNGs storebench rendered itself are deleted from charts/: a PNG the
// user keeps there (report --out DIR onto a directory of theirs) stays,
// and a chart of an earlier rendering that this one no longer draws goes.
func TestWriteAllDeletesOnlyItsOwnCharts(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, ChartsDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(cdir, "mydiagram.png")
	if err := os.WriteFile(mine, []byte("the user's own picture"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An earlier rendering drew more phases: their charts go now.
	if err := WriteAll(dir, syntheticRun(t, 1)); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(cdir, "*.png"))
	fewer := syntheticRun(t, 1)
	for _, tg := range fewer.Targets {
		var kept []*results.Step
		for _, s := range tg.Steps {
			if s.Phase == "insert" {
				kept = append(kept, s)
			}
		}
		tg.Steps = kept
	}
	if err := WriteAll(dir, fewer); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(cdir, "*.png"))
	if len(after) >= len(before) {
		t.Errorf("%d PNGs before, %d after rendering fewer targets: stale charts left", len(before), len(after))
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "the user's own picture" {
		t.Errorf("the user's PNG in charts/ was deleted or changed: %q %v", b, err)
	}
	// A PNG planted as a link to a file elsewhere is neither written
	// through nor followed.
	victim := filepath.Join(t.TempDir(), "victim.png")
	os.WriteFile(victim, []byte("v"), 0o644)
	for _, p := range after {
		if filepath.Base(p) == "mydiagram.png" {
			continue
		}
		os.Remove(p)
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
	}
	_ = WriteAll(dir, fewer)
	if b, _ := os.ReadFile(victim); string(b) != "v" {
		t.Errorf("a chart was written through a link: %q", b)
	}
}
