package report

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// Only a run whose study names a seed gets "Against the seed"; a seed
// with no transcription is said so, and the section is still there.
func TestAgainstTheSeedOnlyWhereTheStudyNamesOne(t *testing.T) {
	run := &results.Run{Study: "x", StudySource: "name: x\nseed: 1\n", Durability: "sync",
		Targets: []*results.Target{{Name: "leveldb", Title: "LevelDB", Status: "ok", Steps: []*results.Step{{Workload: "ledger", Phase: "insert", N: 10, Seconds: 0.01, Ops: 1}}}}}
	if md := Markdown(run); strings.Contains(md, "Against the seed") {
		t.Error("a study that names no seed got the section")
	}
	run.StudySource = "name: x\nseed_study: \"009\"\n"
	if md := Markdown(run); !strings.Contains(md, "## Against the seed") || !strings.Contains(md, "seed 009: no transcription of its figures") {
		t.Errorf("an untranscribed seed:\n%s", md)
	}
	run.StudySource = "name: x\nseed_study: \"000\"\n"
	md := Markdown(run)
	for _, want := range []string{"## Against the seed", "### Insert a txn chain", "| 10 | seed 0.04563 s (l. 29)<br>engine not run |", "seed 0.004838 s (l. 29)<br>ours 0.01 s (2.07× the seed's)", "**Verdict: not comparable: "} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
