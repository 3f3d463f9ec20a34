package all

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/server"
)

// root is the repository's root, from this package's directory.
var root = filepath.Join("..", "..", "..")

// gaps lists what registration and manifests disagree on: a registered
// server with no manifest line, a line naming no registered server (its
// package missing from all.go), an install=go with no cmd/install to run.
func gaps(registered []string, ms []server.Manifest) []string {
	var out []string
	lines := map[string]bool{}
	for _, m := range ms {
		lines[m.Name] = true
	}
	isRegistered := map[string]bool{}
	for _, name := range registered {
		isRegistered[name] = true
		if !lines[name] {
			out = append(out, fmt.Sprintf("server %s is registered but has no line in internal/server/*/manifest.txt", name))
		}
	}
	for _, m := range ms {
		if !isRegistered[m.Name] {
			out = append(out, fmt.Sprintf("internal/server/%s/manifest.txt names %s, which is not registered: is internal/server/%s in all.go?", m.Dir, m.Name, m.Dir))
		}
		if m.Install == server.InstallGo {
			cmd := filepath.Join(root, "internal", "server", m.Dir, "cmd", "install")
			if fi, err := os.Stat(cmd); err != nil || !fi.IsDir() {
				out = append(out, fmt.Sprintf("%s: install=go, but there is no %s to go run", m.Name, cmd))
			}
		}
	}
	return out
}

func registered() []string {
	var names []string
	for _, s := range server.All() {
		names = append(names, s.Name())
	}
	return names
}

// Every server registered has a manifest line, and every manifest line
// names a server registered here (so its package is in all.go's import
// list).
func TestEveryServerHasAManifest(t *testing.T) {
	ms, err := server.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	names := registered()
	if len(names) < 10 {
		t.Fatalf("only %d servers registered: %v", len(names), names)
	}
	for _, g := range gaps(names, ms) {
		t.Errorf("%s", g)
	}
}

// The check fails on what it exists to catch: a server registered with
// no manifest, a manifest whose package all.go leaves out, an install
// step that is not there.
func TestManifestCheckCatchesGaps(t *testing.T) {
	ms, err := server.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	planted := append(ms,
		server.Manifest{Name: "unlinked", Dir: "unlinked", Install: server.InstallBuiltin, Test: server.TestShared},
		server.Manifest{Name: "nojars", Dir: "nojars", Install: server.InstallGo, Test: server.TestShared})
	got := strings.Join(gaps(append(registered(), "nomanifest", "nojars"), planted), "\n")
	for _, want := range []string{
		"server nomanifest is registered but has no line",
		"names unlinked, which is not registered",
		"nojars: install=go, but there is no",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("not caught: %s; got:\n%s", want, got)
		}
	}
}
