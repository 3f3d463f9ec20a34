package study

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sizing is the user's load and data a study's run is priced for (issue
// 36): `storebench cost` and the report's "What it costs" project, per
// target, the cheapest machines of a catalog that carry it, from what the
// run measured. In a study file:
//
//	sizing:
//	  load: 50000/s          # operations per second
//	  mix: {ycsb/a: 3, ycsb/c: 1}   # shares of the load per step (absent: every step measured, equal shares)
//	  data: 500GiB           # the data as the workload writes it, or items: 5e8
//	  replicas: 2            # copies of the data, each on machines of its own
//	  growth: 5%             # data and load added per month
//	  p99: 10ms              # the highest p99 allowed
//	  utilisation: 0.7       # the share of a machine's CPU the load may use
//	  catalog: aws           # a built-in catalog (storebench cost --help lists them)
type Sizing struct {
	Load        string             `yaml:"load"`
	Mix         map[string]float64 `yaml:"mix"`
	Data        string             `yaml:"data"`
	Replicas    int                `yaml:"replicas"`
	Growth      string             `yaml:"growth"`
	P99         Duration           `yaml:"p99"`
	Utilisation float64            `yaml:"utilisation"`
	Catalog     string             `yaml:"catalog"`
	MaxMachines int                `yaml:"max_machines"`
}

// ParseRate reads a load: 50000, 50000/s, 5e4/s, 3M/min, 1e6/h.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	per := 1.0
	for suf, sec := range map[string]float64{"/s": 1, "/min": 60, "/h": 3600} {
		if strings.HasSuffix(t, suf) {
			t, per = strings.TrimSuffix(t, suf), sec
		}
	}
	c, err := ParseCount(strings.TrimSpace(t))
	if err != nil || c <= 0 {
		return 0, fmt.Errorf("%q is not a load (examples: 50000/s, 5e4, 3M/min)", s)
	}
	return float64(c) / per, nil
}

// ParseData reads a data size: bytes (500GiB, 2TB) or items (5e8, "5e8
// items"); exactly one of the two is set.
func ParseData(s string) (items, bytes float64, err error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "items"))
	if c, err := ParseCount(t); err == nil && c > 0 {
		return float64(c), 0, nil
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
		return f, 0, nil
	}
	b, err := ParseBytes(t)
	if err != nil || b <= 0 {
		return 0, 0, fmt.Errorf("%q is not a data size: bytes (500GiB, 2TB) or items (5e8)", s)
	}
	return 0, float64(b), nil
}

// ParseGrowth reads a monthly growth: 5%, 5%/month or 0.05.
func ParseGrowth(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "/month"))
	pct := strings.HasSuffix(t, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a growth per month (examples: 5%%, 0.05)", s)
	}
	if pct {
		f /= 100
	}
	if f > 10 {
		return 0, fmt.Errorf("%q: more than 1000%% a month", s)
	}
	return f, nil
}

// Check validates every field, naming the first that is wrong.
func (z *Sizing) Check() (field string, err error) {
	if _, err := ParseRate(z.Load); err != nil {
		return "load", err
	}
	if _, _, err := ParseData(z.Data); err != nil {
		return "data", err
	}
	if z.Growth != "" {
		if _, err := ParseGrowth(z.Growth); err != nil {
			return "growth", err
		}
	}
	switch {
	case z.Replicas < 0 || z.Replicas > 100:
		return "replicas", fmt.Errorf("%d: want 1..100 (absent: 1)", z.Replicas)
	case z.Utilisation < 0 || z.Utilisation > 1:
		return "utilisation", fmt.Errorf("%g: want a share of the CPU above 0, at most 1 (absent: 0.7)", z.Utilisation)
	case z.P99 < 0:
		return "p99", fmt.Errorf("cannot be negative")
	case z.MaxMachines < 0:
		return "max_machines", fmt.Errorf("cannot be negative")
	}
	keys := make([]string, 0, len(z.Mix))
	for k := range z.Mix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := z.Mix[k]; v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return "mix." + k, fmt.Errorf("%g: a share must be above 0", v)
		}
	}
	return "", nil
}

// checkSizing validates the study's sizing, at its line.
func (s *Study) checkSizing(root *yaml.Node) error {
	if s.Sizing == nil {
		return nil
	}
	field, err := s.Sizing.Check()
	if err == nil {
		return nil
	}
	return &Error{File: s.File, Line: lineOf(root, "sizing"), Field: "sizing." + field, Msg: err.Error()}
}
