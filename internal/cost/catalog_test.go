package cost

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func builtin(t *testing.T) map[string]Catalog {
	t.Helper()
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Catalog{}
	for _, c := range all {
		byName[c.Name] = c
	}
	return byName
}

// TestBuiltinCatalogs: every catalogs/*.yaml loads and validates, and
// every line says where and when its figures were read.
func TestBuiltinCatalogs(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "aws owned scaleway" {
		t.Fatalf("built-in catalogs %q, want %q (sorted by name)", got, "aws owned scaleway")
	}
	earliest := time.Date(2013, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range all {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if c.File != "catalogs/"+c.Name+".yaml" {
			t.Errorf("%s: File %q", c.Name, c.File)
		}
		for _, m := range c.Machines {
			if !strings.HasPrefix(m.Source, "https://") {
				t.Errorf("%s %s: source %q is not https", c.Name, m.Name, m.Source)
			}
			d, err := time.Parse(time.DateOnly, m.Date)
			if err != nil || d.After(time.Now()) || d.Before(earliest) {
				t.Errorf("%s %s: date %q: want YYYY-MM-DD from 2013 to today", c.Name, m.Name, m.Date)
			}
			if !(m.Hourly > 0) || math.Abs(m.Monthly()-m.Hourly*HoursPerMonth) > 1e-9 {
				t.Errorf("%s %s: hourly %v, monthly %v", c.Name, m.Name, m.Hourly, m.Monthly())
			}
		}
	}
}

// TestSeedMachines: the machines the seeds ran on are in the catalogs,
// with the seeds' vCPUs and memory.
func TestSeedMachines(t *testing.T) {
	cats := builtin(t)
	for _, w := range []struct {
		catalog, machine string
		vcpus            float64
		ram              int64
	}{
		{"aws", "i3en.xlarge", 4, 32 << 30},
		{"aws", "i3en.3xlarge", 12, 96 << 30},
		{"aws", "r3.2xlarge", 8, 61 << 30},
		{"scaleway", "GP1-XS", 4, 16 << 30},
		{"scaleway", "GP1-S", 8, 32 << 30},
		{"scaleway", "GP1-M", 16, 64 << 30},
		{"scaleway", "GP1-L", 32, 128 << 30},
		{"scaleway", "GP1-XL", 48, 256 << 30},
		{"scaleway", "Start-2-S-SATA", 2, 4 << 30},
		{"scaleway", "GP-BM1-S", 8, 32 << 30},
		{"scaleway", "HC-BM1-S", 40, 0},
	} {
		m, ok := cats[w.catalog].Find(w.machine)
		if !ok {
			t.Errorf("%s: no %s", w.catalog, w.machine)
			continue
		}
		if m.VCPUs != w.vcpus || (w.ram != 0 && m.RAMBytes != w.ram) {
			t.Errorf("%s %s: %v vCPUs, %d bytes of RAM; want %v, %d", w.catalog, w.machine, m.VCPUs, m.RAMBytes, w.vcpus, w.ram)
		}
	}
	nuc := false
	for _, m := range cats["owned"].Machines {
		if strings.Contains(m.Name, "NUC7i3") {
			nuc = true
			if m.VCPUs != 4 || m.RAMBytes != 32<<30 || m.DiskBytes != 2e12 {
				t.Errorf("owned %s: %v vCPUs, %d RAM, %d disk; want seed 000's 4, 32 GiB, 2 TB", m.Name, m.VCPUs, m.RAMBytes, m.DiskBytes)
			}
		}
	}
	if !nuc {
		t.Error("owned: no NUC7i3 (seed 000)")
	}
}

// TestDerivedHourly: owned hardware costs its purchase written off over
// its life, a monthly listing costs monthly/730 an hour.
func TestDerivedHourly(t *testing.T) {
	cats := builtin(t)
	owned := 0
	for _, m := range cats["owned"].Machines {
		if m.Purchase > 0 {
			owned++
			if m.LifeMonths != 36 || math.Abs(m.Hourly-m.Purchase/(36*730)) > 1e-12 {
				t.Errorf("owned %s: hourly %v over %d months, want purchase %v / (36*730)", m.Name, m.Hourly, m.LifeMonths, m.Purchase)
			}
		}
	}
	if owned == 0 {
		t.Error("owned: no line with a purchase price")
	}
	if m, _ := cats["scaleway"].Find("GP1-M"); math.Abs(m.Monthly()-146.01) > 1e-9 {
		t.Errorf("GP1-M: monthly %v, want 146.01 as listed", m.Monthly())
	}
	if got := (Machine{Purchase: 730 * 36, LifeMonths: 36}).Monthly(); math.Abs(got-730) > 1e-9 {
		t.Errorf("a 26,280 purchase over 36 months: monthly %v, want 730", got)
	}
}

func TestLoad(t *testing.T) {
	c, err := Load("aws")
	if err != nil || c.Name != "aws" || c.Currency != "USD" {
		t.Fatalf("Load(aws) = %s %s, %v", c.Name, c.Currency, err)
	}
	if _, err := Load("azure"); err == nil || !strings.Contains(err.Error(), "aws, owned, scaleway") {
		t.Errorf("Load(azure): %v; want an error listing the built-in catalogs", err)
	}
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = Load(path)
	if err != nil || c.Name != "mine" || c.File != path || len(c.Machines) != 2 {
		t.Fatalf("Load(%s) = %+v, %v", path, c, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}

// good is a valid user catalog; the cases below break it one way each.
const good = `currency: USD
machines:
  - name: small
    vcpus: 2
    ram: 8GiB
    disk: 0
    disk_kind: ebs
    hourly: 0.1
    source: https://example.com/prices
    date: 2024-05-01
  - name: big
    vcpus: 8
    ram: 32GiB
    disk: 1TB
    disk_kind: nvme
    monthly: 292
    source: https://example.com/prices
    date: 2024-05-01
`

func TestParseGood(t *testing.T) {
	c, err := Parse("mine.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	big, _ := c.Find("big")
	if big.DiskBytes != 1e12 || big.RAMBytes != 32<<30 || math.Abs(big.Hourly-0.4) > 1e-12 {
		t.Errorf("big: %+v", big)
	}
}

// TestValidateRefuses: each broken line is refused, the error naming the
// file, the machine and the field.
func TestValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"no source", "    source: https://example.com/prices\n    date: 2024-05-01\n  - name: big", "    date: 2024-05-01\n  - name: big", []string{`"small"`, "source"}},
		{"http source", "source: https://example.com/prices\n    date: 2024-05-01\n  - name: big", "source: http://example.com/prices\n    date: 2024-05-01\n  - name: big", []string{`"small"`, "source", "https"}},
		{"bad date", "date: 2024-05-01\n  - name: big", "date: 1 May 2024\n  - name: big", []string{`"small"`, "date", "YYYY-MM-DD"}},
		{"future date", "date: 2024-05-01\n  - name: big", "date: 2999-05-01\n  - name: big", []string{`"small"`, "date", "future"}},
		{"zero price", "hourly: 0.1", "hourly: 0", []string{`"small"`, "hourly"}},
		{"two prices", "hourly: 0.1", "hourly: 0.1\n    monthly: 73", []string{`"small"`, "one price"}},
		{"purchase without life", "hourly: 0.1", "purchase: 600", []string{`"small"`, "life_months"}},
		{"zero vcpus", "vcpus: 2", "vcpus: 0", []string{`"small"`, "vcpus"}},
		{"no ram", "    ram: 8GiB\n", "", []string{`"small"`, "ram"}},
		{"bad size", "ram: 8GiB", "ram: eight", []string{`"small"`, "ram", "size"}},
		{"duplicate", "name: big", "name: small", []string{`"small"`, "twice"}},
		{"unknown field", "disk_kind: ebs", "disk_kind: ebs\n    colour: red", []string{"mine.yaml", "colour"}},
		{"unknown top field", "currency: USD", "currency: USD\nvendor: x", []string{"mine.yaml", "vendor"}},
		{"bad currency", "currency: USD", "currency: usd", []string{"mine.yaml", "currency"}},
		{"no currency", "currency: USD\n", "", []string{"mine.yaml", "currency"}},
		{"bad disk kind", "disk_kind: ebs", "disk_kind: floppy", []string{`"small"`, "disk_kind"}},
	} {
		broken := strings.Replace(good, tc.from, tc.to, 1)
		if broken == good {
			t.Fatalf("%s: the case does not change the catalog", tc.name)
		}
		_, err := Parse("mine.yaml", []byte(broken))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range append(tc.want, "mine.yaml") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}

func TestMerge(t *testing.T) {
	base := Catalog{Name: "base", Currency: "USD", File: "base.yaml", Machines: []Machine{
		line("a", 0.1), line("b", 0.2)}}
	extra := Catalog{Name: "extra", Currency: "USD", File: "extra.yaml", Machines: []Machine{
		line("b", 0.25), line("c", 0.3)}}
	got, err := Merge(base, extra)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got.Machines {
		names = append(names, m.Name)
	}
	if strings.Join(names, " ") != "a b c" {
		t.Errorf("merged %v, want a b c", names)
	}
	if b, _ := got.Find("b"); b.Hourly != 0.25 {
		t.Errorf("b: hourly %v, want extra's 0.25", b.Hourly)
	}
	if b, _ := base.Find("b"); b.Hourly != 0.2 {
		t.Errorf("Merge changed base: b hourly %v", b.Hourly)
	}
	if got.Currency != "USD" || got.Name != "base" {
		t.Errorf("merged %s in %s", got.Name, got.Currency)
	}
	extra.Currency = "EUR"
	if _, err := Merge(base, extra); err == nil || !strings.Contains(err.Error(), "EUR") {
		t.Errorf("USD merged with EUR: %v; want an error", err)
	}
}

func line(name string, hourly float64) Machine {
	return Machine{Name: name, VCPUs: 2, RAMBytes: 8 << 30, Hourly: hourly, Source: "https://example.com/", Date: "2024-01-01"}
}
