package seedcmp

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

// An engine's own target on a machine shape (cassandra@nuc-scaled) is
// the engine, never a stand-in named as the cause of a difference; a
// real stand-in (FerretDB for MongoDB) still is, by its target's name.
func TestStandInIsNotTheEngineOnAShape(t *testing.T) {
	s := &Seed{Engines: []Engine{{Name: "Cassandra", Targets: []string{"cassandra"}}, {Name: "MongoDB", Targets: []string{"mongodb", "ferretdb"}}}}
	stand := map[string]*results.Target{
		"Cassandra": {Name: "cassandra@nuc-scaled", Machine: "name=nuc-scaled,cache=8GB"},
		"MongoDB":   {Name: "ferretdb@nuc-scaled", Machine: "name=nuc-scaled,cache=8GB"},
	}
	got := standInCauses(s, stand, map[string]bool{"Cassandra": true, "MongoDB": true})
	if len(got) != 1 || !strings.HasPrefix(got[0], "MongoDB ran here as ferretdb, which stands for it") {
		t.Fatalf("causes %q: want MongoDB's stand-in alone, named ferretdb", got)
	}
}
