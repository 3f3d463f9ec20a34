//go:build linux

package machine

import (
	"strings"
	"testing"

	"storebench/internal/measure/procstat"
)

// testHost is a machine of 4 CPUs (0-3 online) and 16 GiB, so that the
// parsing tests do not depend on the machine they run on.
var testHost = host{CPUs: 4, Online: []int{0, 1, 2, 3}, Memory: 16 << 30}

func TestParseAndRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  Shape
		label string
	}{
		{"cpus=1.5,memory=2GiB,disk_iops=3000,disk_mbps=125",
			Shape{CPUs: 1.5, Memory: 2 << 30, DiskIOPS: 3000, DiskMBps: 125},
			"cpus=1.5,memory=2GiB,disk_iops=3000,disk_mbps=125"},
		{"cpus=0.5,memory=256MiB", Shape{CPUs: 0.5, Memory: 256 << 20}, "cpus=0.5,memory=256MiB"},
		{"memory=256MiB, cpus=0.5", Shape{CPUs: 0.5, Memory: 256 << 20}, "cpus=0.5,memory=256MiB"},
		{"memory=2G", Shape{Memory: 2 << 30}, "memory=2GiB"},
		{"name=i3en.xlarge-scaled,cache=0.228,cpus=1", Shape{Name: "i3en.xlarge-scaled", CPUs: 1, Cache: 0.228}, "cpus=1,cache=0.228"},
		{"name=seed000-node-scaled,cache=80MiB", Shape{Name: "seed000-node-scaled", CacheBytes: 80 << 20}, "cache=80MiB"},
		{"name=nuc-scaled,cache=8GB,at_n=1e8", Shape{Name: "nuc-scaled", CacheBytes: 8e9, AtN: 1e8}, "cache=8GB,at_n=100000000"},
		{"cache=96GB,at_n=1e8", Shape{CacheBytes: 96e9, AtN: 1e8}, "cache=96GB,at_n=100000000"},
		{"memory=1.5GiB", Shape{Memory: 3 << 29}, "memory=1536MiB"},
		{"memory=8GB", Shape{Memory: 8e9}, "memory=8GB"},
		{"memory=33554432", Shape{Memory: 32 << 20}, "memory=32MiB"},
		{"memory=64mib", Shape{Memory: 64 << 20}, "memory=64MiB"},
		{"memory=100000000", Shape{Memory: 1e8}, "memory=100MB"},
		{"cpus=1,cpuset=3,2", Shape{}, ""}, // "2" is not key=value: an error, see below
		{"name=seed000-node,cpus=2,memory=8GiB", Shape{Name: "seed000-node", CPUs: 2, Memory: 8 << 30}, "cpus=2,memory=8GiB"},
		{"cpus=1,cpuset=1-2", Shape{CPUs: 1, CPUSet: "1-2"}, "cpus=1,cpuset=1-2"},
		{"cpuset=3,cpus=2", Shape{}, ""}, // more CPUs than the cpuset: an error
		{"cpuset=2-3", Shape{CPUSet: "2-3"}, "cpuset=2-3"},
		{"disk_mbps=0.5", Shape{DiskMBps: 0.5}, "disk_mbps=0.5"},
		{"cpus=4", Shape{CPUs: 4}, "cpus=4"},
	} {
		got, err := parse(c.in, testHost)
		if c.label == "" {
			if err == nil {
				t.Errorf("parse(%q) = %+v, want an error", c.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("parse(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if got.Label() != c.label {
			t.Errorf("parse(%q).Label() = %q, want %q", c.in, got.Label(), c.label)
		}
		again, err := parse(got.String(), testHost)
		if err != nil || again != got {
			t.Errorf("parse(%q) = %+v, %v: String() %q does not round-trip", got.String(), again, err, c.in)
		}
	}
	if got := (Shape{}).Label(); got != "unlimited" {
		t.Errorf("Shape{}.Label() = %q", got)
	}
	if got := (Shape{Name: "n1", CPUs: 1}).String(); got != "name=n1,cpus=1" {
		t.Errorf("String() = %q", got)
	}
	if got := (Shape{CPUs: 0.5}).CFSQuotaMicros(); got != 50000 {
		t.Errorf("CFSQuotaMicros = %d, want 50000", got)
	}
	if got := (Shape{DiskMBps: 10}).DiskBytesPerSecond(); got != 10_000_000 {
		t.Errorf("DiskBytesPerSecond = %d", got)
	}
}

// TestParseRejects is issue 35's (e): every bad shape is an error of one
// line naming what is wrong.
// TestScaledBudget: a budget given at a seed's size is scaled to the
// largest size a run reaches, and checked against this machine then.
func TestScaledBudget(t *testing.T) {
	sh, err := Parse("name=nuc-scaled,cache=8GB,at_n=1e8")
	if err != nil {
		t.Fatal(err)
	}
	got, err := sh.Scaled(1e6)
	if err != nil || got.CacheBytes != 80e6 || got.AtN != 0 || got.Name != "nuc-scaled" {
		t.Fatalf("Scaled(1e6) = %+v, %v: want cache=80MB", got, err)
	}
	if got, err := sh.Scaled(300); err != nil || got.CacheBytes != 1<<20 {
		t.Errorf("a budget scaled below 1MiB: %+v, %v: want 1MiB", got, err)
	}
	if _, err := sh.Scaled(1e12); err == nil || !strings.Contains(err.Error(), "more than this machine's") {
		t.Errorf("a budget scaled past this machine's memory: %v", err)
	}
	plain, _ := Parse("cache=80MiB")
	if got, err := plain.Scaled(1e6); err != nil || got != plain {
		t.Errorf("a shape without at_n scaled: %+v, %v", got, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"cpu=1", `unknown key "cpu"`},
		{"cpus=1,ram=1GiB", `unknown key "ram"`},
		{"cpus", "is not key=value"},
		{"=1", "is not key=value"},
		{"cpus=", "cpus has no value"},
		{"cpus=abc", `cpus: "abc" is not a number`},
		{"cpus=NaN", `is not a number`},
		{"cpus=Inf", `is not a number`},
		{"cpus=0x1p-1", `is not a number`},
		{"cpus=0", "cpus=0: want more than 0"},
		{"cpus=-1", "cpus=-1: want more than 0"},
		{"cpus=0.001", "below 0.01"},
		{"cpus=4.5", "more than this machine's 4 CPUs"},
		{"cpus=1,cpus=2", "cpus is given twice"},
		{"memory=1GiB,memory=2GiB", "memory is given twice"},
		{"cache=0", "cache=0: want more than 0"},
		{"cache=101", "at most 100"},
		{"cache=0.5,memory=1GiB", "give one"},
		{"cache=80MiB,memory=1GiB", "give one"},
		{"cache=512KiB", "below 1MiB"},
		{"at_n=1e8", "goes with cache=SIZE"},
		{"cache=0.5,at_n=1e8", "goes with cache=SIZE"},
		{"cache=8GB,at_n=0.5", "want a data size of 1 or more"},
		{"cache=lots", "is not a size"},
		{"memory=16MiB", "memory=16MiB is below the smallest limit, 32MiB"},
		{"memory=0", "below the smallest limit"},
		{"memory=-1GiB", "is not a size"},
		{"memory=lots", "is not a size"},
		{"memory=1e9", "is not a size"},
		{"memory=2XB", "is not a size"},
		{"memory=0.3KiB", "not a whole number of bytes"},
		{"memory=17GiB", "more than this machine's 16GiB"},
		{"memory=99999999999TiB", "too large"},
		{"disk_iops=3e3", `disk_iops: "3e3" is not a whole number`},
		{"disk_iops=0", "disk_iops=0: want 1.."},
		{"disk_iops=-5", "want 1.."},
		{"disk_mbps=fast", "is not a number"},
		{"disk_mbps=0", "disk_mbps=0: want 0.1.."},
		{"disk_mbps=0.05", "want 0.1.."},
		{"cpuset=5", "CPU 5 is not one of this machine's online CPUs (0-3)"},
		{"cpuset=2-1", "is not a CPU list"},
		{"cpuset=a", "is not a CPU list"},
		{"cpus=2,cpuset=3", "more than the 1 CPU(s) of cpuset=3"},
		{"name=seed node,cpus=1", "name"},
		{"name=x/y,cpus=1", "name"},
		{"name=only", "no limit"},
	} {
		_, err := parse(c.in, testHost)
		if err == nil {
			t.Errorf("parse(%q) succeeded, want an error with %q", c.in, c.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) {
			t.Errorf("parse(%q) = %q, want it to say %q", c.in, msg, c.want)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("parse(%q): the error is more than one line: %q", c.in, msg)
		}
		if !strings.HasPrefix(msg, "machine shape ") {
			t.Errorf("parse(%q) = %q: want it to name the shape", c.in, msg)
		}
	}
}

// TestParseAgainstThisMachine checks Parse's bounds come from this
// machine: its CPU count is accepted, one more is not.
func TestParseAgainstThisMachine(t *testing.T) {
	h := thisHost()
	if h.CPUs < 1 || h.Memory <= 0 || len(h.Online) == 0 {
		t.Fatalf("this machine: %+v: cannot read its CPUs and memory", h)
	}
	if _, err := Parse(FormatSize(MinMemory)); err == nil {
		t.Errorf("Parse of a bare size succeeded")
	}
	if _, err := Parse("cpus=" + fmtFloat(float64(h.CPUs))); err != nil {
		t.Errorf("cpus=%d (this machine's): %v", h.CPUs, err)
	}
	if _, err := Parse("cpus=" + fmtFloat(float64(h.CPUs)+0.5)); err == nil {
		t.Errorf("cpus=%d.5 accepted on a machine of %d CPUs", h.CPUs, h.CPUs)
	}
	if err := (Shape{Memory: 1 << 20}).Validate(); err == nil {
		t.Errorf("Validate accepted 1 MiB of memory")
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "1K": 1024, "1KiB": 1024, "1KB": 1000, "1kb": 1000, "1.5K": 1536,
		"3M": 3 << 20, "2g": 2 << 30, "1T": 1 << 40, "1TB": 1e12, "512B": 512, "0.5GiB": 512 << 20,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for n, want := range map[int64]string{
		1 << 30: "1GiB", 1536 << 20: "1536MiB", 8e9: "8GB", 1000: "1KB", 1001: "1001", 64 << 20: "64MiB", 1 << 40: "1TiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestCPUList(t *testing.T) {
	cpus, err := procstat.ParseCPUList("3,0-1,1")
	if err != nil || procstat.FormatCPUList(cpus) != "0-1,3" {
		t.Errorf("parseCPUList(3,0-1,1) = %v, %v", cpus, err)
	}
}
