package cost

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"storebench/catalogs"
	"storebench/internal/study"
)

// HoursPerMonth is the month a bill is counted in: 730 hours, a year's
// 8,760 over 12, as the clouds count it.
const HoursPerMonth = 730

// Machine is one machine type of a catalog: what it has and what an hour
// of it costs.
type Machine struct {
	Name        string  // "i3en.xlarge"
	VCPUs       float64 // hardware threads where the provider sells cores
	RAMBytes    int64
	DiskBytes   int64   // local disk; 0: network storage only
	DiskKind    string  // "nvme", "ssd", "sata", "hdd", "ebs"
	DiskIOPS    float64 // random-read IOPS; 0: not published
	DiskMBps    float64 // 0: not published
	NetworkGbps float64 // 0: not published
	Hourly      float64 // price per hour in the catalog's currency (owned: purchase / (life_months*730))
	Purchase    float64 // owned hardware: price paid; 0 otherwise
	LifeMonths  int     // owned hardware: months it is written off over
	Source      string  // https URL the line was transcribed from
	Date        string  // YYYY-MM-DD: when the line's figures were read
	Note        string
}

// Catalog is a set of machine types one provider prices in one currency:
// a built-in catalogs/NAME.yaml or a user's own file.
type Catalog struct {
	Name, Title, Provider, Region, Currency, Prices, Date, Source string
	File                                                          string // "catalogs/aws.yaml" (built in) or the user's path
	Machines                                                      []Machine
}

// Monthly is what the machine costs kept up a whole month.
func (m Machine) Monthly() float64 { return m.hourly() * HoursPerMonth }

// hourly is Hourly, or for owned hardware whose Hourly was never set,
// the purchase written off over its life.
func (m Machine) hourly() float64 {
	if m.Hourly == 0 && m.Purchase > 0 && m.LifeMonths > 0 {
		return m.Purchase / float64(m.LifeMonths*HoursPerMonth)
	}
	return m.Hourly
}

// Find returns the machine type of that name.
func (c Catalog) Find(name string) (Machine, bool) {
	for _, m := range c.Machines {
		if m.Name == name {
			return m, true
		}
	}
	return Machine{}, false
}

// catalogFile is a catalog as its YAML file writes it.
type catalogFile struct {
	Name     string        `yaml:"name"`
	Title    string        `yaml:"title"`
	Provider string        `yaml:"provider"`
	Region   string        `yaml:"region"`
	Currency string        `yaml:"currency"`
	Prices   string        `yaml:"prices"`
	Date     string        `yaml:"date"`
	Source   string        `yaml:"source"`
	Machines []machineLine `yaml:"machines"`
}

// machineLine is one machine as a catalog file writes it. Its price is
// one of hourly, monthly (as a provider lists it: hourly = monthly/730)
// or purchase with life_months (owned: hourly = purchase/(life_months*730)).
type machineLine struct {
	Name        string  `yaml:"name"`
	VCPUs       float64 `yaml:"vcpus"`
	RAM         any     `yaml:"ram"`  // a size: 32GiB
	Disk        any     `yaml:"disk"` // a size: 2500GB, 0
	DiskKind    string  `yaml:"disk_kind"`
	DiskIOPS    float64 `yaml:"disk_iops"`
	DiskMBps    float64 `yaml:"disk_mbps"`
	NetworkGbps float64 `yaml:"network_gbps"`
	Hourly      float64 `yaml:"hourly"`
	Monthly     float64 `yaml:"monthly"`
	Purchase    float64 `yaml:"purchase"`
	LifeMonths  int     `yaml:"life_months"`
	Source      string  `yaml:"source"`
	Date        string  `yaml:"date"`
	Note        string  `yaml:"note"`
}

// bytesOf reads a size as study.ParseBytes does (32GiB, 2500GB, 0); a
// size left out is 0.
func bytesOf(field string, v any) (int64, error) {
	switch v.(type) {
	case nil:
		return 0, nil
	case string, int, int64, uint64, float64:
		b, err := study.ParseBytes(fmt.Sprint(v))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		return int64(b), nil
	}
	return 0, fmt.Errorf("%s: want a size (e.g. 32GiB, 2500GB), got %v", field, v)
}

