package docs

import (
	"bufio"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The "Adding …" sections of design.md each end with a list of the files
// that adding an output, a workload, a target or a server touches (issue
// 37, item 5). A list that has gone stale sends the next contributor to
// the wrong files, or hides a file they must edit, so this test holds each
// list to the code three ways: every pattern names files that exist; every
// file of the code that registers or builds one of its kind (the blank
// imports of internal/workload/all, internal/target/all, ...) is in the
// list; and every file a real commit that added one changed is in the list.

// addingSection is one "Adding …" section of design.md and what checks
// its list of files.
type addingSection struct {
	// heading is the section's heading line in design.md.
	heading string
	// root is the import path (below the module) of the packages of its
	// kind: a file importing one of them (blank, for a registration)
	// names one of them, and so is a file adding one touches.
	root string
	// blankOnly counts only blank imports (registrations): workloads'
	// own code is also imported by name where it is used (the overhead
	// command runs ycsb), which adding one does not touch.
	blankOnly bool
	// registries are the packages under root that link every one of the
	// kind in (importing them names none).
	registries []string
	// commit is a commit that added one of the kind, whose every changed
	// file must match the section's patterns; empty when none exists
	// since the section's recipe holds (why says so). names are the names
	// it added, what `<name>` of the patterns stands for.
	commit, what, why string
	names             []string
}

var addingSections = []addingSection{
	{heading: "### Adding an output", root: "internal/output", blankOnly: true,
		registries: []string{"internal/output/all"},
		why:        "no commit has added an output since the registry of outputs (package output): the one before it, 78a58dd (--metrics and --export), also edited internal/cli's flag table and run.go, which the registry replaced"},
	{heading: "## Adding a workload", root: "internal/workload", blankOnly: true,
		registries: []string{"internal/workload/all"},
		commit:     "99bd380fc83324ce2633d5bce65c93a9e56b8b9a", what: "the tripcache workload", names: []string{"tripcache"}},
	{heading: "## Adding a target", root: "internal/target", blankOnly: true,
		registries: []string{"internal/target/all", "internal/target/servers"},
		commit:     "92f28fa9f74d1322c07cf8ef39a735387ba76d29", what: "the kafka target, with its capability log and primitive conn.Kafka", names: []string{"kafka"}},
	{heading: "## Adding a server", root: "internal/server", blankOnly: true,
		registries: []string{"internal/server/all"},
		why:        "no commit has added a server since the manifests (2335910): each one before them also edited scripts/test.sh and scripts/install-*.sh, which the manifests replaced"},
}

// anyChange are the files any commit may touch besides a section's list:
// prose, the module's dependency files and tests, which the sections state
// as their rule rather than list.
var anyChange = []string{"docs/*.md", "README.md", "go.mod", "go.sum", "…_test.go"}

// patternRE compiles a path pattern of the lists: `<name>` is the name of
// the one added (one of names; with none, any path segment), any other
// `<word>` one path segment, `*` part of one, and `…` any rest of the
// path (one or more segments). `<name>` is bound so that
// `internal/workload/<name>/…` does not stand for every file under
// internal/workload (captest's, the registry's): a list that forgot them
// must fail.
func patternRE(p string, names ...string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); {
		switch {
		case p[i] == '<':
			j := strings.IndexByte(p[i:], '>')
			if j < 0 {
				b.WriteString(regexp.QuoteMeta(p[i:]))
				i = len(p)
				continue
			}
			if p[i:i+j+1] == "<name>" && len(names) > 0 {
				q := make([]string, len(names))
				for k, n := range names {
					q[k] = regexp.QuoteMeta(n)
				}
				b.WriteString("(?:" + strings.Join(q, "|") + ")")
			} else {
				b.WriteString("[^/]+")
			}
			i += j + 1
		case p[i] == '*':
			b.WriteString("[^/]*")
			i++
		case strings.HasPrefix(p[i:], "…"):
			b.WriteString(".+")
			i += len("…")
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			i++
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// matchAny returns the first of patterns that path matches, or "". A file
// of a registry (internal/workload/all, ...) matches only a pattern that
// names it literally: `internal/workload/<name>/…` stands for the new
// workload's package, and must not let a list that forgot the
// registration line pass.
func matchAny(path string, patterns []string, names ...string) string {
	registry := false
	for _, s := range addingSections {
		for _, r := range s.registries {
			registry = registry || filepath.ToSlash(filepath.Dir(path)) == r
		}
	}
	for _, p := range patterns {
		if registry && strings.ContainsAny(p, "<*…") {
			continue
		}
		if patternRE(p, names...).MatchString(path) {
			return p
		}
	}
	return ""
}

// anyOf says whether path matches one of patterns, a registry's files
// included (the rule for any change lets a registry's test change).
func anyOf(path string, patterns []string) bool {
	for _, p := range patterns {
		if patternRE(p).MatchString(path) {
			return true
		}
	}
	return false
}

// sectionFiles returns the patterns of a section's list of files: the
// code spans before the first ": " of each item of the list that follows
// the section's "**Files**" paragraph (an item may name two files,
// "`a` or `b`: ...", its text running on over indented lines).
func sectionFiles(doc, heading string) ([]string, error) {
	level := strings.IndexByte(heading, ' ')
	var in, files bool
	var items []string
	fence := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence {
			continue
		}
		if line == heading {
			in = true
			continue
		}
		if !in {
			continue
		}
		if h := strings.IndexByte(line, ' '); h > 0 && h <= level && strings.Trim(line[:h], "#") == "" {
			break // the next section
		}
		switch {
		case strings.HasPrefix(line, "**Files**"):
			files = true
		case files && strings.HasPrefix(line, "- "):
			items = append(items, line[2:])
		case files && len(items) > 0 && strings.HasPrefix(line, "  "):
			items[len(items)-1] += " " + strings.TrimSpace(line)
		case files && len(items) > 0:
			files = false
		}
	}
	if !in {
		return nil, errors.New("no such heading")
	}
	var out []string
	for _, item := range items {
		if i := strings.Index(item, ": "); i >= 0 {
			item = item[:i]
		}
		for _, span := range codeSpan.FindAllStringSubmatch(item, -1) {
			out = append(out, span[1])
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no list of files: a paragraph starting **Files** and its list of `path` items")
	}
	return out, nil
}

// codeSpan is a Markdown code span, its text the first group.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// repoRoot is the module root, one level above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// treeFiles lists the files of the working tree (relative, slash
// separated), leaving out .git and what tools leave behind (bin/,
// results/).
func treeFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "bin" || rel == "results" {
				return filepath.SkipDir
			}
			return nil
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readDesign(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAddingListsNameFilesThatExist fails on a pattern of a section's list
// that matches no file of the tree: a file renamed or removed since the
// list was written.
func TestAddingListsNameFilesThatExist(t *testing.T) {
	root := repoRoot(t)
	doc, tree := readDesign(t, root), treeFiles(t, root)
	for _, s := range addingSections {
		pats, err := sectionFiles(doc, s.heading)
		if err != nil {
			t.Errorf("docs/design.md %q: %v", s.heading, err)
			continue
		}
		for _, p := range pats {
			re, found := patternRE(p), false
			for _, f := range tree {
				if re.MatchString(f) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("docs/design.md %q lists %s, which matches no file of the tree", s.heading, p)
			}
		}
	}
}

// TestAddingListsNameTheRegistries reads the code: every file (tests left
// out) that imports a package of the section's kind, blank for a
// registration where the kind is registered, must match the section's
// list, `<name>` standing for the imported package's name, so a registry
// added to the code and not to the list fails.
func TestAddingListsNameTheRegistries(t *testing.T) {
	root := repoRoot(t)
	doc := readDesign(t, root)
	fset := token.NewFileSet()
	type imp struct {
		file, path string
		blank      bool
	}
	var imps []imp
	for _, f := range treeFiles(t, root) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		af, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range af.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			if rest, ok := strings.CutPrefix(p, "storebench/"); ok {
				imps = append(imps, imp{f, rest, s.Name != nil && s.Name.Name == "_"})
			}
		}
	}
	for _, s := range addingSections {
		pats, err := sectionFiles(doc, s.heading)
		if err != nil {
			t.Errorf("docs/design.md %q: %v", s.heading, err)
			continue
		}
		// members are the ones its registries link in (by name): a file of
		// one that imports another (FerretDB's PostgreSQL flavour links
		// the postgres server) is that one's dependency, not a line
		// adding the other touched.
		members := map[string]bool{}
		for _, i := range imps {
			for _, r := range s.registries {
				if filepath.ToSlash(filepath.Dir(i.file)) == r && strings.HasPrefix(i.path, s.root+"/") {
					m, _, _ := strings.Cut(strings.TrimPrefix(i.path, s.root+"/"), "/")
					members[m] = true
				}
			}
		}
		n := 0
		for _, i := range imps {
			if !strings.HasPrefix(i.path, s.root+"/") || (s.blankOnly && !i.blank) || strings.HasPrefix(i.file, s.root+"/") && !s.blankOnly {
				continue
			}
			registry := false
			for _, r := range s.registries {
				registry = registry || i.path == r
			}
			if registry {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(i.path, s.root+"/"), "/")
			if in, ok := strings.CutPrefix(i.file, s.root+"/"); ok {
				if m, _, _ := strings.Cut(in, "/"); m != name && members[m] {
					continue
				}
			}
			n++
			if matchAny(i.file, pats, name) == "" {
				t.Errorf("docs/design.md %q does not list %s, which imports %s", s.heading, i.file, i.path)
			}
		}
		if n == 0 {
			t.Errorf("%q: no file imports a package under %s: is the section's root right?", s.heading, s.root)
		}
	}
}

// TestAddingListsCoverARealCommit checks each section against a commit
// that added one of its kind: every file that commit added or changed
// matches a pattern of the section, or is one that any change may touch
// (anyChange). The commits' file lists are kept in
// testdata/witness-<commit>.txt, so that a shallow clone checks them too;
// where the history holds the commit, the kept list must be what git
// says it changed. A section with no witness commit (the server's: its
// why) is checked by the two tests above only, and is not run here.
func TestAddingListsCoverARealCommit(t *testing.T) {
	root := repoRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: the sections' witness commits cannot be read (the checkout it reads is a git clone: install git)")
	}
	doc := readDesign(t, root)
	for _, s := range addingSections {
		if s.commit == "" {
			if s.why == "" {
				t.Errorf("%q names neither a witness commit nor why it has none", s.heading)
			}
			continue
		}
		t.Run(strings.TrimLeft(s.heading, "# "), func(t *testing.T) {
			files := witnessFiles(t, root, s.commit, s.what)
			pats, err := sectionFiles(doc, s.heading)
			if err != nil {
				t.Fatalf("docs/design.md %q: %v", s.heading, err)
			}
			for _, f := range files {
				if matchAny(f, pats, s.names...) == "" && !anyOf(f, anyChange) {
					t.Errorf("commit %s (%s) changed %s, which docs/design.md %q does not list", s.commit[:7], s.what, f, s.heading)
				}
			}
		})
	}
}

// TestSectionFilesAndPatterns checks the parser and the patterns on a
// made-up section, so that the tests above cannot pass by reading
// nothing.
func TestSectionFilesAndPatterns(t *testing.T) {
	doc := "## Adding a thing\n\nText `not/this.go`.\n\n**Files** it touches:\n\n- `a/<name>/…`: its package.\n- `b/x.go` or\n  `c/y.go`: a line.\n- `d/<n>.yaml` and `e/f.go`: more.\n\nAfter: `not/that.go`.\n\n## Next\n\n- `g/h.go`\n"
	got, err := sectionFiles(doc, "## Adding a thing")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a/<name>/… b/x.go c/y.go d/<n>.yaml e/f.go"; strings.Join(got, " ") != want {
		t.Errorf("sectionFiles = %q, want %q", got, want)
	}
	if _, err := sectionFiles(doc, "## Next"); err == nil {
		t.Error("a section without **Files** gave no error")
	}
	for _, c := range []struct {
		pat, path string
		ok        bool
	}{
		{"a/<name>/…", "a/x/y.go", true},
		{"a/<name>/…", "a/x/y/z.go", true},
		{"a/<name>/…", "a/x.go", false},
		{"d/<n>.yaml", "d/geo.yaml", true},
		{"d/<n>.yaml", "d/x/geo.yaml", false},
		{"docs/*.md", "docs/design.md", true},
		{"docs/*.md", "docs/runs/x/y.md", false},
		{"…_test.go", "internal/x/x_test.go", true},
		{"go.mod", "third_party/x/go.mod", false},
	} {
		if got := patternRE(c.pat).MatchString(c.path); got != c.ok {
			t.Errorf("pattern %s on %s: %v, want %v", c.pat, c.path, got, c.ok)
		}
	}
	// A registry's file is listed by its path, never by a placeholder.
	if p := matchAny("internal/workload/worktest/captest/captest.go", []string{"internal/workload/<name>/…"}, "ledger"); p != "" {
		t.Errorf("captest.go matched %s with <name> ledger", p)
	}
	if p := matchAny("internal/workload/all/all.go", []string{"internal/workload/<name>/…"}); p != "" {
		t.Errorf("internal/workload/all/all.go matched %s: a list without its registry line would pass", p)
	}
	if p := matchAny("internal/workload/all/all.go", []string{"internal/workload/<name>/…", "internal/workload/all/all.go"}); p != "internal/workload/all/all.go" {
		t.Errorf("internal/workload/all/all.go matched %q, want its own path", p)
	}
	if !anyOf("internal/server/all/all_test.go", anyChange) {
		t.Error("a registry's test is not a change any commit may make")
	}
}

