// Package docs holds storebench's documentation. Its test checks that the
// figures the study documents quote come from runs kept beside them:
//
//   - a block between `<!-- figures from runs/NAME: SECTION -->` and
//     `<!-- end figures -->` must be, byte for byte, the section SECTION
//     (a "## " or "### " heading) of the report that storebench renders
//     today from docs/runs/NAME/results.json;
//   - a Markdown link to a kept run (`[64K ticks/s](runs/NAME/...)`) quotes
//     figures of that run: every number in the link's text must appear, as
//     written, in the report rendered from the run's results.json;
//   - a link to a seed's transcribed figures (`../studies/seeds/NNN.yaml`)
//     quotes the seed: every number in its text must be in that file;
//   - in a study document that is not listed in pendingDocs, no figure
//     (a number with a unit) may stand outside such a block or link.
//
// `STOREBENCH_UPDATE_DOCS=1 go test ./docs/` (make docs) re-renders every
// block from its run; the links are the writer's to fix.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/report"
	"storebench/internal/results"

	// The workloads render their own sections of a report.
	_ "storebench/internal/workload/all"
)

// studyDocs are the documents that speak for a study's results.
var studyDocs = []string{"ledger.md", "ads.md", "geo.md", "web-oltp.md", "tripcache.md"}

// pendingDocs still quote figures of runs that were not kept; each is
// rewritten from kept runs and leaves this list. The list may only shrink.
var pendingDocs = map[string]bool{}

var (
	blockOpen  = regexp.MustCompile(`(?m)^<!-- figures from runs/([A-Za-z0-9._-]+): (.+?) -->\n`)
	blockClose = "<!-- end figures -->"
	// A Markdown link: text and target, with no nested brackets.
	link = regexp.MustCompile(`\[([^\[\]]*)\]\(([^()\s]+)\)`)
	// A number as a report writes one: 7.5K, 1.02, 1e4, 20,000, 0.36.
	number = regexp.MustCompile(`[0-9]+(?:[.,][0-9]+)*(?:e[0-9]+)?`)
	// A figure: a number followed by a unit or a multiplier.
	figure = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?\s?(?:[KMG]\b|×|%|ms\b|µs\b|us\b|ns\b|s\b|GiB\b|MiB\b|KiB\b|ops/s|ticks/s|req/s|tps\b|txns?/s)`)
	fence  = regexp.MustCompile("(?ms)^```.*?^```\\s*$")
	// Inline code: names, flags and commands, not figures.
	code = regexp.MustCompile("`[^`\n]*`")
)

type rendered struct {
	md  string
	err error
}

// renderer renders each kept run once.
type renderer map[string]rendered

func (r renderer) run(name string) (string, error) {
	if got, ok := r[name]; ok {
		return got.md, got.err
	}
	run, err := results.Read(filepath.Join("runs", name, "results.json"))
	var md string
	if err == nil {
		md = report.Markdown(run)
	}
	r[name] = rendered{md, err}
	return md, err
}

// section returns the section of md under the heading title ("## T" or
// "### T"), heading included, up to the next heading of the same or a
// higher level.
func section(md, title string) (string, bool) {
	lines := strings.SplitAfter(md, "\n")
	for i, l := range lines {
		t := strings.TrimRight(l, "\n")
		level := len(t) - len(strings.TrimLeft(t, "#"))
		if level < 2 || level > 3 || strings.TrimSpace(t[level:]) != title {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			u := lines[j]
			ul := len(u) - len(strings.TrimLeft(u, "#"))
			if ul >= 1 && ul <= level && strings.HasPrefix(u[ul:], " ") {
				end = j
				break
			}
		}
		return strings.TrimRight(strings.Join(lines[i:end], ""), "\n") + "\n", true
	}
	return "", false
}

// renderBlocks re-renders every figures block of doc; it returns the new
// text and the problems found (a run that cannot be read, a section the
// report no longer has, a block that is not closed).
func renderBlocks(doc string, r renderer) (string, []string) {
	var b strings.Builder
	var problems []string
	rest := doc
	for {
		m := blockOpen.FindStringSubmatchIndex(rest)
		if m == nil {
			b.WriteString(rest)
			return b.String(), problems
		}
		b.WriteString(rest[:m[1]])
		name, title := rest[m[2]:m[3]], rest[m[4]:m[5]]
		body := rest[m[1]:]
		end := strings.Index(body, blockClose)
		if end < 0 {
			problems = append(problems, fmt.Sprintf("figures from runs/%s: %s: no %q after it", name, title, blockClose))
			b.WriteString(body)
			return b.String(), problems
		}
		md, err := r.run(name)
		sec, ok := section(md, title)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("figures from runs/%s: %v", name, err))
			sec = body[:end]
		case !ok:
			problems = append(problems, fmt.Sprintf("figures from runs/%s: the report has no section %q", name, title))
			sec = body[:end]
		}
		b.WriteString(sec)
		b.WriteString(blockClose)
		rest = body[end+len(blockClose):]
	}
}

