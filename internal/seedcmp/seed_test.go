package seedcmp

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// seedsDir is where the seeds' texts are kept in the repository
// (studies/seeds/text, copied from ../shared/seeds), so the trace of every
// figure to its line runs on any checkout.
func seedsDir(t *testing.T) string {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(here))) // the repository root
	p := filepath.Join(root, "studies", "seeds", "text")
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		t.Fatalf("the seeds' texts are not in the repository (%v): studies/seeds/text holds a copy of ../shared/seeds", err)
	}
	return p
}

func seedLines(t *testing.T, s *Seed) []string {
	b, err := os.ReadFile(filepath.Join(seedsDir(t), s.File))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// Every transcribed figure is written on the seed line it cites, as the
// seed writes it (53.7913658619, 5,402, 3 100, 70K).
func TestEveryFigureIsOnItsSeedLine(t *testing.T) {
	ids := IDs()
	if len(ids) != 5 {
		t.Fatalf("seeds transcribed: %v, want 000..004", ids)
	}
	for _, id := range ids {
		s, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		lines := seedLines(t, s)
		n := 0
		for _, f := range s.Findings {
			for _, g := range f.Figures {
				n++
				if err := Trace(lines, g); err != nil {
					t.Errorf("seed %s: %v", id, err)
				}
			}
		}
		for _, c := range s.MachineClaims {
			n++
			if err := claimOnItsLines(lines, c); err != nil {
				t.Errorf("seed %s: %v", id, err)
			}
		}
		for _, h := range s.Hardware {
			for _, l := range h.Source {
				if l < 1 || l > len(lines) {
					t.Errorf("seed %s: hardware %s cites line %d of %d", id, h.ID, l, len(lines))
				}
			}
		}
		t.Logf("seed %s: %d figures in %d findings, each on its line", id, n, len(s.Findings))
	}
}

// The checker rejects a figure mistyped, rounded, cited at the wrong
// line or beyond the text, and accepts the seed's own ways of writing a
// number.
func TestTraceRejectsAMistypedFigure(t *testing.T) {
	lines := []string{
		"| Insert of a Txn chain composed from 100000 Txn    |  134.478055           | 84.6112642288       |  53.1811311245        |  53.7913658619       |",
		"| Genacc   | 5402                 | 3116             |",
		"When $n=1e8$, the database of OnvaKV takes 127,223 MB, and $n=1e9$, 1,272,671 MB.",
		"Insert rate over 1 hour: **3 100 QPS** per machine (186 000 moving users).",
		"RocksDB: 70K tps    ",
		"|  13G                  | 15G of Disk space   |",
	}
	for _, c := range []struct {
		value  float64
		line   int
		accept bool
	}{
		{53.7913658619, 1, true},
		{53.7913658618, 1, false}, // last digit mistyped
		{53.8, 1, false},          // rounded
		{134.478055, 1, true},
		{5402, 2, true},
		{5402, 1, false}, // wrong line
		{3116, 2, true},
		{3161, 2, false}, // digits swapped
		{127223, 3, true},
		{1272671, 3, true},
		{127233, 3, false},
		{3100, 4, true},
		{186000, 4, true},
		{70000, 5, true},
		{7000, 5, false},
		{13, 6, true},
		{15, 6, true},
		{5402, 9, false}, // beyond the text
	} {
		err := Trace(lines, Figure{Finding: "f", Engine: "e", Value: c.value, Source: []int{c.line}})
		if (err == nil) != c.accept {
			t.Errorf("value %v on line %d: accepted %v, want %v (%v)", c.value, c.line, err == nil, c.accept, err)
		}
	}
}

// minimalSeed is the smallest seed transcription Parse accepts.
const minimalSeed = `seed: "009"
file: x.txt
hardware: [{id: h, cpus: 2}]
engines: [{name: E, targets: [leveldb]}]
findings:
  - id: f
    unit: s
    ours: {workload: ledger, phase: insert, value: seconds}
    figures: [{engine: E, n: 10, value: 1, hardware: h, source: [1]}]
`

// Every figure's unit converts to its finding's, and every finding that
// names our figure names a unit ours converts from (Parse checks both:
// here on a transcription that breaks each rule).
func TestParseRejectsABrokenTranscription(t *testing.T) {
	good := minimalSeed
	if _, err := Parse("009", []byte(good)); err != nil {
		t.Fatalf("a good transcription: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown engine":   strings.Replace(good, "engine: E,", "engine: F,", 1),
		"unknown hardware": strings.Replace(good, "hardware: h,", "hardware: g,", 1),
		"no source":        strings.Replace(good, "source: [1]", "source: []", 1),
		"unit mismatch":    strings.Replace(good, "unit: s\n", "unit: MiB\n", 1),
		"unknown value":    strings.Replace(good, "value: seconds", "value: speed", 1),
		"unknown field":    strings.Replace(good, "file: x.txt", "file: x.txt\nfiles: y", 1),
		"wrong id":         strings.Replace(good, `seed: "009"`, `seed: "008"`, 1),
	} {
		if _, err := Parse("009", []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
