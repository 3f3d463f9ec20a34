package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
)

const geoStudy = `name: geo-small
seed: 2
durability: async
ladder: [40]
concurrency: 2
targets: [pebble, postgis]
workloads:
  - name: geo
    params:
      batch: 500
      ingest: {duration: 3s}
      gc: {retention: 6h, every: 500ms}
      timeline: {queries: 20}
      correlate: {users: 5}
`

// The geo study end to end: pebble and PostGIS (on a managed PostgreSQL)
// run every phase verified, the report has the seed-shaped tables, and
// PostGIS keeps its own column (it is not the postgres target).
func TestGeoStudy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "geo-small.yaml")
	os.WriteFile(p, []byte(geoStudy), 0o644)
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", p, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, tr := range run.Targets {
		titles[tr.Name] = tr.Title
		for _, ph := range []string{"ingest", "timeline", "correlate"} {
			s := tr.Find("geo", ph, 40)
			if s == nil || s.Verify.Checked == 0 || s.Error != "" {
				t.Fatalf("%s %s: %+v", tr.Name, ph, s)
			}
		}
	}
	if titles["postgis"] != "PostGIS (PostgreSQL, GiST)" {
		t.Errorf("the postgis column is called %q", titles["postgis"])
	}
	for _, want := range []string{"### Insert rate", "### Garbage collector", "### Timeline of a user", "### Correlations", "| PostGIS (PostgreSQL, GiST) |", "Moving users"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
