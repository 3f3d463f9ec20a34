package seedcmp

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/results"
)

// conclText is lines first..last (from 1) of a seed's text joined, its
// whitespace runs made one space: a sentence the seed wraps over lines
// reads as one.
func conclText(lines []string, first, last int) string {
	return strings.Join(strings.Fields(strings.Join(lines[first-1:last], " ")), " ")
}

// saysOnLines checks that a conclusion's words are the seed's, verbatim
// (whitespace aside), on exactly the lines it cites: consecutive lines
// within the text, the sentence on the first of them and on the last
// (a line cited that the sentence does not reach is an error too).
func saysOnLines(lines []string, says string, src []int) error {
	if says == "" || len(src) == 0 {
		return fmt.Errorf("says %q with lines %v: both or neither", says, src)
	}
	for i, l := range src {
		if l < 1 || l > len(lines) {
			return fmt.Errorf("cites line %d of %d", l, len(lines))
		}
		if i > 0 && l != src[i-1]+1 {
			return fmt.Errorf("cites lines %v: not consecutive", src)
		}
	}
	first, last := src[0], src[len(src)-1]
	want := strings.Join(strings.Fields(says), " ")
	if !strings.Contains(conclText(lines, first, last), want) {
		return fmt.Errorf("%q is not on line(s) %v, which read %q", says, src, conclText(lines, first, last))
	}
	if first < last && (strings.Contains(conclText(lines, first+1, last), want) || strings.Contains(conclText(lines, first, last-1), want)) {
		return fmt.Errorf("%q cites lines %v: it is on fewer", says, src)
	}
	return nil
}

// Every seed's written conclusions are findings: each in the seed's own
// words on the lines it cites, and each either tested on figures (its
// own mapping, or another finding's through of) or saying what run
// would test it (needs).
func TestEverySeedsConclusionsAreOnTheirLines(t *testing.T) {
	for _, id := range IDs() {
		s, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		lines := seedLines(t, s)
		n := 0
		for _, f := range s.Findings {
			if f.Says == "" {
				continue
			}
			n++
			if err := saysOnLines(lines, f.Says, f.Source); err != nil {
				t.Errorf("seed %s, %s: %v", id, f.ID, err)
			}
			if f.Of == "" && f.Ours == nil && f.Needs == "" {
				t.Errorf("seed %s, %s: a conclusion neither tested (of, ours) nor saying what would test it (needs)", id, f.ID)
			}
		}
		if n == 0 {
			t.Errorf("seed %s: none of its conclusions is transcribed (a finding with says)", id)
		}
		t.Logf("seed %s: %d conclusions, each on its lines", id, n)
	}
}

// The checker of a conclusion's words rejects a word changed, a line
// wrong, beyond the text or superfluous, and accepts a sentence over the
// lines it spans.
func TestSaysOnLinesRejectsAMisquote(t *testing.T) {
	lines := []string{
		"- QPS is stable in overall (about 60K QPS for 48 hours),",
		"- this experiment shows different performances due to the number of",
		"  shards (we used 16), higher QPS can be achieved by increasing it and",
		"  approaching a load of 30, however, having slack is better.",
	}
	span := "higher QPS can be achieved by increasing it and approaching a load of 30"
	for _, c := range []struct {
		says   string
		src    []int
		accept bool
	}{
		{"QPS is stable in overall", []int{1}, true},
		{"QPS is stable overall", []int{1}, false},    // a word dropped
		{"QPS is stable in overall", []int{2}, false}, // wrong line
		{"QPS is stable in overall", []int{5}, false}, // beyond the text
		{span, []int{3, 4}, true},
		{span, []int{3}, false},       // the sentence goes on to line 4
		{span, []int{2, 3, 4}, false}, // line 2 is not the sentence's
		{span, []int{3, 5}, false},
		{"", []int{1}, false},
	} {
		err := saysOnLines(lines, c.says, c.src)
		if (err == nil) != c.accept {
			t.Errorf("%q on %v: accepted %v, want %v (%v)", c.says, c.src, err == nil, c.accept, err)
		}
	}
}

// Every of names a finding of figures, whose figures, mapping and unit
// (per vCPU where it divides by CPUs: per cpus) the conclusion then reads; every method, scale and condition cites
// lines of the text; a finding that depends on the run's scale says the
// seed's, and one that depends on a method (network, baseline) has the
// seed's method to name.
func TestConclusionsResolveAndMethodsCiteTheText(t *testing.T) {
	for _, id := range IDs() {
		s, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		lines := seedLines(t, s)
		byID := map[string]*Finding{}
		for i := range s.Findings {
			byID[s.Findings[i].ID] = &s.Findings[i]
		}
		methods := map[string]bool{}
		for _, m := range s.Methods {
			methods[m.Cause] = true
			for _, l := range m.Source {
				if l < 1 || l > len(lines) {
					t.Errorf("seed %s: method %q cites line %d of %d", id, m.Cause, l, len(lines))
				}
			}
		}
		for _, f := range s.Findings {
			if f.Of != "" {
				src, ok := byID[f.Of]
				switch {
				case !ok:
					t.Errorf("seed %s, %s: of %q: no such finding", id, f.ID, f.Of)
				case src.Of != "" || len(src.Figures) == 0:
					t.Errorf("seed %s, %s: of %q: not a finding of figures", id, f.ID, f.Of)
				case len(f.Figures) != len(src.Figures) || f.FigureUnit() != src.Unit || (src.Ours != nil && (f.Ours == nil || conclOurs(f.Ours) != conclOurs(src.Ours))):
					t.Errorf("seed %s, %s: of %q: its figures, unit or mapping are not %s's", id, f.ID, f.Of, f.Of)
				}
			}
			for _, l := range f.Scale.Source {
				if l < 1 || l > len(lines) {
					t.Errorf("seed %s, %s: scale cites line %d of %d", id, f.ID, l, len(lines))
				}
			}
			if (f.Scale.Seconds > 0 || f.Scale.N > 0) != (len(f.Scale.Source) > 0) {
				t.Errorf("seed %s, %s: scale %+v: a size or duration and its lines go together", id, f.ID, f.Scale)
			}
			for _, c := range f.DependsOn {
				switch {
				case c == "scale" && f.Scale.Seconds == 0 && f.Scale.N == 0:
					t.Errorf("seed %s, %s: depends on scale but states none of the seed's", id, f.ID)
				case (c == "network" || c == "baseline") && !methods[c]:
					t.Errorf("seed %s, %s: depends on %s, which no method of the seed's names", id, f.ID, c)
				}
			}
		}
	}
}

