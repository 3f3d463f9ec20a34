package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
	kafkaserver "storebench/internal/server/kafka"
	"storebench/internal/server/servertest"
)

const tripcacheStudy = `name: tripcache
ladder: [1]
concurrency: 2
durability: async
targets: [pebble]
workloads:
  - name: tripcache
    params: {transport: "%TRANSPORT%", rate: 500, duration: 1s, sensors: 20, multiplier: 5, min_ticks: 3, max_ticks: 8, grace: 1s}
    sweep:
      rate: {start: 500, factor: 4, max_trials: 2, duration: 1s}
`

// The trip builder end to end through the real binary: the worker starts
// the generator as `storebench server-main tripgen`, over the socket and
// over a real Kafka, with a rate search; every completed trip verified,
// and the report gives the sustainable rate per transport.
func TestTripcacheBothTransports(t *testing.T) {
	kafka := servertest.URI(t, "kafka")
	study := strings.ReplaceAll(tripcacheStudy, "%TRANSPORT%", "socket,kafka")
	dir, run := runSweeps(t, study, "pebble", "--set", "tripcache.kafka_uri="+kafka)
	tr := run.Targets[0]
	for _, ph := range []string{"socket", "kafka"} {
		s := tr.Find("tripcache", ph, -1)
		if s == nil || s.Ops != 500 || s.Verify.Checked == 0 || s.Verify.Failed != 0 {
			t.Fatalf("%s: %+v", ph, s)
		}
		checkSearch(t, tr, "tripcache", ph)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Highest sustainable tick rate", "| Pebble | socket | ", "| Pebble | kafka | ", "### Queue length over time", "partitions (partition = trip id mod 4"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// The Kafka transport with no Kafka named, in a fresh STOREBENCH_HOME:
// the run installs Kafka (its progress lines on screen) and starts the
// managed one, rather than failing "not installed". (Maven's own cache
// of the jars under ~/.m2 may make the fetch quick: the point is that
// the run installs.)
func TestTripcacheKafkaInstallsOnDemand(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(t.TempDir(), "s.yaml")
	study := strings.Replace(strings.ReplaceAll(tripcacheStudy, "%TRANSPORT%", "kafka"), "    sweep:\n      rate: {start: 500, factor: 4, max_trials: 2, duration: 1s}\n", "", 1)
	if err := os.WriteFile(p, []byte(study), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := storebench(t, "run", p, "--out", out)
	var env []string
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "STOREBENCH_KAFKA_URI=") && !strings.HasPrefix(kv, "STOREBENCH_HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "STOREBENCH_HOME="+home)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s\n%s", err, o.String(), e.String())
	}
	screen := o.String() + e.String()
	for _, want := range []string{"installing Apache Kafka", "kafka: fetching org.apache.kafka:kafka_2.13:", "kafka: installed"} {
		if !strings.Contains(screen, want) {
			t.Errorf("no %q on screen:\n%s", want, screen)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "kafka", kafkaserver.Version, "lib", "kafka_2.13-"+kafkaserver.Version+".jar")); err != nil {
		t.Fatal(err)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := run.Targets[0].Find("tripcache", "kafka", -1)
	if run.Status != "complete" || s == nil || s.Ops != 500 || s.Verify.Checked == 0 || !strings.Contains(s.Facts["transport"], "managed Kafka") {
		t.Fatalf("status %s (%s): kafka step %+v", run.Status, run.Reason, s)
	}
}

// The seed scale of tripcache streamed in whole rounds of seed 004's 300M
// trips under way (tripcache.rounds=2) does not fit this machine: the
// run prints its estimate and refuses, exit 2, nothing run. Cut by --set to a hundred trips it fits (rates and grace
// cut too): it runs the seed scale's stream, `rounds` rounds of the trips
// under way whatever the rate, every completed trip read back.
func TestTripcacheSeedScaleEstimatesAndRefuses(t *testing.T) {
	out := t.TempDir()
	_, stderr, code := runCLI(t, "run", "tripcache", "--scale", "seed", "--set", "tripcache.rounds=2", "--out", out)
	if code != 2 || !strings.Contains(stderr, "estimate for tripcache --scale seed: about ") ||
		!strings.Contains(stderr, "does not fit this machine") || !strings.Contains(stderr, "--accept-estimate") {
		t.Fatalf("exit %d, want 2 with the estimate and the flag that accepts it:\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("a refused run left %v", ents)
	}
	// Cut to 20 base sensors x 5 clones, trips of 3-8 ticks, 2 trials.
	_, stderr, code = runCLI(t, "run", "tripcache", "--scale", "seed", "--targets", "pebble", "--out", out, "--quiet",
		"--set", "tripcache.sensors=20", "--set", "tripcache.multiplier=5", "--set", "tripcache.min_ticks=3",
		"--set", "tripcache.max_ticks=8", "--set", "tripcache.rounds=4", "--set", "tripcache.rate=200",
		"--set", "tripcache.sweep.rate.start=200", "--set", "tripcache.sweep.rate.max_trials=2", "--set", "tripcache.grace=1s")
	if code != 0 || !strings.Contains(stderr, "estimate for tripcache --scale seed: about ") || strings.Contains(stderr, "does not fit") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	s := tr.Find("tripcache", "socket", -1)
	// 4 rounds of the 100 trips under way, at 200 ticks/s: 400 ticks in 2 s.
	if s == nil || s.Ops != 400 || s.Verify.Checked == 0 || s.Verify.Failed != 0 {
		t.Fatalf("socket phase: %+v", s)
	}
	checkSearch(t, tr, "tripcache", "socket")
	for _, st := range tr.Steps {
		if st.Labels[results.LRate] != "" && st.Ops != 400 {
			t.Errorf("trial %v: %d ticks, want 400 whatever the rate", st.Labels, st.Ops)
		}
	}
}