// Parse decodes a catalog file and validates it. file names it in errors
// and becomes the catalog's File; a field the format does not have is an
// error, so that a misspelt one is not silently dropped.
func Parse(file string, data []byte) (Catalog, error) {
	var f catalogFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return Catalog{}, fmt.Errorf("%s: %s", file, yaml.FormatError(err, false, false))
	}
	c := Catalog{Name: f.Name, Title: f.Title, Provider: f.Provider, Region: f.Region,
		Currency: f.Currency, Prices: f.Prices, Date: f.Date, Source: f.Source, File: file}
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	var errs []error
	for _, l := range f.Machines {
		m, err := l.machine()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: machine %q: %w", file, l.Name, err))
		}
		c.Machines = append(c.Machines, m)
	}
	if err := errors.Join(errs...); err != nil {
		return Catalog{}, err
	}
	if err := c.Validate(); err != nil {
		return Catalog{}, err
	}
	return c, nil
}

// machine turns a line into a Machine, deriving Hourly from the one
// price the line gives.
func (l machineLine) machine() (Machine, error) {
	m := Machine{Name: l.Name, VCPUs: l.VCPUs, DiskKind: l.DiskKind, DiskIOPS: l.DiskIOPS,
		DiskMBps: l.DiskMBps, NetworkGbps: l.NetworkGbps, Hourly: l.Hourly, Purchase: l.Purchase, LifeMonths: l.LifeMonths,
		Source: l.Source, Date: l.Date, Note: l.Note}
	var errR, errD error
	m.RAMBytes, errR = bytesOf("ram", l.RAM)
	m.DiskBytes, errD = bytesOf("disk", l.Disk)
	if err := errors.Join(errR, errD); err != nil {
		return m, err
	}
	given := 0
	for _, p := range []float64{l.Hourly, l.Monthly, l.Purchase} {
		if p != 0 {
			given++
		}
	}
	if given > 1 {
		return m, errors.New("give one price: hourly, monthly (hourly = monthly/730) or purchase with life_months")
	}
	switch {
	case l.Monthly != 0:
		m.Hourly = l.Monthly / HoursPerMonth
	case l.Purchase != 0 && l.LifeMonths > 0:
		m.Hourly = l.Purchase / float64(l.LifeMonths*HoursPerMonth)
	}
	return m, nil
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// diskKinds are the kinds of disk a machine line may name.
var diskKinds = map[string]bool{"": true, "nvme": true, "ssd": true, "sata": true, "hdd": true, "ebs": true}

// Validate says everything wrong with the catalog, each error naming its
// file, machine and field.
func (c Catalog) Validate() error {
	where := c.File
	if where == "" {
		where = "catalog " + c.Name
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(where+": "+format, a...)) }
	if !currencyCode.MatchString(c.Currency) {
		add("currency %q: want an ISO 4217 code, 3 upper-case letters (USD, EUR)", c.Currency)
	}
	if c.Date != "" {
		if p := badDate(c.Date); p != "" {
			add("date %q: %s", c.Date, p)
		}
	}
	if c.Source != "" {
		if p := badSource(c.Source); p != "" {
			add("source %q: %s", c.Source, p)
		}
	}
	if len(c.Machines) == 0 {
		add("no machines: a catalog lists at least one under machines:")
	}
	seen := map[string]bool{}
	for _, m := range c.Machines {
		if m.Name != "" && seen[m.Name] {
			add("machine %q: listed twice: names are unique within a catalog", m.Name)
		}
		seen[m.Name] = true
		for _, p := range m.problems() {
			add("machine %q: %s", m.Name, p)
		}
	}
	return errors.Join(errs...)
}

// problems says what is wrong with one machine line, field by field.
func (m Machine) problems() []string {
	var ps []string
	bad := func(format string, a ...any) { ps = append(ps, fmt.Sprintf(format, a...)) }
	if m.Name == "" {
		bad("name: every machine has one")
	}
	if !(m.VCPUs > 0) || math.IsInf(m.VCPUs, 0) {
		bad("vcpus %v: want more than 0", m.VCPUs)
	}
	if m.RAMBytes <= 0 {
		bad("ram %d bytes: want more than 0 (e.g. 32GiB)", m.RAMBytes)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"disk", float64(m.DiskBytes)}, {"disk_iops", m.DiskIOPS}, {"disk_mbps", m.DiskMBps}, {"network_gbps", m.NetworkGbps}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			bad("%s %v: want 0 (not published) or more", f.name, f.v)
		}
	}
	if !diskKinds[m.DiskKind] {
		bad("disk_kind %q: want nvme, ssd, sata, hdd or ebs", m.DiskKind)
	}
	ps = append(ps, m.priceProblems()...)
	if p := badSource(m.Source); p != "" {
		bad("source %q: %s", m.Source, p)
	}
	if p := badDate(m.Date); p != "" {
		bad("date %q: %s", m.Date, p)
	}
	return ps
}