// conclOurs says a mapping in one string, for comparing two.
func conclOurs(o *Ours) string {
	return fmt.Sprint(o.Workload, "|", o.Phase, "|", o.Size, "|", o.Value, "|", o.Unit, "|", whereText(o.Where))
}

func conclN(n float64) string { return strconv.FormatFloat(n, 'g', 4, 64) }

// conclusionOn sets seed SeedOf(run)'s findings beside kept run
// docs/runs/NAME and returns the run and conclusion id's result.
func conclusionOn(t *testing.T, name, id string) (*results.Run, *Seed, FindingResult) {
	t.Helper()
	run, err := results.Read(filepath.Join("..", "..", "docs", "runs", name, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(SeedOf(run))
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range Against(s, run).Findings {
		if fr.Finding.ID == id {
			return run, s, fr
		}
	}
	t.Fatalf("%s: conclusion %s not set against it", name, id)
	return nil, nil, FindingResult{}
}

// Seed 003 concludes "Node.js offers better performance than Apache" in
// requests per second (line 197). On the kept run web-http-seed-1 the
// conclusion gets a verdict, and it is the one the run's own http steps
// give: requests/s of node and apache at each concurrency of the
// seed's (ab -c 100 and 500, a new connection per request), each pair
// ordered as the seed's, a tie within TieFloor matching either order.
func TestNodeFasterConclusionOnAKeptRun(t *testing.T) {
	run, s, fr := conclusionOn(t, "web-http-seed-1", "nodejs_faster_rps")
	v := fr.Verdict
	if v.Outcome != Holds && v.Outcome != Differs {
		t.Fatalf("nodejs_faster_rps: %s", v.Summary(conclN))
	}
	// The run's own figures: requests/s by seed engine and concurrency.
	node, apache := s.Engine("Node.js").Targets[0], s.Engine("Apache").Targets[0]
	rps := map[string]map[float64]float64{}
	for _, tg := range run.Targets {
		for _, st := range tg.Steps {
			if st.Workload == "http" && st.Phase == "close" && st.Error == "" && (tg.Name == node || tg.Name == apache) {
				if rps[tg.Name] == nil {
					rps[tg.Name] = map[float64]float64{}
				}
				rps[tg.Name][st.Metrics["concurrency"]] = st.Metrics["requests_per_s"]
			}
		}
	}
	rel := func(a, b float64) int {
		if math.Abs(a-b)/math.Max(a, b) <= TieFloor {
			return 0
		}
		if a < b {
			return -1
		}
		return 1
	}
	seed := map[float64]map[string]float64{}
	for _, g := range fr.Finding.Figures {
		if seed[g.N] == nil {
			seed[g.N] = map[string]float64{}
		}
		seed[g.N][g.Engine] = g.Value
	}
	want, compared := Holds, 0
	var cs []float64
	for c := range seed {
		cs = append(cs, c)
	}
	sort.Float64s(cs)
	for _, c := range cs {
		n, a := rps[node][c], rps[apache][c]
		if n == 0 || a == 0 {
			t.Fatalf("web-http-seed-1: no close step of %s and %s at concurrency %g (%v)", node, apache, c, rps)
		}
		sr, or := rel(seed[c]["Node.js"], seed[c]["Apache"]), rel(n, a)
		if sr*or < 0 {
			want = Differs
		}
		compared++
		t.Logf("concurrency %g: Node.js %.0f, Apache %.0f requests/s here (seed %.2f, %.2f)", c, n, a, seed[c]["Node.js"], seed[c]["Apache"])
		// The verdict's pair at that size is the one computed here.
		found := false
		for _, sp := range v.Ordering.Sizes {
			if sp.SeedN != c {
				continue
			}
			for _, p := range sp.Pairs {
				found = true
				sign := -1 // the pair is Apache against Node.js (names sorted)
				if p.A == "Node.js" {
					sign = 1
				}
				if p.Seed*sign != sr || p.Ours*sign != or {
					t.Errorf("concurrency %g: pair %+v, want Node.js against Apache %d in the seed, %d here", c, p, sr, or)
				}
			}
		}
		if !found {
			t.Errorf("concurrency %g: the verdict compares no pair there: %s", c, v.Summary(conclN))
		}
	}
	if compared != 2 {
		t.Errorf("compared at %d concurrencies, want the seed's two", compared)
	}
	if v.Outcome != want {
		t.Errorf("nodejs_faster_rps: %s; the run's own steps say %s", v.Summary(conclN), want)
	}
	// A verdict that differs names the cause the run measured: the seed's
	// ab ran across a network, ours over loopback.
	if v.Outcome == Differs && !strings.Contains(strings.Join(v.Reasons, "; "), "network") {
		t.Errorf("nodejs_faster_rps differs with no network cause: %v", v.Reasons)
	}
	t.Logf("nodejs_faster_rps on web-http-seed-1: %s", v.Summary(conclN))
}
