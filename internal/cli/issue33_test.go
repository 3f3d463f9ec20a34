package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compare of a run with itself (named twice, or by its results.json) is
// refused, exit 2, saying so: it used to print a comparison of nothing.
func TestCompareARunWithItselfIsRefused(t *testing.T) {
	a := copyRun(t)
	for _, b := range []string{a, filepath.Join(a, "results.json")} {
		stdout, stderr, code := call(cmdCompare, a, b)
		oneLine(t, "compare A A", stderr, code, "compare: "+a+" and "+b+" are the same run")
		if stdout != "" {
			t.Errorf("compare A A printed a comparison:\n%.300s", stdout)
		}
	}
}

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A report that cannot be written on stdout (stdout on /dev/full) is an
// error, exit 1 and a line on stderr, not lost with exit 0; the report's
// files are still written.
func TestReportOnAFullStdoutFails(t *testing.T) {
	run := copyRun(t)
	var e strings.Builder
	code := cmdReport([]string{run}, fullWriter{}, &e)
	if code != exitFailed || !strings.Contains(e.String(), "cannot write the report on stdout: no space left on device") {
		t.Errorf("report to a full stdout: exit %d, stderr %q; want exit 1 and the write error", code, e.String())
	}
	if _, err := os.Stat(filepath.Join(run, "report.md")); err != nil {
		t.Errorf("report.md not written: %v", err)
	}
	e.Reset()
	code = cmdCompare([]string{run, "--targets", "mpt,goleveldb"}, fullWriter{}, &e)
	if code != exitFailed || !strings.Contains(e.String(), "cannot write the report on stdout") {
		t.Errorf("compare to a full stdout: exit %d, stderr %q", code, e.String())
	}
}

// No error repeats more than a few hundred bytes of one input: a 100 KB
// argument is named by its start and its length.
func TestErrorsClipLongInput(t *testing.T) {
	long := "redis://h/" + strings.Repeat("a", 100_000)
	_, stderr, code := call(cmdCompare, long, long)
	if code != exitUsage || len(stderr) > 1000 || !strings.Contains(stderr, "… (1000") {
		t.Errorf("compare of a 100 KB path: exit %d, %d bytes of stderr: %.300q", code, len(stderr), stderr)
	}
}

// storebench overhead --rounds is bounded, 1..1000, exit 2 outside.
func TestOverheadRoundsBounded(t *testing.T) {
	for _, r := range []string{"0", "1001", "1000000000"} {
		_, stderr, code := call(cmdOverhead, "--rounds", r)
		oneLine(t, "overhead --rounds "+r, stderr, code, "--rounds")
	}
}