// runOf names the kept run a link target points into ("runs/NAME/..."),
// or "".
func runOf(target string) string {
	t := strings.TrimPrefix(target, "./")
	if !strings.HasPrefix(t, "runs/") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(t, "runs/"), "/")
	return name
}

// seedOf names the transcribed seed file a link target points at, or "".
func seedOf(target string) string {
	if m := regexp.MustCompile(`^\.\./studies/seeds/([0-9]{3})\.yaml(?:#.*)?$`).FindStringSubmatch(target); m != nil {
		return filepath.Join("..", "studies", "seeds", m[1]+".yaml")
	}
	return ""
}

// holds reports whether the number tok appears in text as a whole number
// (not as a part of a longer one).
func holds(text, tok string) bool {
	re := regexp.MustCompile(`(?:^|[^0-9.,])` + regexp.QuoteMeta(tok) + `(?:$|[^0-9]|[.,][^0-9]|[.,]$)`)
	return re.MatchString(text)
}

// roundsTo reports whether some number of text (a seed's figures, kept
// at the seed's own precision) rounds to tok at tok's decimals: a doc
// may quote the seed's 53.7913658619 s as 53.8 s.
func roundsTo(text, tok string) bool {
	if strings.ContainsAny(tok, ",e") {
		return false
	}
	decimals := 0
	if _, frac, ok := strings.Cut(tok, "."); ok {
		decimals = len(frac)
	}
	for _, n := range regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?`).FindAllString(text, -1) {
		v, err := strconv.ParseFloat(n, 64)
		if err == nil && strconv.FormatFloat(v, 'f', decimals, 64) == tok {
			return true
		}
	}
	return false
}

// checkLinks checks every number quoted in a link to a kept run or a seed.
func checkLinks(doc string, r renderer) []string {
	var problems []string
	for _, m := range link.FindAllStringSubmatch(doc, -1) {
		text, target := m[1], m[2]
		var src, what string
		if name := runOf(target); name != "" {
			md, err := r.run(name)
			if err != nil {
				problems = append(problems, fmt.Sprintf("[%s](%s): %v", text, target, err))
				continue
			}
			src, what = md, "the report of runs/"+name
		} else if f := seedOf(target); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				problems = append(problems, fmt.Sprintf("[%s](%s): %v", text, target, err))
				continue
			}
			src, what = string(b), f
		} else {
			continue
		}
		seed := seedOf(target) != ""
		for _, tok := range number.FindAllString(code.ReplaceAllString(text, ""), -1) {
			if !holds(src, tok) && !(seed && roundsTo(src, tok)) {
				problems = append(problems, fmt.Sprintf("[%s](%s): %s is not in %s", text, target, tok, what))
			}
		}
	}
	return problems
}

// bareFigures lists the lines of doc quoting a figure outside a figures
// block, a link to its source, a code span or a code fence.
func bareFigures(doc string) []string {
	doc = fence.ReplaceAllStringFunc(doc, func(s string) string { return strings.Repeat("\n", strings.Count(s, "\n")) })
	for {
		m := blockOpen.FindStringIndex(doc)
		if m == nil {
			break
		}
		end := strings.Index(doc[m[1]:], blockClose)
		if end < 0 {
			break
		}
		end += m[1] + len(blockClose)
		doc = doc[:m[0]] + strings.Repeat("\n", strings.Count(doc[m[0]:end], "\n")) + doc[end:]
	}
	doc = link.ReplaceAllStringFunc(doc, func(s string) string {
		t := link.FindStringSubmatch(s)[2]
		if runOf(t) != "" || seedOf(t) != "" {
			return "[]"
		}
		return s
	})
	var bare []string
	for i, l := range strings.Split(doc, "\n") {
		l = code.ReplaceAllString(l, "")
		if strings.HasPrefix(strings.TrimSpace(l), "<!--") {
			continue
		}
		if f := figure.FindAllString(l, -1); f != nil {
			bare = append(bare, fmt.Sprintf("line %d: %s", i+1, strings.Join(f, ", ")))
		}
	}
	return bare
}

func TestDocsFiguresComeFromKeptRuns(t *testing.T) {
	update := os.Getenv("STOREBENCH_UPDATE_DOCS") == "1"
	r := renderer{}
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no documents found: %v", err)
	}
	study := map[string]bool{}
	for _, d := range studyDocs {
		study[d] = true
	}
	for _, d := range docs {
		if d == verdictsDoc {
			continue // rendered whole from the runs: TestVerdictsDocIsCurrent
		}
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		fresh, problems := renderBlocks(doc, r)
		if fresh != doc {
			if update {
				if err := os.WriteFile(d, []byte(fresh), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: re-rendered from its runs", d)
				doc = fresh
			} else {
				problems = append(problems, "a figures block no longer matches its run (STOREBENCH_UPDATE_DOCS=1 go test ./docs/ re-renders it): "+firstDifference(doc, fresh))
			}
		}
		problems = append(problems, checkLinks(doc, r)...)
		if study[d] {
			bare := bareFigures(doc)
			switch {
			case pendingDocs[d]:
				t.Logf("%s: %d lines still quote figures of runs not kept (pending)", d, len(bare))
			case len(bare) > 0:
				problems = append(problems, "figures that come from no kept run (link each to runs/NAME/ or a seed, or put them in a figures block): "+strings.Join(bare, "; "))
			}
		}
		for _, p := range problems {
			t.Errorf("docs/%s: %s", d, p)
		}
	}
}

// TestPendingDocsAreStudyDocs keeps the pending list honest: a name
// that is not a study document (a typo) would exempt nothing silently.
func TestPendingDocsAreStudyDocs(t *testing.T) {
	var names []string
	for d := range pendingDocs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		found := false
		for _, s := range studyDocs {
			found = found || s == d
		}
		if !found {
			t.Errorf("pendingDocs names %s, which is not a study document", d)
		}
	}
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: %q, the run renders %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("the documents differ in length (%d and %d lines)", len(al), len(bl))
}

// TestFiguresCheckCatchesItsFaults: a block edited by hand, a linked
// figure its run does not have, a seed figure mistyped and a figure
// quoted with no source are each caught; the faithful forms pass.
func TestFiguresCheckCatchesItsFaults(t *testing.T) {
	const run = "aerospike-ledger-20261125"
	r := renderer{}
	md, err := r.run(run)
	if err != nil {
		t.Fatal(err)
	}
	sec, ok := section(md, "Insert a txn chain")
	if !ok {
		t.Fatalf("the kept run's report has no section %q", "Insert a txn chain")
	}
	open := "<!-- figures from runs/" + run + ": Insert a txn chain -->\n"
	good := "Intro.\n\n" + open + sec + blockClose + "\n\nAfter.\n"
	if fresh, p := renderBlocks(good, r); fresh != good || p != nil {
		t.Fatalf("a faithful block was changed (%v): %s", p, firstDifference(good, fresh))
	}
	// One digit changed by hand is re-rendered away: the check sees it.
	i := strings.Index(good, "1.02 s")
	if i < 0 {
		t.Fatal("the kept run no longer has LevelDB's 1.02 s insert of 1e4")
	}
	edited := good[:i] + "1.03 s" + good[i+len("1.02 s"):]
	if fresh, _ := renderBlocks(edited, r); fresh == edited {
		t.Error("a figure edited by hand inside a block was not caught")
	}
	// A stale block from nowhere: stale heading, and a section that is gone.
	if _, p := renderBlocks("<!-- figures from runs/"+run+": No such section -->\nx\n"+blockClose+"\n", r); len(p) == 0 {
		t.Error("a block naming a section the report does not have was not caught")
	}
	if _, p := renderBlocks(open+"x\n", r); len(p) == 0 {
		t.Error("an unclosed block was not caught")
	}
	if _, p := renderBlocks("<!-- figures from runs/no-such-run: Insert a txn chain -->\nx\n"+blockClose+"\n", r); len(p) == 0 {
		t.Error("a block from a run that is not kept was not caught")
	}

	// Links to the run: as rendered passes; a figure not in the run fails.
	if p := checkLinks("LevelDB took [1.02 s](runs/"+run+"/) and Cassandra [21.17 s](runs/"+run+"/results.json).", r); p != nil {
		t.Errorf("figures of the run were refused: %v", p)
	}
	for _, bad := range []string{
		"[1.03 s](runs/" + run + "/)", // a wrong digit
		"[21.1 s](runs/" + run + "/)", // a rounding the report did not write
		"[0.36×](runs/" + run + "/)",  // a ratio computed by hand
		"[1.02 s](runs/no-such-run/)", // a run that is not kept
	} {
		if p := checkLinks(bad, r); len(p) == 0 {
			t.Errorf("%s was not caught", bad)
		}
	}

	// Seed figures: LevelDB's 53.8 s for a chain of 1e5 is seed 000's.
	if p := checkLinks("the seed's [53.8 s](../studies/seeds/000.yaml)", r); p != nil {
		t.Errorf("a seed figure was refused: %v", p)
	}
	if p := checkLinks("the seed's [53.9 s](../studies/seeds/000.yaml)", r); len(p) == 0 {
		t.Error("a mistyped seed figure was not caught")
	}

	// Figures with no source are found; sourced, coded and fenced are not.
	doc := "LevelDB took 1.02 s here.\n" +
		"LevelDB took [1.02 s](runs/" + run + "/).\n" +
		"Run `--ladder 1e5 --time-limit 10s`.\n" +
		"```\n12 ms\n```\n" +
		open + sec + blockClose + "\n" +
		"Throughput 64K ops/s.\n"
	bare := bareFigures(doc)
	if len(bare) != 2 || !strings.HasPrefix(bare[0], "line 1:") || !strings.Contains(bare[1], "64K") {
		t.Errorf("bare figures found: %q, want lines 1 and the last", bare)
	}
}
