package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// forbidden are what an install step may not do: everything storebench
// installs comes from a package registry at a pinned version (Debian's
// apt, the Go module proxy, Maven Central, PyPI), through those
// registries' own clients, and nothing is built from a tarball, a
// patch, a clone or a path outside the checkout.
var forbidden = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\.(tar(\.(gz|xz|bz2|zst))?|tgz|txz|zip)\b`), "a source tarball or archive"},
	{regexp.MustCompile(`(?i)shared/vendor|STOREBENCH_VENDOR|\bvendor/`), "a vendored source folder"},
	{regexp.MustCompile(`(^|[\s;&|(])(tar|patch|git\s+(clone|apply|am)|curl|wget|cmake|\./configure)\b`), "a download, clone, patch or source build outside the registries' clients"},
	{regexp.MustCompile(`(^|[\s"'=])\.\./`), "a path outside the checkout"},
}

// installFiles are the files that install or build what storebench
// needs: the scripts, the Makefile and CI's entry point.
func installFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, glob := range []string{"scripts/*.sh", "scripts/lib/*.sh", "Makefile", ".ci/run"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) < 5 {
		t.Fatalf("found only %v: the install files moved?", out)
	}
	return out
}

// violations lists what text does that no install step may, by line;
// comments are skipped (a comment may say what is not done).
func violations(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		code := strings.TrimSpace(line)
		if strings.HasPrefix(code, "#") {
			continue
		}
		if j := strings.Index(code, " #"); j >= 0 {
			code = code[:j]
		}
		for _, f := range forbidden {
			if f.re.MatchString(code) {
				out = append(out, "line "+strconv.Itoa(i+1)+": "+f.why+": "+strings.TrimSpace(line))
			}
		}
	}
	return out
}

func TestInstallsComeFromRegistriesOnly(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, p := range installFiles(t, root) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range violations(string(b)) {
			t.Errorf("%s: %s", p, v)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "patches")); err == nil {
		t.Errorf("scripts/patches exists: storebench patches no one's source")
	}
}

// The check fails on what it exists to catch: the lines the LazyFS and
// Aerospike installs had.
func TestInstallCheckCatchesASourceBuild(t *testing.T) {
	for _, line := range []string{
		`tarball=${vendor:-../shared/vendor}/lazyfs-0.3.0-a47a5ba-src.tar.xz`,
		`tar -xf "$tarball" -C "$work"`,
		`patch -p1 < scripts/patches/lazyfs-odirect.patch`,
		`vendor=${STOREBENCH_VENDOR:-}`,
		`  cmake -S . -B build`,
		`curl -fsSL https://example.org/x -o x`,
		`git clone https://github.com/x/y`,
	} {
		if len(violations(line)) == 0 {
			t.Errorf("not caught: %s", line)
		}
	}
	for _, line := range []string{
		`$sudo apt-get install -y -qq "${missing[@]}"`,
		`mvn -q dependency:copy-dependencies`,
		`"$venv/bin/python" -m pip install -q "hdrhistogram==$py_version"`,
		`# built from a tarball once: no longer`,
		`cd "$(dirname "$0")/.."`,
	} {
		if v := violations(line); len(v) > 0 {
			t.Errorf("a registry's client flagged: %v", v)
		}
	}
}