// witnessFiles is the list of files commit changed, as kept in
// testdata/witness-<short>.txt; where git and the commit are at hand
// (not a shallow clone), the kept list must equal git's.
func witnessFiles(t *testing.T, root, commit, what string) []string {
	t.Helper()
	kept, err := os.ReadFile(filepath.Join(root, "docs", "testdata", "witness-"+commit[:7]+".txt"))
	if err != nil {
		t.Fatalf("the file list of commit %s (%s): %v (write it with git diff-tree --no-commit-id --name-only -r %s)", commit[:7], what, err, commit)
	}
	files := strings.Fields(string(kept))
	if len(files) == 0 {
		t.Fatalf("commit %s: its kept file list is empty", commit[:7])
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Logf("git is not installed: the kept list of %s is not compared with the history", commit[:7])
		return files
	}
	if exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run() != nil {
		t.Logf("commit %s is not in this clone (a shallow one?): its kept list is not compared with the history", commit[:7])
		return files
	}
	out, err := exec.Command("git", "-C", root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).Output()
	if err != nil {
		t.Fatalf("git diff-tree %s: %v", commit[:7], err)
	}
	if got := strings.Fields(string(out)); strings.Join(got, "\n") != strings.Join(files, "\n") {
		t.Fatalf("testdata/witness-%s.txt is not the file list git gives for the commit:\n%s", commit[:7], out)
	}
	return files
}
