package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/results"
	"storebench/internal/server/servertest"
)

// `storebench run oltp` (the built-in study, made small) on MariaDB,
// PostgreSQL and SQLite: every step runs and verifies, the per-tick counts
// add up to the step's totals, each transaction has sysbench's statement
// counts, and the report's sysbench statistics are the ones recomputed
// from results.json.
func TestOLTPStudyOnMariaDBPostgresSQLite(t *testing.T) {
	uris := []string{servertest.URI(t, "mariadb"), servertest.URI(t, "postgres"), "sqlite"}
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", "oltp", "--out", out, "--durability", "sync", "--targets", strings.Join(uris, ","),
		"--ladder", "3000", "--set", "oltp.duration=2s", "--set", "oltp.tables=2")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)
	if len(run.Targets) != 3 {
		t.Fatalf("%d targets", len(run.Targets))
	}
	for _, tr := range run.Targets {
		if tr.Status != "ok" {
			t.Fatalf("%s: %s %s", tr.Name, tr.Status, tr.Reason)
		}
		phases := map[string]int{}
		for _, s := range tr.Steps {
			if s.Workload != "oltp" {
				continue
			}
			phases[s.Phase]++
			if s.Phase == "prepare" {
				if s.Metrics["rows"] != 3000 || s.Metrics["tables"] != 2 {
					t.Errorf("%s prepare: %v", tr.Name, s.Metrics)
				}
				continue
			}
			m := s.Metrics
			if s.Ops == 0 || s.Error != "" {
				t.Fatalf("%s %s: %d ops, %s", tr.Name, s.Phase, s.Ops, s.Error)
			}
			var ops, reads, writes, other, errs int64
			for _, tk := range s.Series {
				ops += tk.Ops
				reads += tk.Counts["reads"]
				writes += tk.Counts["writes"]
				other += tk.Counts["other"]
				errs += tk.Counts["errors"]
			}
			if ops != s.Ops || float64(reads) != m["reads"] || float64(writes) != m["writes"] || float64(other) != m["other"] || float64(errs) != m["ignored_errors"] {
				t.Errorf("%s %s: per-tick sums ops %d reads %d writes %d other %d errors %d, totals %d %v", tr.Name, s.Phase, ops, reads, writes, other, errs, s.Ops, m)
			}
			// sysbench's statement counts per transaction (oltp_common.lua):
			// read_only 14 reads + BEGIN/COMMIT, write_only 4 writes +
			// BEGIN/COMMIT; a retried transaction's statements count too.
			wantR, wantW := int64(14), int64(0)
			if s.Phase == "write_only" {
				wantR, wantW = 0, 4
				if s.Verify.Checked != 0 {
					t.Errorf("%s write_only verified %d reads", tr.Name, s.Verify.Checked)
				}
			} else if s.Verify.Checked != 14*s.Ops {
				t.Errorf("%s read_only: %d checked, want %d", tr.Name, s.Verify.Checked, 14*s.Ops)
			}
			if m["ignored_errors"] == 0 && (reads != wantR*s.Ops || writes != wantW*s.Ops || other != 2*s.Ops) {
				t.Errorf("%s %s: r/w/o %d/%d/%d for %d transactions", tr.Name, s.Phase, reads, writes, other, s.Ops)
			}
			if reads < wantR*s.Ops || writes < wantW*s.Ops || other < 2*s.Ops {
				t.Errorf("%s %s: r/w/o %d/%d/%d for %d transactions", tr.Name, s.Phase, reads, writes, other, s.Ops)
			}
			q := reads + writes + other
			for _, line := range []string{
				fmt.Sprintf("    transactions:                        %-6d (%.2f per sec.)\n", s.Ops, float64(s.Ops)/s.Seconds),
				fmt.Sprintf("    queries:                             %-6d (%.2f per sec.)\n", q, float64(q)/s.Seconds),
				fmt.Sprintf("    total number of events:              %d\n", s.Ops),
				fmt.Sprintf("         min:                            %8.2f\n", float64(s.Latency.Min)/1e6),
			} {
				if !strings.Contains(report, line) {
					t.Errorf("%s %s: report lacks %q", tr.Name, s.Phase, line)
				}
			}
			if !strings.Contains(report, fmt.Sprintf("] thds: %.0f tps: ", m["threads"])) {
				t.Errorf("%s %s: no interval line for %.0f threads", tr.Name, s.Phase, m["threads"])
			}
		}
		// The base step at 8 threads and the sweep's 64, read_only first.
		if phases["prepare"] != 1 || phases["read_only"] != 2 || phases["write_only"] != 2 {
			t.Errorf("%s: steps %v", tr.Name, phases)
		}
	}
}
