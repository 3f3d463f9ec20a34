package server

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

// Manifests: what each server needs installed, how it is installed and how
// the tests start it, written once, in the file manifest.txt of its
// package's directory (internal/server/<dir>/manifest.txt), and read both
// here and by scripts/install-servers.sh (which scripts/test.sh asks which
// servers to start), so that a Debian package is named in exactly one
// place. One line per server the package registers:
//
//	NAME key=value ...
//
// fields separated by blanks, lists by commas, '#' starting a comment:
//
//	install=apt        the Debian packages of apt= (which the server's
//	                   Check and Install use) and of extra= (installed
//	                   with them by the script only: the tools the benches
//	                   and tests run against it, sysbench, wrk, ...)
//	install=go         go run ./internal/server/<dir>/cmd/install
//	install=builtin    nothing: built into storebench
//	install=like:OTHER what server OTHER installs (one level)
//	test=shared        scripts/test.sh starts one for the whole suite
//	test=own           its tests start their own (clusters)
//	testdb=NAME        the database a workload's test uses on the shared
//	                   server (captest.URI): the last element of the
//	                   server's URI path, {scope} the test's own word,
//	                   {time} a fresh one per test, created first where
//	                   the server needs it (PostgreSQL, MariaDB) and
//	                   dropped when it ends
//
//go:embed */manifest.txt
var manifestFiles embed.FS

// ManifestFile is the name of a server's manifest in its package's
// directory.
const ManifestFile = "manifest.txt"

// The install steps a manifest names.
const (
	InstallApt     = "apt"
	InstallGo      = "go"
	InstallBuiltin = "builtin"
	installLike    = "like:"
)

// The ways the tests start a server.
const (
	TestShared = "shared"
	TestOwn    = "own"
)

// Manifest is one server's line.
type Manifest struct {
	Name string
	// Dir is the package directory under internal/server whose
	// manifest.txt holds the line.
	Dir string
	// Install is InstallApt, InstallGo, InstallBuiltin or "like:OTHER".
	Install string
	// Apt are the Debian packages the server needs; Extra those the
	// install script adds beside them (tools run against it).
	Apt, Extra []string
	// Test is TestShared or TestOwn.
	Test string
	// TestDB is the database a workload's test uses on the shared server
	// (empty: the server's own).
	TestDB string
}

// Like is the server whose install step this one shares ("" if none).
func (m Manifest) Like() string {
	other, _ := strings.CutPrefix(m.Install, installLike)
	if other == m.Install {
		return ""
	}
	return other
}

var loadManifests = sync.OnceValues(func() ([]Manifest, error) {
	return readManifests(manifestFiles)
})

// Manifests returns every server's manifest, in the order of their
// directories' names and of their lines.
func Manifests() ([]Manifest, error) { return loadManifests() }

// ManifestOf returns server name's manifest.
func ManifestOf(name string) (Manifest, error) {
	all, err := Manifests()
	if err != nil {
		return Manifest{}, err
	}
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
	}
	return Manifest{}, fmt.Errorf("server %q has no line in any internal/server/*/%s", name, ManifestFile)
}

// Packages returns the Debian packages server name needs, those of the
// server it installs like when it names one.
func Packages(name string) ([]string, error) {
	m, err := ManifestOf(name)
	if err != nil {
		return nil, err
	}
	if other := m.Like(); other != "" {
		if m, err = ManifestOf(other); err != nil {
			return nil, fmt.Errorf("%s installs like %s: %w", name, other, err)
		}
	}
	if m.Install != InstallApt {
		return nil, fmt.Errorf("server %s is not installed with apt (install=%s in internal/server/%s/%s)", name, m.Install, m.Dir, ManifestFile)
	}
	return slices.Clone(m.Apt), nil
}

// MustPackages is Packages for a server package's variable: the manifest
// is embedded in the binary, so a missing line is a mistake the first
// test of that package catches.
func MustPackages(name string) []string {
	p, err := Packages(name)
	if err != nil {
		panic(err)
	}
	return p
}

