package all

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"storebench/internal/server"
)

// The install scripts read the manifests, so a server's Debian packages
// are written in its manifest.txt and nowhere else: what
// scripts/install-servers.sh installs for each server is what its
// manifest says, and no file of scripts/ or the Makefile names one of
// those packages where it would install it.

// script runs the scripts/install-servers.sh of the tree at dir with args
// (modes that install nothing) and returns its output's lines.
func script(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(dir, "scripts", "install-servers.sh")}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/install-servers.sh %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// wantStep is the line `install-servers.sh --list` should print for m.
func wantStep(t *testing.T, m server.Manifest) string {
	t.Helper()
	if other := m.Like(); other != "" {
		o, err := server.ManifestOf(other)
		if err != nil {
			t.Fatal(err)
		}
		m = server.Manifest{Name: m.Name, Dir: o.Dir, Install: o.Install, Apt: o.Apt, Extra: o.Extra}
	}
	switch m.Install {
	case server.InstallApt:
		return strings.Join(append([]string{m.Name, "apt"}, append(slices.Clone(m.Apt), m.Extra...)...), " ")
	case server.InstallGo:
		return fmt.Sprintf("%s go ./internal/server/%s/cmd/install", m.Name, m.Dir)
	}
	return m.Name + " " + m.Install
}

// scriptDisagrees returns how the --list and --shared of the script in
// the tree at dir differ from the manifests ms ("" when they agree).
func scriptDisagrees(t *testing.T, dir string, ms []server.Manifest) string {
	t.Helper()
	var want, shared []string
	for _, m := range ms {
		want = append(want, wantStep(t, m))
		if m.Test == server.TestShared {
			shared = append(shared, m.Name)
		}
	}
	// sshd is the one entry of the script's own: no server storebench
	// manages (the remote-worker tests' sshd).
	want = append(want, "sshd apt openssh-server openssh-client")
	var out string
	if got := script(t, dir, "--list"); !slices.Equal(got, want) {
		out += fmt.Sprintf("install-servers.sh --list:\n%s\nwant, from the manifests:\n%s\n", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := script(t, dir, "--shared"); !slices.Equal(got, shared) {
		out += fmt.Sprintf("install-servers.sh --shared = %v, want the test=shared servers %v\n", got, shared)
	}
	return out
}

func TestInstallScriptInstallsTheManifests(t *testing.T) {
	ms, err := server.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if d := scriptDisagrees(t, root, ms); d != "" {
		t.Error(d)
	}
}

// The check fails when the script installs other than the manifests say:
// a copy of the tree where redis's manifest gains a package and node's
// test= changes, checked against the manifests built in.
func TestInstallScriptCheckCatchesADifference(t *testing.T) {
	ms, err := server.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFile(t, filepath.Join(root, "scripts", "install-servers.sh"), filepath.Join(dir, "scripts", "install-servers.sh"))
	for _, m := range ms {
		rel := filepath.Join("internal", "server", m.Dir, server.ManifestFile)
		copyFile(t, filepath.Join(root, rel), filepath.Join(dir, rel))
	}
	edit(t, filepath.Join(dir, "internal", "server", "redis", server.ManifestFile), "apt=redis-server,", "apt=redis-server,redis-sentinel,")
	edit(t, filepath.Join(dir, "internal", "server", "node", server.ManifestFile), "test=shared", "test=own")
	d := scriptDisagrees(t, dir, ms)
	if !strings.Contains(d, "redis apt redis-server redis-sentinel") || !strings.Contains(d, "--shared") {
		t.Errorf("the changed manifests were not caught:\n%s", d)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// edit replaces old by repl in file, which must hold it.
func edit(t *testing.T, file, old, repl string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), old, repl, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// installLine matches a line that installs or lists Debian packages. A
// package named like a command the bench scripts run (sysbench, wrk) or
// like a server (nginx, memcached) is taken for a package only there.
var installLine = regexp.MustCompile(`apt-get|apt_install|\bapt\b|dpkg|\bpkgs\b|\bpackages\b`)

// packageToken splits a line into the words a Debian package name can be.
var packageToken = regexp.MustCompile(`[a-z0-9][a-z0-9+.-]+`)

// listings returns the places in files (path -> text) that name one of
// pkgs (package -> its server). A package named like a server or in
// sameName is taken for the command or server of that name, unless the
// line installs.
func listings(files map[string]string, pkgs map[string]string, sameName map[string]bool) []string {
	var out []string
	for path, text := range files {
		for i, line := range strings.Split(text, "\n") {
			for _, tok := range packageToken.FindAllString(line, -1) {
				srv, ok := pkgs[tok]
				if !ok || sameName[tok] && !installLine.MatchString(line) {
					continue
				}
				out = append(out, fmt.Sprintf("%s:%d: %s (package of server %s: its manifest.txt names it)", path, i+1, tok, srv))
			}
		}
	}
	slices.Sort(out)
	return out
}

// installFiles reads every file of scripts/ and the Makefile.
func installFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(filepath.Join(root, "scripts"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	files[filepath.Join(root, "Makefile")] = string(b)
	return files
}

// manifestPackages maps every manifest's package to its server, and
// says which are named like a server or a command the benches run.
func manifestPackages(t *testing.T) (pkgs map[string]string, sameName map[string]bool) {
	t.Helper()
	ms, err := server.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	pkgs = map[string]string{}
	sameName = map[string]bool{"sysbench": true, "wrk": true}
	for _, m := range ms {
		for _, p := range append(slices.Clone(m.Apt), m.Extra...) {
			pkgs[p] = m.Name
		}
	}
	for _, m := range ms {
		if _, ok := pkgs[m.Name]; ok {
			sameName[m.Name] = true
		}
	}
	return pkgs, sameName
}

func TestPackagesListedOnlyInManifests(t *testing.T) {
	pkgs, sameName := manifestPackages(t)
	files := installFiles(t)
	if len(files) < 10 || len(pkgs) < 10 {
		t.Fatalf("read %d files and %d packages: moved?", len(files), len(pkgs))
	}
	for _, l := range listings(files, pkgs, sameName) {
		t.Errorf("%s", l)
	}
}

// The check fails on what it exists to catch: a package list written
// again in a script or the Makefile, as install-servers.sh had it.
func TestPackageCheckCatchesADuplicate(t *testing.T) {
	pkgs, sameName := manifestPackages(t)
	files := installFiles(t)
	for _, planted := range []string{
		`  [redis]="redis-server redis-tools"`,
		`  [memcached]="memcached libmemcached-tools" # memcslap`,
		`$sudo apt-get install -y -qq nginx wrk`,
		`PKGS = postgresql-15-postgis-3`,
		`want+=(sysbench)  # pkgs`,
	} {
		f := filepath.Join(root, "scripts", "install-servers.sh")
		with := map[string]string{}
		for p, text := range files {
			with[p] = text
		}
		with[f] += "\n" + planted + "\n"
		if got := listings(with, pkgs, sameName); len(got) == 0 {
			t.Errorf("not caught: %s", planted)
		}
	}
	for _, fine := range []string{
		`sysbench oltp_read_only --threads=8 --time=10`,
		`for s in redis nginx memcached; do`,
		`wrk -t 2 -c 100 -d 5s http://127.0.0.1/`,
	} {
		if got := listings(map[string]string{"x.sh": fine}, pkgs, sameName); len(got) > 0 {
			t.Errorf("a command or server's name taken for a package list: %v", got)
		}
	}
}
