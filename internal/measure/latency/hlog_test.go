package latency

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The reference HdrHistogram readers, installed by
// scripts/install-hdr-readers.sh (make install-hdr-readers; scripts/test.sh
// runs it): HdrHistogram_py in a venv, HdrHistogram's Java jar.
const installReaders = "scripts/install-hdr-readers.sh"

func hdrPython(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("STOREBENCH_HDR_VENV")
	if venv == "" {
		home, _ := os.UserHomeDir()
		venv = filepath.Join(home, ".cache", "storebench", "hdr-venv")
	}
	py := filepath.Join(venv, "bin", "python")
	if out, err := exec.Command(py, "-c", "import hdrh.log").CombinedOutput(); err != nil {
		t.Fatalf("the reference HdrHistogram reader (PyPI hdrhistogram) is missing in %s: %v %s\ninstall it with: %s", venv, err, out, installReaders)
	}
	return py
}

func hdrJar(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	jar := filepath.Join(home, ".m2", "repository", "org", "hdrhistogram", "HdrHistogram", "2.2.2", "HdrHistogram-2.2.2.jar")
	_, errJar := os.Stat(jar)
	_, errJava := exec.LookPath("java")
	if errJar != nil || errJava != nil {
		t.Fatalf("the reference HdrHistogram reader (Maven org.hdrhistogram:HdrHistogram:2.2.2 and java) is missing: %v %v\ninstall it with: %s", errJar, errJava, installReaders)
	}
	return jar
}

// pyTotals is HdrHistogram_py's HistogramLogReader's total count per tag
// ("" untagged) of a log, and the number of intervals it read.
const pyTotals = `
import json, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
r = HistogramLogReader(sys.argv[1], HdrHistogram(1, 100 * 10**9, 3))
totals, n = {}, 0
while True:
    h = r.get_next_interval_histogram()
    if h is None:
        break
    n += 1
    tag = h.get_tag() or ""
    totals[tag] = totals.get(tag, 0) + h.get_total_count()
print(json.dumps({"totals": totals, "intervals": n}))
`

var javaTotal = regexp.MustCompile(`Total count\s*=\s*(\d+)`)

// javaTotalCount is HistogramLogProcessor's total count of a log's
// intervals of tag ("" untagged).
func javaTotalCount(t *testing.T, jar, log, tag string) int64 {
	t.Helper()
	args := []string{"-cp", jar, "org.HdrHistogram.HistogramLogProcessor", "-i", log}
	if tag != "" {
		args = append(args, "-tag", tag)
	}
	out, err := exec.Command("java", args...).CombinedOutput()
	m := javaTotal.FindAllSubmatch(out, -1)
	if err != nil || len(m) == 0 {
		t.Fatalf("HistogramLogProcessor cannot read %s (tag %q): %v\n%.2000s", log, tag, err, out)
	}
	n, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
	return n
}

// Issue 35: a log of a target on a machine shape names the shape in its
// header, and the reference readers still read every interval of it:
// HdrHistogram_py's HistogramLogReader and HdrHistogram's Java
// HistogramLogProcessor count the untagged and the intended intervals'
// values in full; LogMachine reads the shape back, and a log without one
// has none.
func TestMachineHeaderReadByReferenceReaders(t *testing.T) {
	py, jar := hdrPython(t), hdrJar(t)
	enc, n := sample(t)
	const shape = "name=seed001-xl,cpus=0.5,memory=256MiB,disk_iops=3000"
	var ivs []LogInterval
	for i := range 3 {
		at := time.Duration(i) * time.Second
		ivs = append(ivs, LogInterval{Start: at, Length: time.Second, MaxNs: 1_000_000, Hist: enc},
			LogInterval{Tag: "intended", Start: at, Length: time.Second, MaxNs: 1_000_000, Hist: enc})
	}
	log := filepath.Join(t.TempDir(), "ycsb-a-n2000.hlog")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	comments := []string{"storebench ycsb a on rocksdb@seed001-xl, N=2000; values in nanoseconds", MachineComment(shape)}
	if err := WriteLog(f, comments, time.UnixMilli(1700000000123), ivs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(log)
	if !strings.Contains(string(text), "#[Machine: "+shape+"]\n") {
		t.Fatalf("no machine comment in the header:\n%.600s", text)
	}

	out, err := exec.Command(py, "-c", pyTotals, log).CombinedOutput()
	if err != nil {
		t.Fatalf("HdrHistogram_py cannot read the log: %v\n%s", err, out)
	}
	var got struct {
		Totals    map[string]int64
		Intervals int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Intervals != len(ivs) || got.Totals[""] != 3*n || got.Totals["intended"] != 3*n || len(got.Totals) != 2 {
		t.Errorf("HdrHistogram_py reads %d intervals, totals %v; want %d intervals, %d untagged and %d intended", got.Intervals, got.Totals, len(ivs), 3*n, 3*n)
	}
	for _, tag := range []string{"", "intended"} {
		if c := javaTotalCount(t, jar, log, tag); c != 3*n {
			t.Errorf("HistogramLogProcessor counts %d values tagged %q, want %d", c, tag, 3*n)
		}
	}

	f, err = os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m, err := LogMachine(f); err != nil || m != shape {
		t.Errorf("LogMachine: %q %v, want %q", m, err, shape)
	}
	var plain strings.Builder
	if err := WriteLog(&plain, comments[:1], time.UnixMilli(1700000000123), ivs); err != nil {
		t.Fatal(err)
	}
	if m, err := LogMachine(strings.NewReader(plain.String())); err != nil || m != "" {
		t.Errorf("LogMachine of a log on no shape: %q %v, want none", m, err)
	}
}
