package coordinator

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/study"
	_ "storebench/internal/target/aerospike"
	_ "storebench/internal/target/bbolt"
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

// A target storebench runs no server of (Aerospike: no package ships
// its server) named without a URI is refused when the run is prepared,
// at its line, saying the URI to give; named by URI it is prepared.
func TestPrepareRefusesAByURIOnlyTargetWithoutURI(t *testing.T) {
	s, err := study.Parse("t.yaml", []byte(`name: t
ladder: [10]
targets:
  - pebble
  - aerospike
workloads:
  - name: ycsb
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(s)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:5: targets[1]: aerospike has no server storebench can start (no package ships its server): give it by URI, as aerospike://host:port/namespace") {
		t.Fatalf("Prepare: %v", err)
	}
	s, err = study.Parse("t.yaml", []byte("name: t\nladder: [10]\ntargets: [pebble, \"aerospike://10.0.0.7:3000/test\"]\nworkloads:\n  - name: ycsb\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(s); err != nil {
		t.Fatalf("Prepare with a URI: %v", err)
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

// Errors Prepare finds carry the study file's line, or the flag that set
// the value: an unknown option names its line, --set's bad value names
// --set, and a phase removed by --set blames the --set, not the
// constraint that bounds it.
func TestPrepareErrorsAreLocated(t *testing.T) {
	src := "name: x\nladder: [10]\ntargets:\n  - name: pebble\n    options:\n      nosuch_option: \"1\"\nworkloads:\n  - name: ledger\n"
	s, err := study.Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Prepare(s); err == nil || !strings.HasPrefix(err.Error(), "f.yaml:6: targets[0].options.nosuch_option: pebble has no option") {
		t.Errorf("unknown option: %v", err)
	}
	for _, c := range []struct {
		set, want string
	}{
		{"ledger.stress.rate=-5", "--set ledger.stress.rate=-5: -5 is out of range: want 0..1e8"},
		{"ledger.stress.duration=0s", "--set ledger.stress.duration=0s: leaves the study without phase ledger.stress, which constraints.p99.ledger.stress needs (studies/ledger.yaml:"},
		{"ledger.batch=0", "--set ledger.batch=0: 0 is out of range: want 1..100000"},
	} {
		s, err := study.Load("ledger")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Set: []string{c.set}}); err != nil {
			t.Fatal(err)
		}
		if _, err := Prepare(s); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("--set %s: got %v, want %q", c.set, err, c.want)
		}
	}
	// The same value in the file is the file's, at its line.
	s, err = study.Parse("f.yaml", []byte("name: x\nladder: [10]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n    params:\n      stress:\n        rate: -5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Prepare(s); err == nil || !strings.HasPrefix(err.Error(), "f.yaml:8: workloads.ledger.params.stress.rate: -5 is out of range: want 0..1e8") {
		t.Errorf("file value: %v", err)
	}
}

// The study as run, written to the results, prepares to the same steps
// as the study it was written from.
func TestEffectiveStudyPreparesTheSameSteps(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	ladder, seed := "10,1e3", int64(9)
	if err := s.Apply(study.Override{Ladder: &ladder, Seed: &seed, Set: []string{"ledger.stress.rate=700", "ledger.selects=20"}}); err != nil {
		t.Fatal(err)
	}
	s.Targets = []study.Target{{Name: "pebble"}}
	want, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	text, err := s.Effective(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := study.Parse("study.yaml", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	got, err := Prepare(back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want.Steps, got.Steps) {
		t.Fatalf("steps differ:\nwant %+v\ngot  %+v", want.Steps, got.Steps)
	}
}

// A compaction beside the stress load is one more requirement of that one
// step: a target without a compaction of its own runs every other phase
// and has the stress "n/a: no compaction", instead of failing the phase.
func TestBackgroundCompactionIsARequirement(t *testing.T) {
	s, err := study.Parse("t.yaml", []byte(`name: t
ladder: [100]
targets: [pebble, bbolt]
workloads:
  - name: ledger
    params:
      stress: {duration: 1s, rate: 100, background: {task: compact, every: 1s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, info := range p.Targets {
		for j, st := range p.Steps {
			want := ""
			if info.Name == "bbolt" && st.Phase == "stress" {
				want = "no compaction"
			}
			if got := p.NA[i][j]; got != want {
				t.Errorf("%s %s: n/a %q, want %q", info.Name, st.Phase, got, want)
			}
		}
	}
}

// A workload entry's own concurrency sets its steps' and its sweep adds
// levels to it; the other workloads keep the study's.
func TestPrepareEntryConcurrency(t *testing.T) {
	s, err := study.Parse("t.yaml", []byte(`name: t
concurrency: 8
ladder: [10]
targets: [pebble]
workloads:
  - name: ycsb
    concurrency: 100
    params: {workloads: [c]}
    sweep: {concurrency: [500]}
  - name: ledger
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, st := range p.Steps {
		got[st.Labels.Name()] = st.Concurrency
	}
	for name, c := range map[string]int{"ycsb-load-n10": 100, "ycsb-c-n10": 100, "ycsb-c-n10-c500": 500, "ledger-insert-n10": 8} {
		if got[name] != c {
			t.Errorf("%s: concurrency %d, want %d (steps: %v)", name, got[name], c, got)
		}
	}
}

// workers > 1 is refused before anything starts on a target whose data
// its workers cannot share (memcached: no Attach for YCSB's table),
// naming the target, the step and what it lacks, whether the study's
// workers or --workers asked for them; a target that can share (Redis,
// PostgreSQL) is prepared, and a study whose steps do not split (the
// ledger runs on one worker) is not refused on memcached.
func TestPrepareRefusesWorkersOnATargetThatCannotShare(t *testing.T) {
	parse := func(targets, workload string, workers int) *study.Study {
		t.Helper()
		s, err := study.Parse("t.yaml", []byte("name: t\nladder: [10]\nworkers: "+strconv.Itoa(workers)+"\ntargets: ["+targets+"]\nworkloads:\n  - name: "+workload+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, err := Prepare(parse("redis, memcached", "ycsb", 3))
	want := "t.yaml:3: workers: 3: memcached cannot share its data among worker processes (no data shared across worker processes), which step ycsb.load split across 3 workers needs"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "redis") {
		t.Fatalf("Prepare: %v\nwant %q", err, want)
	}
	s := parse("memcached", "ycsb", 1)
	n := 2
	if err := s.Apply(study.Override{Workers: &n}); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(s); err == nil || !strings.HasPrefix(err.Error(), "--workers 2: ") || !strings.Contains(err.Error(), "memcached cannot share") {
		t.Fatalf("Prepare with --workers 2: %v", err)
	}
	if _, err := Prepare(parse("redis, postgres", "ycsb", 4)); err != nil {
		t.Fatalf("redis and postgres share their tables: %v", err)
	}
	if _, err := Prepare(parse("memcached", "pointselect", 2)); err != nil && strings.Contains(err.Error(), "cannot share") {
		t.Fatalf("pointselect does not split: %v", err)
	}
}