// priceProblems says what is wrong with a line's price: an hourly one
// above 0, or a purchase above 0 written off over life_months above 0.
func (m Machine) priceProblems() []string {
	switch {
	case m.Purchase < 0 || m.LifeMonths < 0:
		return []string{fmt.Sprintf("purchase %v over life_months %d: want both above 0", m.Purchase, m.LifeMonths)}
	case m.Purchase > 0 && m.LifeMonths == 0:
		return []string{fmt.Sprintf("purchase %v: give life_months, the months it is written off over (e.g. 36)", m.Purchase)}
	case !(m.hourly() > 0) || math.IsInf(m.hourly(), 0):
		return []string{fmt.Sprintf("hourly %v: want a price above 0 (hourly, monthly, or purchase with life_months)", m.Hourly)}
	}
	return nil
}

// badSource says why s is not the https URL of a page, or "".
func badSource(s string) string {
	if s == "" {
		return "every line names the https:// page it was transcribed from"
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "want an https:// URL of the page the figures come from"
	}
	return ""
}

// badDate says why s is not the YYYY-MM-DD date figures were read on, or "".
func badDate(s string) string {
	d, err := time.Parse(time.DateOnly, s)
	switch {
	case err != nil:
		return "want YYYY-MM-DD, the date the figures were read"
	case d.After(time.Now().Add(24 * time.Hour)):
		return "is in the future: want the date the figures were read"
	}
	return ""
}

// Builtin returns every built-in catalog (catalogs/*.yaml), sorted by name.
func Builtin() ([]Catalog, error) {
	files, err := fs.Glob(catalogs.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	var all []Catalog
	for _, f := range files {
		data, err := fs.ReadFile(catalogs.FS, f)
		if err != nil {
			return nil, err
		}
		c, err := Parse(path.Join("catalogs", f), data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(f, ".yaml"); c.Name != want {
			return nil, fmt.Errorf("catalogs/%s: name %q: a built-in catalog is named as its file, %q", f, c.Name, want)
		}
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

// Load returns a built-in catalog by name ("aws") or the catalog in a
// YAML file: a name with a path separator or ending .yaml or .yml is a
// file.
func Load(name string) (Catalog, error) {
	if strings.ContainsAny(name, `/\`) || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		data, err := os.ReadFile(name)
		if err != nil {
			return Catalog{}, fmt.Errorf("catalog: %w", err)
		}
		return Parse(name, data)
	}
	all, err := Builtin()
	if err != nil {
		return Catalog{}, err
	}
	var names []string
	for _, c := range all {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	return Catalog{}, fmt.Errorf("no built-in catalog %q: the built-in ones are %s; or give the path of a YAML file (my.yaml)",
		name, strings.Join(names, ", "))
}

// Merge returns base with extra's machines: one of the same name
// replaces base's, others are appended. Both must price in one currency.
func Merge(base Catalog, extra Catalog) (Catalog, error) {
	if base.Currency != extra.Currency {
		return Catalog{}, fmt.Errorf("%s prices in %s, %s in %s: one catalog cannot mix currencies",
			label(base), base.Currency, label(extra), extra.Currency)
	}
	if err := extra.Validate(); err != nil {
		return Catalog{}, err
	}
	out := base
	out.Machines = append([]Machine(nil), base.Machines...)
	at := map[string]int{}
	for i, m := range out.Machines {
		at[m.Name] = i
	}
	for _, m := range extra.Machines {
		if i, ok := at[m.Name]; ok {
			out.Machines[i] = m
			continue
		}
		at[m.Name] = len(out.Machines)
		out.Machines = append(out.Machines, m)
	}
	out.File = strings.TrimPrefix(base.File+" + "+extra.File, " + ")
	return out, out.Validate()
}

// label names a catalog in a message: its file, else its name.
func label(c Catalog) string {
	if c.File != "" {
		return c.File
	}
	return "catalog " + c.Name
}
