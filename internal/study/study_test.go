package study

import (
	"errors"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
	"strings"
	"testing"
)

func TestBuiltinLedgerLoads(t *testing.T) {
	s, err := Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "ledger" || len(s.Targets) != 8 || s.Largest() != 100000 || s.Durability != "sync" {
		t.Fatalf("unexpected study: %+v", s)
	}
	if !strings.Contains(s.Source, "name: ledger") {
		t.Fatal("study source not kept")
	}
}

func TestErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: x\nladder: [10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\nlimts: {}\n", "f.yaml:5: limts: unknown field"},
		{"bad count", "name: x\nladder: [10, ten]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:2: ladder[1]: \"ten\" is not a count"},
		{"shrinking ladder", "name: x\nladder: [100, 10]\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "ladder[1]: the ladder must grow strictly"},
		{"bad durability", "name: x\nladder: [10]\ndurability: maybe\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:3: durability: \"maybe\": want sync"},
		{"bad size", "name: x\nladder: [10]\nlimits:\n  disk: lots\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:4: limits.disk: \"lots\" is not a size"},
		{"bad duration", "name: x\nladder: [10]\nlimits:\n  time: forever\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:4: limits.time: \"forever\" is not a duration"},
		{"target field", "name: x\nladder: [10]\ntargets:\n  - name: rocksdb\n    cahce: 1MiB\nworkloads: [{name: ledger}]\n", "f.yaml:5: targets[0].cahce: unknown field"},
		{"no targets", "name: x\nladder: [10]\nworkloads: [{name: ledger}]\n", "targets: missing"},
		{"not yaml", "name: [x\n", "f.yaml"},
		{"empty", "", "f.yaml: the file is empty"},
		{"wrong kind", "name: x\nladder: {a: 1}\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:2: ladder: want a list"},
		{"concurrency", "name: x\nladder: [10]\nconcurrency: lots\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:3: concurrency: \"lots\" is not a valid int"},
		{"seed study", "name: x\nladder: [10]\nseed_study: \"0001\"\ntargets: [pebble]\nworkloads: [{name: ledger}]\n", "f.yaml:3: seed_study: \"0001\": want the seed study's three digits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(c.yaml))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *study.Error", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestUnits(t *testing.T) {
	for in, want := range map[string]Count{"10": 10, "1e5": 100000, "100k": 100000, "10M": 10_000_000, "1_000": 1000, "2.5k": 2500} {
		got, err := ParseCount(in)
		if err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5", "1e20"} {
		if _, err := ParseCount(bad); err == nil {
			t.Errorf("ParseCount(%q) accepted", bad)
		}
	}
	for in, want := range map[string]Bytes{"1024": 1024, "1KiB": 1024, "64MiB": 64 << 20, "10GB": 10e9, "2 GiB": 2 << 30} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if FormatCount(100000) != "1e5" || FormatCount(1500) != "1500" || FormatCount(10) != "10" {
		t.Error("FormatCount")
	}
}

func TestOverrides(t *testing.T) {
	s, err := Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(7)
	err = s.Apply(Override{Ladder: str("10,1e3"), Targets: str("pebble,bbolt"), Durability: str("async"), Seed: &seed,
		Set: []string{"ledger.selects=50", "ledger.stress.rate=100", "ledger.newthing=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Ladder) != 2 || s.Ladder[1] != 1000 || len(s.Targets) != 2 || s.Durability != "async" || s.Seed != 7 {
		t.Fatalf("overrides not applied: %+v", s)
	}
	// The assignments land in the raw params, where the workload decodes
	// (and strictly validates) them like file content.
	var p map[string]any
	if err := s.Workloads[0].Params.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p["selects"] != 50 || p["stress"].(map[string]any)["rate"] != 100 || p["newthing"] != 1 {
		t.Fatalf("--set did not reach the params: %v", p)
	}
	for _, bad := range []Override{{Ladder: str("10,5")}, {Ladder: str("x")}, {Durability: str("fast")}, {Set: []string{"nope.x=1"}}, {Set: []string{"ledger"}}, {TimeLimit: str("soon")}} {
		s2, _ := Load("ledger")
		if err := s2.Apply(bad); err == nil {
			t.Errorf("override %+v accepted", bad)
		}
	}
}

func TestLoadUnknown(t *testing.T) {
	_, err := Load("no-such-study")
	if err == nil || !strings.Contains(err.Error(), "built-in: ") || !strings.Contains(err.Error(), " ledger,") {
		t.Fatalf("got %v", err)
	}
	_, err = Load("/no/such/file.yaml")
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("got %v", err)
	}
}

func TestSetErrorsPointAtTheCommandLine(t *testing.T) {
	s, _ := Load("ledger")
	if err := s.Apply(Override{Set: []string{"ledger.chains.lengths=10,100"}}); err != nil {
		t.Fatal(err)
	}
	var chains struct {
		Lengths []Count `yaml:"lengths"`
		Samples int     `yaml:"samples"`
	}
	params := s.Workloads[0].Params
	var node *yaml.Node
	for i := 0; i+1 < len(params.Content); i += 2 {
		if params.Content[i].Value == "chains" {
			node = params.Content[i+1]
		}
	}
	err := DecodeParams(s.File, *node, "chains", &chains)
	if err == nil || !strings.Contains(err.Error(), "(command line)") || strings.Contains(err.Error(), "ledger.yaml:1:") {
		t.Fatalf("got %v", err)
	}
}

func str(s string) *string { return &s }

// A workload entry may carry its own concurrency (one study running 100
// HTTP connections and 8 SQL threads); a written 0 or a level out of
// range is refused at its line, --set WORKLOAD.concurrency changes it,
// and the study as run keeps it.
func TestEntryConcurrency(t *testing.T) {
	src := "name: t\nladder: [10]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n    concurrency: 100\n  - name: ycsb\n"
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Workloads[0].Concurrency != 100 || s.Workloads[1].Concurrency != 0 || s.Concurrency != 8 {
		t.Fatalf("entry concurrency: %+v", s.Workloads)
	}
	for _, bad := range []string{"0", "5000", "-1"} {
		_, err := Parse("t.yaml", []byte(strings.Replace(src, "concurrency: 100", "concurrency: "+bad, 1)))
		if err == nil || !strings.Contains(err.Error(), "t.yaml:6: workloads.ledger.concurrency: "+bad+": want 1..4096") {
			t.Errorf("concurrency %s: %v", bad, err)
		}
	}
	if err := s.Apply(Override{Set: []string{"ycsb.concurrency=64"}}); err != nil {
		t.Fatal(err)
	}
	if s.Workloads[1].Concurrency != 64 {
		t.Fatalf("--set ycsb.concurrency=64: %+v", s.Workloads[1])
	}
	for _, bad := range []string{"ycsb.concurrency=0", "ycsb.concurrency=x", "nope.concurrency=8"} {
		s2, _ := Parse("t.yaml", []byte(src))
		if err := s2.Apply(Override{Set: []string{bad}}); err == nil {
			t.Errorf("--set %s accepted", bad)
		}
	}
	out, err := s.Effective(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("study.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Workloads[0].Concurrency != 100 || back.Workloads[1].Concurrency != 64 {
		t.Fatalf("the study as run lost the entries' concurrency:\n%s", out)
	}
}

// seed_study survives the study as run (study.yaml), quoted: "000" stays
// three digits.
func TestSeedStudyRoundTrips(t *testing.T) {
	s, err := Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	if s.SeedStudy != "000" {
		t.Fatalf("ledger names seed %q", s.SeedStudy)
	}
	b, err := s.Effective(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("study.yaml", b)
	if err != nil || back.SeedStudy != "000" || !strings.Contains(string(b), "seed_study: \"000\"\n") {
		t.Fatalf("round trip: %v %q\n%s", err, back.SeedStudy, b)
	}
}

// --crash K adds the crash phase: the durability workload, K trials of
// each crash kind under the study's own durability; a bad K or a study
// that has the workload already is refused.
func TestCrashAddsTheDurabilityPhase(t *testing.T) {
	load := func() *Study {
		s, err := Parse("t.yaml", []byte("name: t\ndurability: async\nladder: [10]\ntargets: [pebble]\nworkloads:\n  - name: ledger\n"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := load()
	k := 7
	if err := s.Apply(Override{Crash: &k}); err != nil {
		t.Fatal(err)
	}
	if len(s.Workloads) != 2 || s.Workloads[1].Name != CrashWorkload {
		t.Fatalf("workloads %+v: want ledger, then %s", s.Workloads, CrashWorkload)
	}
	var p struct {
		Trials  int      `yaml:"trials"`
		Classes []string `yaml:"classes"`
	}
	if err := s.Workloads[1].Params.Decode(&p); err != nil || p.Trials != 7 || len(p.Classes) != 1 || p.Classes[0] != "async" {
		t.Fatalf("params %+v (%v): want 7 trials under the study's async", p, err)
	}
	if err := s.Apply(Override{Crash: &k}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second --crash: %v, want refused", err)
	}
	for _, bad := range []int{0, -1, 10001} {
		if err := load().Apply(Override{Crash: &bad}); err == nil {
			t.Errorf("--crash %d accepted", bad)
		}
	}
	def := "default"
	if err := load().Apply(Override{Crash: &k, Durability: &def}); err == nil || !strings.Contains(err.Error(), "--durability sync or async") {
		t.Errorf("--crash under durability default: %v, want refused", err)
	}
}

// A study path naming a FIFO is refused at once (it used to block in the
// open), and a file that is not a study is refused without its content
// (a password file's first line) echoed in the error.
func TestLoadRefusesFIFOAndEchoesNoForeignContent(t *testing.T) {
	dir := t.TempDir()
	fifo := dir + "/fifo.yaml"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("making a FIFO to test with: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("FIFO: got %v, want a refusal as not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load of a FIFO hangs")
	}
	for _, data := range []string{
		"root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n",
		"secret words\n",
		"- a\n- b\n",
	} {
		_, err := Parse("f", []byte(data))
		if err == nil || !strings.Contains(err.Error(), "not a study file (line 1 is not YAML of a study)") {
			t.Fatalf("%q: got %v, want not a study file", data, err)
		}
		if strings.Contains(err.Error(), strings.SplitN(data, "\n", 2)[0]) {
			t.Fatalf("%q: the error echoes the file's content: %v", data, err)
		}
	}
	_, err := Parse("f", []byte("name: x\nroot:*:20228:0:99999:7:::\n"))
	if err == nil || strings.Contains(err.Error(), "20228") {
		t.Fatalf("got %v, want an error that does not echo the key", err)
	}
}
