package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
