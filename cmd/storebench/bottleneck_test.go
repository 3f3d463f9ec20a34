package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"storebench/internal/report"
	"storebench/internal/results"
)

const balanceStudy = `name: balance
title: bottleneck rates
ladder: [10, 1000]
concurrency: 2
targets: [sqlite]
workloads:
  - name: ledger
    params:
      payload: 100
      selects: 50
      chains: {lengths: [10], samples: 1}
      stress: {duration: 1s, rate: 200}
      balance: {addresses: 3e5, reads: 20000}
`

// physicalBound is more than any disk of this machine's kind can read or
// write per second: a rate above it is an arithmetic error, not a disk.
const physicalBound = 20 << 30

// A real run of the ledger on SQLite, balance phase included (hundreds of
// MB written while building the view, then reads for a fraction of a
// second: the reads once got "disk writes: 47.9 GiB/s"). Every disk rate of
// the bottleneck table is physically plausible, and is recomputed here from
// the raw figures of results.json: bytes and seconds of one interval, the
// timed part alone, whose seconds are the phase's own.
func TestBottleneckRatesOfARealRun(t *testing.T) {
	out := t.TempDir()
	studyFile := filepath.Join(t.TempDir(), "balance.yaml")
	if err := os.WriteFile(studyFile, []byte(balanceStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI(t, "run", studyFile, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.Targets[0]
	if tr.Status != "ok" {
		t.Fatalf("sqlite: %s %s", tr.Status, tr.Reason)
	}
	rated := map[string]bool{}
	for _, s := range tr.Steps {
		what := s.Phase + " N=" + report.Count(s.N)
		w := s.Resources.Timed
		if w == nil {
			t.Fatalf("%s: no timed window in results.json", what)
		}
		// The window is the timed part: the phase's seconds and the few
		// milliseconds of two samples, no setup.
		if w.Seconds < s.Seconds || w.Seconds > s.Seconds+0.25 {
			t.Errorf("%s: timed window %.4f s for a phase of %.4f s", what, w.Seconds, s.Seconds)
		}
		if d := w.After.At.Sub(w.Before.At).Seconds(); math.Abs(d-w.Seconds) > 1e-3 {
			t.Errorf("%s: window of %.4f s between samples %.4f s apart", what, w.Seconds, d)
		}
		bn := report.Classify(run, s)
		if bn.Resource == "short" {
			continue
		}
		if bn.Seconds == 0 {
			t.Errorf("%s: bottleneck %q has no measured disk figures", what, bn.Text)
			continue
		}
		rated[s.Phase] = true
		wantRd, wantWr := w.DeviceReadBytes, w.DeviceWriteBytes
		if w.Device == "" {
			wantRd, wantWr = w.After.ReadBytes-w.Before.ReadBytes, w.After.WriteBytes-w.Before.WriteBytes
		}
		if bn.Seconds != w.Seconds || bn.ReadBytes != wantRd || bn.WriteBytes != wantWr {
			t.Errorf("%s: bottleneck reads %d/%d bytes over %.4f s, the timed window counted %d/%d over %.4f s",
				what, bn.ReadBytes, bn.WriteBytes, bn.Seconds, wantRd, wantWr, w.Seconds)
		}
		for _, r := range []struct {
			name  string
			rate  float64
			bytes int64
		}{{"read", bn.ReadRate, wantRd}, {"write", bn.WriteRate, wantWr}} {
			if want := float64(r.bytes) / w.Seconds; math.Abs(r.rate-want) > 1e-6*math.Max(1, want) {
				t.Errorf("%s: disk %s rate %.0f B/s, %d bytes / %.4f s = %.0f", what, r.name, r.rate, r.bytes, w.Seconds, want)
			}
			if r.rate > physicalBound || r.rate < 0 {
				t.Errorf("%s: disk %s rate %s/s is beyond any device (%s)", what, r.name, report.Bytes(int64(r.rate)), bn.Text)
			}
		}
	}
	for _, ph := range []string{"balance", "stress"} {
		if !rated[ph] {
			t.Errorf("the %s phase was not rated: the test checks nothing there", ph)
		}
	}
	if b := tr.Find("ledger", "balance", -1); b != nil && b.Resources.DeviceWriteBytes > 0 && b.Resources.Timed.DeviceWriteBytes >= b.Resources.DeviceWriteBytes {
		t.Errorf("balance: the timed reads wrote %d bytes, the whole step with the view build %d", b.Resources.Timed.DeviceWriteBytes, b.Resources.DeviceWriteBytes)
	}
}