// readManifests parses every */manifest.txt of fsys and checks them as a
// whole: names unique, each like: naming a server that installs itself.
func readManifests(fsys fs.FS) ([]Manifest, error) {
	files, err := fs.Glob(fsys, "*/"+ManifestFile)
	if err != nil {
		return nil, err
	}
	var all []Manifest
	seen := map[string]string{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms, err := parseManifest(path.Dir(f), string(b))
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if dir, dup := seen[m.Name]; dup {
				return nil, fmt.Errorf("server %s has a manifest line in both internal/server/%s and internal/server/%s", m.Name, dir, m.Dir)
			}
			seen[m.Name] = m.Dir
		}
		all = append(all, ms...)
	}
	return all, checkLikes(all)
}

// checkLikes checks that each like:OTHER names a server with an install
// step of its own.
func checkLikes(all []Manifest) error {
	byName := map[string]Manifest{}
	for _, m := range all {
		byName[m.Name] = m
	}
	for _, m := range all {
		other := m.Like()
		if other == "" {
			continue
		}
		o, ok := byName[other]
		switch {
		case !ok:
			return fmt.Errorf("internal/server/%s/%s: %s: install=like:%s names no server", m.Dir, ManifestFile, m.Name, other)
		case o.Like() != "":
			return fmt.Errorf("internal/server/%s/%s: %s: install=like:%s, which installs like %s itself: name that one", m.Dir, ManifestFile, m.Name, other, o.Like())
		}
	}
	return nil
}

// parseManifest parses the text of dir's manifest.txt.
func parseManifest(dir, text string) ([]Manifest, error) {
	var out []Manifest
	for i, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		m, err := parseLine(dir, fields)
		if err != nil {
			return nil, fmt.Errorf("internal/server/%s/%s:%d: %w", dir, ManifestFile, i+1, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("internal/server/%s/%s: no server in it", dir, ManifestFile)
	}
	return out, nil
}

// parseLine reads one server's fields: its name, then key=value pairs.
func parseLine(dir string, fields []string) (Manifest, error) {
	m := Manifest{Name: fields[0], Dir: dir}
	if strings.Contains(m.Name, "=") {
		return m, fmt.Errorf("the line starts with %q, not a server's name", m.Name)
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return m, fmt.Errorf("%s: %q is not key=value", m.Name, f)
		}
		if seen[k] {
			return m, fmt.Errorf("%s: %s given twice", m.Name, k)
		}
		seen[k] = true
		switch k {
		case "install":
			m.Install = v
		case "apt":
			m.Apt = strings.Split(v, ",")
		case "extra":
			m.Extra = strings.Split(v, ",")
		case "test":
			m.Test = v
		case "testdb":
			m.TestDB = v
		default:
			return m, fmt.Errorf("%s: unknown key %q (install, apt, extra, test, testdb)", m.Name, k)
		}
	}
	return m, m.check()
}

// check checks one line on its own.
func (m Manifest) check() error {
	switch {
	case m.Install == InstallApt && len(m.Apt) == 0:
		return fmt.Errorf("%s: install=apt with no apt= packages", m.Name)
	case m.Install != InstallApt && len(m.Apt)+len(m.Extra) > 0:
		return fmt.Errorf("%s: apt= or extra= with install=%s: packages belong to an install=apt line", m.Name, m.Install)
	case m.Install != InstallApt && m.Install != InstallGo && m.Install != InstallBuiltin && m.Like() == "":
		return fmt.Errorf("%s: install=%q: want apt, go, builtin or like:OTHER", m.Name, m.Install)
	case m.Test != TestShared && m.Test != TestOwn:
		return fmt.Errorf("%s: test=%q: want shared or own", m.Name, m.Test)
	case m.TestDB != "" && m.Test != TestShared:
		return fmt.Errorf("%s: testdb= names a database on the shared server, but test=%s", m.Name, m.Test)
	}
	for _, p := range append(slices.Clone(m.Apt), m.Extra...) {
		if !debianName(p) {
			return fmt.Errorf("%s: %q is not a Debian package name", m.Name, p)
		}
	}
	return nil
}

// debianName says whether p is a valid Debian package name: lower-case
// letters, digits, '+', '-' and '.', at least two, starting with a letter
// or digit.
func debianName(p string) bool {
	if len(p) < 2 || !isLowerAlnum(p[0]) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !isLowerAlnum(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
