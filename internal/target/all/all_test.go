package all

import (
	"os"
	"strings"
	"testing"

	"storebench/internal/kv"
)

// The engines storebench ships; each must be registered whatever the
// build, unavailable ones with the reason and the fix.
var want = []string{"badger", "bbolt", "goleveldb", "leveldb", "lmdb", "pebble", "rocksdb", "sqlite"}

func TestEveryEngineRegistered(t *testing.T) {
	got := map[string]kv.Engine{}
	for _, e := range kv.Engines() {
		got[e.Name] = e
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("engine %q is not registered", name)
		}
	}
	for _, e := range kv.Engines() {
		if e.Title == "" {
			t.Errorf("%s: empty Title", e.Name)
		}
		if len(e.OptionNames) == 0 {
			t.Errorf("%s: no OptionNames", e.Name)
		}
		for _, o := range e.OptionNames {
			if o == "" || strings.ContainsAny(o, " =") {
				t.Errorf("%s: bad option name %q", e.Name, o)
			}
		}
		if e.Kind != "pure-go" && e.Kind != "cgo" {
			t.Errorf("%s: Kind %q, want pure-go or cgo", e.Name, e.Kind)
		}
		if e.Version == "" {
			t.Errorf("%s: Version %q", e.Name, e.Version)
		}
		switch {
		case e.Unavailable != "" && e.Open != nil:
			t.Errorf("%s: both Open and Unavailable set", e.Name)
		case e.Unavailable != "" && !strings.Contains(e.Unavailable, `"make build"`):
			t.Errorf("%s: Unavailable does not say how to fix it: %q", e.Name, e.Unavailable)
		case e.Unavailable == "" && e.Open == nil:
			t.Errorf("%s: neither Open nor Unavailable", e.Name)
		}
		if e.Kind == "pure-go" && e.Unavailable != "" {
			t.Errorf("%s: a pure-Go engine is unavailable: %s", e.Name, e.Unavailable)
		}
		t.Logf("%-9s %-14s %-7s %s %s", e.Name, e.Title, e.Kind, e.Version, e.Unavailable)
	}
}

// Each engine states the version of its Go module as a constant (test
// binaries carry no module build info to read it from); it must match
// go.mod.
func TestVersionsMatchGoMod(t *testing.T) {
	modules := map[string]string{
		"badger":    "github.com/dgraph-io/badger/v4",
		"bbolt":     "go.etcd.io/bbolt",
		"goleveldb": "github.com/syndtr/goleveldb",
		"leveldb":   "github.com/jmhodges/levigo",
		"lmdb":      "github.com/PowerDNS/lmdb-go",
		"pebble":    "github.com/cockroachdb/pebble",
		"rocksdb":   "github.com/linxGnu/grocksdb",
		"sqlite":    "github.com/mattn/go-sqlite3",
	}
	required := requiredModules(t)
	for name, path := range modules {
		e, err := kv.Lookup(name)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		v, ok := required[path]
		if !ok {
			t.Errorf("%s: module %s is not in go.mod", name, path)
			continue
		}
		if e.Unavailable == "" && !strings.Contains(e.Version, v) {
			t.Errorf("%s: Version %q does not mention %s %s from go.mod", name, e.Version, path, v)
		}
	}
}

// requiredModules reads the repository's go.mod: each required module's
// version by its path.
func requiredModules(t *testing.T) map[string]string {
	t.Helper()
	gomod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 {
			required[f[0]] = f[1]
		}
	}
	return required
}
