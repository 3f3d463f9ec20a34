package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

// A shared results.json with terminal escapes and Markdown/HTML in every
// kind of string the report prints (issue 33, defect 4).
const hostileRun = `{
  "schema_version": 3,
  "study": "ledger",
  "title": "T\u001b]52;c;ZWNobyBwd25lZA==\u0007 <script>alert(1)</script>",
  "status": "complete",
  "reason": "r\u001b[2J ![pwn](http://evil.example/x.png)",
  "host": {"cpu_model": "CPU\u001b]0;owned\u0007 \u009b31m <img src=http://evil.example/y>"},
  "targets": [{
    "name": "pebble",
    "title": "Pebble\u001b]52;c;eA==\u0007<img src=x onerror=alert(1)>",
    "status": "failed",
    "reason": "why\u001bc [link](http://evil.example/)",
    "settings": {"cache\u001b[31m": "v\u001b]52;c;eA==\u0007 <script>x</script> ![i](http://evil.example/z)"},
    "steps": [{"workload": "ledger", "phase": "insert", "n": 10, "seconds": 1, "ops": 10, "unit": "u",
      "error": "e\u001b[2J <script>", "verify": {"checked": 1, "failed": 1, "first": "f\u001bc <img src=q>"},
      "facts": {"cut": "c\u001b]52;c;eA==\u0007 ![pwn](http://evil.example/c)"}}]
  }]
}`

func controlByte(s string) int {
	for i, r := range s {
		if r != '\n' && r != '\t' && results.Control(r) {
			return i
		}
	}
	return -1
}

func TestHostileRunStringsAreInert(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(hostileRun), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(dir, run); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"console": Markdown(run), "report.md": string(md)} {
		if i := controlByte(doc); i >= 0 {
			t.Errorf("%s: a control character at %d: %q", name, i, doc[max(0, i-20):min(len(doc), i+20)])
		}
		for _, bad := range []string{"<script", "<img", "![pwn", "![i", "](http://evil"} {
			if strings.Contains(doc, bad) {
				t.Errorf("%s: %q from the run's strings reaches it:\n%s", name, bad, doc)
			}
		}
		if !strings.Contains(doc, `\x1b]52`) {
			t.Errorf("%s: the escaped title is not shown", name)
		}
	}
	// An in-memory run (the coordinator's, never read from a file) is
	// rendered the same way.
	run.Title = "raw\x1b]52;c;eA==\x07<script>"
	if doc := Markdown(run); controlByte(doc) >= 0 || strings.Contains(doc, "<script") {
		t.Errorf("a run's own title reaches the report raw")
	}
	if run.Title != "raw\x1b]52;c;eA==\x07<script>" {
		t.Errorf("rendering changed the run: %q", run.Title)
	}
}
