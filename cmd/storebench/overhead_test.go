package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOverheadAtConcurrency: storebench overhead --concurrency runs the
// bare loop and the runner at each number of goroutines and prints every
// round and the median ratio per number.
func TestOverheadAtConcurrency(t *testing.T) {
	out, stderr, code := runCLI(t, "overhead", "--concurrency", "1,2,4", "--keys", "2000", "--gets", "20000", "--rounds", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	round := regexp.MustCompile(`(?m)^(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$`)
	rows := map[string]int{}
	for _, m := range round.FindAllStringSubmatch(out, -1) {
		rows[m[1]]++
		for _, f := range m[3:] {
			if v, err := strconv.ParseFloat(f, 64); err != nil || v <= 0 {
				t.Errorf("round %q: figure %q", m[0], f)
			}
		}
	}
	median := regexp.MustCompile(`(?m)^goroutines (\d+): median runner/bare = ([\d.]+) \(target <= 1.03\); CPU time ([\d.]+)`)
	meds := median.FindAllStringSubmatch(out, -1)
	if len(meds) != 3 {
		t.Fatalf("want a median for 1, 2 and 4 goroutines:\n%s", out)
	}
	for i, n := range []string{"1", "2", "4"} {
		if rows[n] != 3 || meds[i][1] != n {
			t.Errorf("goroutines %s: %d rounds, median line %q\n%s", n, rows[n], meds[i][0], out)
		}
		if v, _ := strconv.ParseFloat(meds[i][2], 64); v <= 0 {
			t.Errorf("median %q", meds[i][0])
		}
	}
	_, stderr, code = runCLI(t, "overhead", "--concurrency", "1,0")
	if code != 2 || !strings.Contains(stderr, "--concurrency") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("--concurrency 1,0: exit %d, %q", code, stderr)
	}
}

// TestOverheadYCSBC: storebench overhead --workload ycsb-c loads a YCSB
// table and prints, per round and as a median, what YCSB C adds per read
// over a bare loop reading the same records.
func TestOverheadYCSBC(t *testing.T) {
	out, stderr, code := runCLI(t, "overhead", "--workload", "ycsb-c", "--concurrency", "1,2", "--keys", "500", "--gets", "3000", "--rounds", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	median := regexp.MustCompile(`(?m)^goroutines (\d+): YCSB C adds a median (-?[\d.]+) ns per read over the bare loop \(wall\); CPU (-?[\d.]+) ns$`)
	if m := median.FindAllStringSubmatch(out, -1); len(m) != 2 || m[0][1] != "1" || m[1][1] != "2" {
		t.Fatalf("want a median line for 1 and 2 goroutines:\n%s", out)
	}
	_, stderr, code = runCLI(t, "overhead", "--workload", "ycsb-x")
	if code != 2 || !strings.Contains(stderr, "--workload") {
		t.Errorf("--workload ycsb-x: exit %d, %q", code, stderr)
	}
}
