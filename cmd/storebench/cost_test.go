//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/results"
)

// Issue 36: a run with a sizing prices each target from its own
// measurements, checks the model on the CPU shape it held out, and
// `storebench cost` prices any finished run for another load, data and
// catalog, saying (not crashing) when no machine carries it.
func TestCostFromARealRun(t *testing.T) {
	needMachines(t)
	out, csvDir := t.TempDir(), t.TempDir()
	stdout, stderr, code := runCLIWithin(t, 5*time.Minute, "run", "ycsb", "--targets", "pebble", "--ladder", "2000,20000",
		"--set", "ycsb.workloads=[c]", "--set", "ycsb.operations=60000", "--machine", "cpus=0.5", "--machine", "cpus=1",
		"--export", "csv="+csvDir, "--quiet", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run := readRun(t, dir)
	p := run.Projection
	if p == nil || len(p.Plans) != 1 || p.Catalog != "aws" || p.Sizing.Load != 50000 || p.Sizing.Replicas != 2 {
		t.Fatalf("projection %+v: want one plan for ycsb.yaml's sizing on aws", p)
	}
	pl := p.Plans[0]
	if pl.Best == nil || pl.Best.Count < 2 || pl.Best.Count%2 != 0 || pl.Best.Monthly <= 0 || pl.Best.Deciding == "" {
		t.Fatalf("plan %+v: want machines, a bill and what decides them", pl)
	}
	rows := readCSV(t, filepath.Join(csvDir, "costs.csv"))
	if len(rows) != 1 || rows[0]["target"] != "pebble" || rows[0]["machine"] != pl.Best.Machine.Name || rows[0]["count"] != strconv.Itoa(pl.Best.Count) || rows[0]["deciding"] != pl.Best.Deciding {
		t.Errorf("costs.csv %v: want the projection's one plan (%s × %d)", rows, pl.Best.Machine.Name, pl.Best.Count)
	}
	checkHeldOut(t, run, pl)
	checkItems(t, run, pl)
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(report), "## What it costs") || !strings.Contains(string(report), "Held-out check") || !strings.Contains(string(report), "Projections, not measurements") {
		t.Fatalf("report.md has no cost section (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "charts", "cost-against-load.png")); err != nil {
		t.Errorf("no cost chart: %v", err)
	}
	costCLI(t, dir)
}

// checkHeldOut recomputes the held-out checks from the steps: each kind
// of step (the load and ycsb C, the default mix) on cpus=1 predicted
// from cpus=0.5's alone (linear in vCPUs).
func checkHeldOut(t *testing.T, run *results.Run, pl results.TargetPlan) {
	t.Helper()
	if len(pl.HeldOut) != 2 {
		t.Fatalf("held out %+v: want two (ycsb/load, ycsb/c)", pl.HeldOut)
	}
	for _, h := range pl.HeldOut {
		_, phase, _ := strings.Cut(h.Kind, "/")
		ops := map[string]float64{}
		for _, tg := range run.Targets {
			s := tg.Find("ycsb", phase, 20000)
			if s == nil {
				t.Fatalf("%s: no ycsb %s at 2e4", tg.Name, phase)
			}
			ops[tg.Machine] = float64(s.Ops) / s.Seconds
		}
		if h.Machine != "cpus=1" || h.Fitted != 1 || !closeTo(h.MeasuredOps, ops["cpus=1"]) || !closeTo(h.PredictedOps, 2*ops["cpus=0.5"]) {
			t.Errorf("held out %+v: want cpus=1 measured %.0f, predicted 2 × %.0f", h, ops["cpus=1"], ops["cpus=0.5"])
		}
	}
}

// checkItems: 500GiB of data is that many bytes over the item's size the
// workload reports (key and ten 100-byte fields).
func checkItems(t *testing.T, run *results.Run, pl results.TargetPlan) {
	t.Helper()
	ib := run.Targets[0].Steps[0].Metrics["item_bytes"]
	if ib < 1000 || ib > 1100 || !closeTo(pl.Items, float64(int64(500)<<30)/ib) {
		t.Errorf("items %.4g with item_bytes %g: want 500 GiB over a ~1 KiB record", pl.Items, ib)
	}
}

func closeTo(a, b float64) bool { return a > 0 && b > 0 && a/b > 0.999 && a/b < 1.001 }

// costCLI: storebench cost on the finished run, for another sizing, a
// user's catalog, and loads no machine carries.
func costCLI(t *testing.T, dir string) {
	stdout, stderr, code := runCLI(t, "cost", dir, "--load", "20000/s", "--data", "1e8", "--replicas", "3", "--growth", "10%")
	if code != 0 || !strings.Contains(stdout, "20000 ops/s") || !strings.Contains(stdout, "3 copies") || !strings.Contains(stdout, "month ") {
		t.Fatalf("cost: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "cost", dir, "--load", "1e9/s", "--data", "1e6", "--max-machines", "10")
	if code != 0 || !strings.Contains(stdout, "n/a: no machine of catalog aws carries it") || !strings.Contains(stdout, "more than the 10 allowed") {
		t.Fatalf("a load no machine carries: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mine := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(mine, []byte(`name: mine
title: Our own rack
provider: us
region: home
currency: USD
prices: purchase written off
date: 2026-11-01
source: https://example.com/our-invoices
machines:
  - {name: rack1, vcpus: 64, ram: 512GiB, disk: 8TB, disk_kind: nvme, purchase: 20000, life_months: 48, source: "https://example.com/invoice-1", date: 2026-11-01}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, "cost", dir, "--catalog", mine, "--load", "50000/s", "--data", "1e8")
	if code != 0 || !strings.Contains(stdout, "× rack1") {
		t.Fatalf("own catalog: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if err := os.WriteFile(mine, []byte("name: mine\ncurrency: USD\ndate: 2026-11-01\nmachines:\n  - {name: r, vcpus: 4, ram: 8GiB, hourly: 1, date: 2026-11-01}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code = runCLI(t, "cost", dir, "--catalog", mine, "--load", "1/s", "--data", "1"); code != 2 || !strings.Contains(stderr, "source") {
		t.Errorf("a catalog line without a source: exit %d, %s", code, stderr)
	}
	if _, stderr, code = runCLI(t, "cost", dir, "--load", "1000/s"); code != 2 || !strings.Contains(stderr, "--data") {
		t.Errorf("no --data: exit %d, %s", code, stderr)
	}
	durabilityPair(t, dir)
}

// durabilityPair: two runs of one target under sync and async get the
// price of durability side by side (here the same measures relabelled
// sync, so the price is nought: the plumbing, not a figure).
func durabilityPair(t *testing.T, dir string) {
	t.Helper()
	run := readRun(t, dir)
	run.Durability = "sync"
	syncDir := t.TempDir()
	if err := run.Write(filepath.Join(syncDir, "results.json")); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "cost", syncDir, dir, "--load", "1000/s", "--data", "1e6")
	if code != 0 || !strings.Contains(stdout, "## The price of durability") || !strings.Contains(stdout, "+0 USD a month (×1.00)") {
		t.Errorf("two runs, sync and async: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// A kept durability study run gives pebble's lost writes beside it,
	// as its results.json has them.
	crash := filepath.Join("..", "..", "docs", "runs", "durability-20261128-586e3c5")
	want := lostOnPowerLoss(t, readRun(t, crash), "pebble")
	stdout, stderr, code = runCLI(t, "cost", syncDir, dir, crash, "--load", "1000/s", "--data", "1e6")
	if code != 0 || !strings.Contains(stdout, "acknowledged writes lost on power loss") || !strings.Contains(stdout, want) {
		t.Errorf("with a durability run: exit %d, want %q\n%s\n%s", code, want, stdout, stderr)
	}
}

// lostOnPowerLoss is "SYNC / ASYNC" as the cost command writes a target's
// lost writes, recomputed from the durability run's steps.
func lostOnPowerLoss(t *testing.T, run *results.Run, target string) string {
	t.Helper()
	cls := map[string]string{}
	for _, tg := range run.Targets {
		if tg.Name != target {
			continue
		}
		for _, s := range tg.Steps {
			if s.Phase == "power-loss" {
				m := s.Metrics
				cls[s.Labels["durability"]] = strconv.FormatFloat(m["lost"], 'f', 0, 64) + " of " + strconv.FormatFloat(m["acked"], 'f', 0, 64) +
					" (" + strconv.FormatFloat(m["lost_trials"], 'f', 0, 64) + " crashes lost some)"
			}
		}
	}
	if cls["sync"] == "" || cls["async"] == "" {
		t.Fatalf("%s: no power-loss steps of both classes in the kept durability run", target)
	}
	return cls["sync"] + " / " + cls["async"]
}
