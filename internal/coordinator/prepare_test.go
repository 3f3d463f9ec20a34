package coordinator

import (
	"strings"
	"testing"

	"storebench/internal/study"
	_ "storebench/internal/target/memcached"
	_ "storebench/internal/target/mpt"
	_ "storebench/internal/target/pebble"
	_ "storebench/internal/target/postgres"
	_ "storebench/internal/target/redis"
	_ "storebench/internal/workload/ledger"
	_ "storebench/internal/workload/pointselect"
	_ "storebench/internal/workload/ycsb"
)

// An authenticated store asked for the ledger can run nothing of the
// study: it is refused when the run is prepared, with what it lacks, not
// in its worker.
func TestPrepareRefusesATargetThatCanRunNothing(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	s.Targets = []study.Target{{Name: "pebble"}, {Name: "mpt"}}
	_, err = Prepare(s)
	if err == nil || !strings.Contains(err.Error(), "targets[1]: mpt can run nothing in this study (ledger: no single key-value writes, no secondary lookups)") {
		t.Fatalf("Prepare: %v", err)
	}
}

// The requirements of every step are matched against what each target
// provides: YCSB E (ordered scans) is n/a on Redis and memcached with the
// reason, every other step of theirs runs, and an ordered engine or
// PostgreSQL runs everything. A study of two workloads makes one of them
// n/a as a whole on memcached (no secondary lookups for the ledger) while
// its YCSB steps still run.
func TestPrepareMatchesCapabilitiesPerTargetAndStep(t *testing.T) {
	s, err := study.Parse("t.yaml", []byte(`name: t
ladder: [10, 100]
targets: [pebble, redis, memcached, postgres]
workloads:
  - name: ycsb
    params: {workloads: [a, e, c]}
  - name: ledger
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.NA) != len(p.Targets) {
		t.Fatalf("NA for %d of %d targets", len(p.NA), len(p.Targets))
	}
	for i, info := range p.Targets {
		for j, st := range p.Steps {
			why := p.NA[i][j]
			var want string
			switch {
			case info.Name == "pebble", info.Name == "postgres":
			case st.Workload == "ycsb" && st.Phase == "e":
				want = "no ordered scans"
			case st.Workload == "ledger" && info.Name == "memcached":
				want = "no secondary lookups"
			}
			if why != want {
				t.Errorf("%s %s %s N=%d: n/a %q, want %q", info.Name, st.Workload, st.Phase, st.N, why, want)
			}
		}
	}
	// SQL point selects alone: redis can run none of them.
	s2, err := study.Parse("t.yaml", []byte(`name: t
ladder: [10]
targets: [postgres, redis]
workloads:
  - name: pointselect
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(s2); err == nil || !strings.Contains(err.Error(), "targets[1]: redis can run nothing in this study (pointselect: no SQL)") {
		t.Fatalf("Prepare: %v", err)
	}
}
