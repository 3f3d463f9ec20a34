package main

import (
	"os"
	"strings"
	"testing"
)

// Aerospike is a target by URI only (no package ships its server):
// `storebench list` says so, a run that names it without a URI is
// refused before anything runs (exit 2, nothing written) saying the URI
// to give, and `storebench server start aerospike` says the same.
func TestAerospikeIsByURIOnly(t *testing.T) {
	list, _, code := runCLI(t, "list")
	if code != 0 || !strings.Contains(list, "Aerospike: by URI; no package ships its server (aerospike://host:port/namespace)") {
		t.Errorf("storebench list (exit %d) does not say Aerospike is by URI only:\n%s", code, list)
	}
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "aerospike" && strings.Contains(line, "managed") {
			t.Errorf("list offers a managed Aerospike: %q", line)
		}
	}

	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", "ycsb", "--targets", "pebble,aerospike", "--out", out)
	if code != 2 || !strings.Contains(stderr, "aerospike has no server storebench can start (no package ships its server): give it by URI, as aerospike://host:port/namespace") {
		t.Errorf("run --targets pebble,aerospike: exit %d, want 2 saying the URI to give\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("a refused run wrote %d entries in --out", len(ents))
	}

	_, stderr, code = runCLI(t, "server", "start", "aerospike")
	if code != 2 || !strings.Contains(stderr, "storebench runs no Aerospike server (no package ships its server)") || !strings.Contains(stderr, "aerospike://host:port/namespace") {
		t.Errorf("server start aerospike: exit %d: %q", code, stderr)
	}
}
