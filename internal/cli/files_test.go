package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"storebench/internal/home"
	"strings"
	"testing"
	"time"
)

// fixture is a finished run's results.json kept for the tests.
var fixture = filepath.Join("..", "..", "cmd", "storebench", "testdata", "schema1-ads-rw", "results.json")

// copyRun makes a run directory holding the fixture's results.json.
func copyRun(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func call(cmd func([]string, io.Writer, io.Writer) int, args ...string) (string, string, int) {
	var o, e bytes.Buffer
	code := cmd(args, &o, &e)
	return o.String(), e.String(), code
}

// oneLine wants a single line of error, exit 2.
func oneLine(t *testing.T, what, stderr string, code int, want string) {
	t.Helper()
	if code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, want) {
		t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line with %q", what, code, stderr, want)
	}
}

// report RUN with RUN/charts a link to a directory of the user's: the
// report is not written through it and the PNG there stays.
func TestReportDoesNotWriteOrDeleteThroughAChartsLink(t *testing.T) {
	run := copyRun(t)
	elsewhere := t.TempDir()
	mine := filepath.Join(elsewhere, "mydiagram.png")
	if err := os.WriteFile(mine, []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(run, "charts")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := call(cmdReport, run)
	oneLine(t, "report with a charts link", stderr, code, "symbolic link")
	if b, err := os.ReadFile(mine); err != nil || string(b) != "png" {
		t.Errorf("the user's PNG was deleted or changed: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
		t.Errorf("files written through the link: %v", ents)
	}
}

// compare with K/study.yaml a link to a file elsewhere (~/.kube/config):
// its content is neither printed nor written into the HTML.
func TestCompareDoesNotReadAStudyLink(t *testing.T) {
	a, k := copyRun(t), copyRun(t)
	secret := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(secret, []byte("name: marker-7f3a9c\ncontexts: marker-7f3a9c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(k, "study.yaml")); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "cmp.html")
	stdout, stderr, code := call(cmdCompare, a, k, "--html", html)
	page, _ := os.ReadFile(html)
	for what, s := range map[string]string{"stdout": stdout, "stderr": stderr, "HTML": string(page)} {
		if strings.Contains(s, "marker-7f3a9c") {
			t.Errorf("the linked file's content is in the %s", what)
		}
	}
	oneLine(t, "compare with a study.yaml link", stderr, code, "study.yaml")
}

// --html to a path planted as a link: the file it points at is untouched.
func TestCompareHTMLDoesNotWriteThroughALink(t *testing.T) {
	a := copyRun(t)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	out := filepath.Join(t.TempDir(), "cmp.html")
	if err := os.Symlink(victim, out); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := call(cmdCompare, a, "--targets", "mpt,goleveldb", "--html", out)
	oneLine(t, "compare --html onto a link", stderr, code, "symbolic link")
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("written through the link: %.40q…", b)
	}
}

// report and compare on /dev/zero, named or linked as RUN/results.json:
// refused at once, one line, exit 2.
func TestReportAndCompareRefuseADeviceAsResults(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Fatalf("this test needs /dev/zero (every Linux has it): %v", err)
	}
	run := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(run, "results.json")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cmd  func([]string, io.Writer, io.Writer) int
		args []string
	}{
		{"report /dev/zero", cmdReport, []string{"/dev/zero"}},
		{"report RUN (results.json a link to /dev/zero)", cmdReport, []string{run}},
		{"compare RUN", cmdCompare, []string{run, "--targets", "a,b"}},
	} {
		done := make(chan [3]any, 1)
		go func() {
			o, e, code := call(c.cmd, c.args...)
			done <- [3]any{o, e, code}
		}()
		select {
		case r := <-done:
			oneLine(t, c.name, r[1].(string), r[2].(int), "results.json")
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5s", c.name)
		}
	}
}

// An oversized results.json (sparse: cheap) is refused by its size.
func TestReportRefusesAnOversizedResultsFile(t *testing.T) {
	run := t.TempDir()
	f, err := os.Create(filepath.Join(run, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(512 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, stderr, code := call(cmdReport, run)
	oneLine(t, "report of a 512 MiB results.json", stderr, code, "results.json: 512 MiB, over the 256 MiB a results file may have")
}

// Under a home other users cannot traverse (root's 0700 home), `server
// start` keeps its instances in this user's directory under the
// temporary directory, where PostgreSQL's user reaches them; under a
// traversable one, under the home. Never in the current directory.
func TestServerHomeOutsideAPrivateHome(t *testing.T) {
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STOREBENCH_HOME", filepath.Join(private, "sb"))
	got, err := serverHome()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, os.TempDir()) || strings.HasPrefix(got, private) || !home.OthersTraverse(filepath.Dir(got)) {
		t.Errorf("under a private home: %s, want a traversable directory under %s", got, os.TempDir())
	}
	open := t.TempDir()
	for _, d := range []string{filepath.Dir(open), open} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("STOREBENCH_HOME", filepath.Join(open, "sb"))
	if got, err := serverHome(); err != nil || got != filepath.Join(open, "sb", "servers") {
		t.Errorf("under a traversable home: %s, %v", got, err)
	}
}

// The instances' directory under the temporary directory has a name
// anyone can guess: one another user made first (or a link planted
// there) is refused, never written through.
func TestServerHomeRefusesAPlantedDirectory(t *testing.T) {
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STOREBENCH_HOME", filepath.Join(private, "sb"))
	got, err := serverHome()
	if err != nil {
		t.Fatal(err)
	}
	alt := filepath.Dir(got)
	if err := os.RemoveAll(alt); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, alt); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(alt)
	if got, err := serverHome(); err == nil {
		t.Errorf("a link planted at %s was used: %s", alt, got)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}
