package study

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Constraints are what the user's system can afford: the report opens
// with a ranking of the targets that meet them and, for each one that
// does not, the first constraint it breaks with the measured figure. The
// seed studies state such limits in prose ("we will suppose the DB uses at
// most 8 GB of RAM"); here they are checked against measurements.
//
// Constraints are checked in a fixed order: durability, ram, disk, then
// p99 and throughput bounds in the order the file gives them.
type Constraints struct {
	// RAM is the most memory the target may use: the resident set of an
	// embedded engine's worker process, the proportional set size of a
	// managed server's process tree, at its highest over the run.
	RAM Bytes `yaml:"ram" json:"ram_bytes,omitempty"`
	// Disk is the most disk space (allocated blocks) the target's data may
	// take at any step.
	Disk Bytes `yaml:"disk" json:"disk_bytes,omitempty"`
	// Durability is the class the system needs: "sync" excludes runs made
	// with async writes and targets that keep nothing (memcached).
	Durability string `yaml:"durability" json:"durability,omitempty"`
	// P99 bounds the p99 service time of phases, "workload.phase" or
	// "workload.phase.OP" (YCSB's READ, UPDATE, ...), at the largest size.
	P99 []Bound `yaml:"-" json:"p99,omitempty"`
	// Throughput is the least operations per second a phase must achieve
	// at the largest size.
	Throughput []Bound `yaml:"-" json:"throughput,omitempty"`
	// RankBy names the figure that orders the targets meeting the
	// constraints, "workload.phase:metric" with metric one of seconds,
	// throughput, p50, p99, max; empty: the study's headline figure.
	RankBy string `yaml:"rank_by" json:"rank_by,omitempty"`

	RawP99        yaml.Node `yaml:"p99" json:"-"`
	RawThroughput yaml.Node `yaml:"throughput" json:"-"`
}

// Bound is one p99 or throughput constraint on a phase.
type Bound struct {
	// Figure is "workload.phase" or "workload.phase.OP".
	Figure string `json:"figure"`
	// Value: nanoseconds for p99, operations per second for throughput.
	Value float64 `json:"value"`
	// Line in the study file, for errors found after parsing (e.g. a phase
	// no workload of the study has).
	Line int `json:"-"`
}

// Parts splits the figure "workload.phase[.OP][label=value,...]" (its
// label selector left out: see SplitSelector).
func (b Bound) Parts() (workload, phase, op string) {
	base, _ := SplitSelector(b.Figure)
	parts := strings.SplitN(base, ".", 3)
	workload, phase = parts[0], parts[1]
	if len(parts) == 3 {
		op = parts[2]
	}
	return
}

// A figure may end in a label selector, "ledger.stress[concurrency=8]":
// it then reads the steps with those labels (a sweep's level), where a
// figure without one reads the phase's own steps.
var figureRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*\.[a-z0-9][a-z0-9_-]*(\.[A-Za-z0-9_-]+)?(\[[a-z_]+=[A-Za-z0-9._-]+(,[a-z_]+=[A-Za-z0-9._-]+)*\])?$`)

// SplitSelector splits "workload.phase[.OP][k=v,...]" into the figure
// and its label selector (nil when it has none).
func SplitSelector(fig string) (string, map[string]string) {
	i := strings.IndexByte(fig, '[')
	if i < 0 || !strings.HasSuffix(fig, "]") {
		return fig, nil
	}
	sel := map[string]string{}
	for _, kv := range strings.Split(fig[i+1:len(fig)-1], ",") {
		k, v, _ := strings.Cut(kv, "=")
		sel[k] = v
	}
	return fig[:i], sel
}

// RankMetrics are the metrics rank_by may name.
var RankMetrics = []string{"seconds", "throughput", "p50", "p99", "max"}

// empty reports whether no constraint is given at all.
func (c *Constraints) empty() bool {
	return c.RAM == 0 && c.Disk == 0 && c.Durability == "" && len(c.P99) == 0 && len(c.Throughput) == 0
}

// Any reports whether at least one constraint is given.
func (c *Constraints) Any() bool { return c != nil && !c.empty() }

// checkConstraints validates the constraints and decodes the p99 and
// throughput mappings (kept raw so that their order and lines survive).
func (s *Study) checkConstraints(root *yaml.Node) error {
	c := s.Constraints
	if c == nil {
		return nil
	}
	line := lineOf(root, "constraints")
	fail := func(n *yaml.Node, field, format string, args ...any) error {
		l := line
		if n != nil && n.Line > 0 {
			l = n.Line
		}
		return &Error{File: s.File, Line: l, Field: "constraints." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if c.RAM < 0 || c.Disk < 0 {
		return fail(nil, "ram", "sizes cannot be negative")
	}
	switch c.Durability {
	case "", "sync", "async":
	default:
		return fail(nil, "durability", "%q: want sync (every write durable on return) or async (a crash may lose the last writes)", c.Durability)
	}
	bounds := func(raw *yaml.Node, field string, parse func(v *yaml.Node) (float64, error)) ([]Bound, error) {
		if raw.Kind == 0 {
			return nil, nil
		}
		if raw.Kind != yaml.MappingNode {
			return nil, fail(raw, field, "want a mapping of workload.phase to a bound, e.g. %s", example(field))
		}
		var out []Bound
		for i := 0; i+1 < len(raw.Content); i += 2 {
			k, v := raw.Content[i], raw.Content[i+1]
			if !figureRE.MatchString(k.Value) {
				return nil, fail(k, field+"."+k.Value, "want workload.phase or workload.phase.OP, optionally with a label selector [concurrency=8], e.g. %s", example(field))
			}
			x, err := parse(v)
			if err != nil {
				return nil, fail(v, field+"."+k.Value, "%v", err)
			}
			out = append(out, Bound{Figure: k.Value, Value: x, Line: k.Line})
		}
		return out, nil
	}
	var err error
	c.P99, err = bounds(&c.RawP99, "p99", func(v *yaml.Node) (float64, error) {
		var d Duration
		if err := d.UnmarshalYAML(v); err != nil {
			return 0, err
		}
		if d <= 0 {
			return 0, fmt.Errorf("%s: a latency bound must be positive", v.Value)
		}
		return float64(time.Duration(d).Nanoseconds()), nil
	})
	if err != nil {
		return err
	}
	c.Throughput, err = bounds(&c.RawThroughput, "throughput", func(v *yaml.Node) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v.Value), "/s"), 64)
		if err != nil || x <= 0 {
			return 0, fmt.Errorf("%q: want operations per second, a positive number", v.Value)
		}
		return x, nil
	})
	if err != nil {
		return err
	}
	if c.RankBy != "" {
		fig, metric, ok := strings.Cut(c.RankBy, ":")
		if !ok || !figureRE.MatchString(fig) || !contains(RankMetrics, metric) {
			return fail(nil, "rank_by", "%q: want workload.phase:metric with metric one of %s, e.g. ledger.stress:p99", c.RankBy, strings.Join(RankMetrics, ", "))
		}
	}
	return nil
}

// CheckFigures verifies that every phase the constraints name is one the
// study's workloads plan (phases lists "workload.phase"), so that a typo
// fails before a long run rather than in its report.
func (s *Study) CheckFigures(phases map[string]bool) error {
	return s.CheckFiguresAfter(phases, nil)
}

// CheckFiguresAfter is CheckFigures after overrides, given the phases
// the study file alone plans (before): a phase the command line removed
// is blamed on the flags that changed its workload.
func (s *Study) CheckFiguresAfter(phases, before map[string]bool) error {
	c := s.Constraints
	if c == nil {
		return nil
	}
	var known []string
	for p := range phases {
		known = append(known, p)
	}
	sort.Strings(known)
	check := func(field string, b Bound) error {
		w, p, _ := b.Parts()
		if !phases[w+"."+p] && before[w+"."+p] {
			flags := s.flagsUnder("workloads." + w)
			if len(flags) == 0 {
				flags = s.flagsUnder("")
			}
			line := b.Line
			if line == 0 {
				line = s.Line("constraints." + field)
			}
			return &Error{Flag: strings.Join(flags, " "),
				Msg: fmt.Sprintf("leaves the study without phase %s.%s, which constraints.%s.%s needs (%s:%d)", w, p, field, b.Figure, s.File, line)}
		}
		if !phases[w+"."+p] {
			return &Error{File: s.File, Line: b.Line, Field: "constraints." + field + "." + b.Figure,
				Msg: fmt.Sprintf("the study has no phase %s.%s (it has %s)", w, p, strings.Join(known, ", "))}
		}
		return nil
	}
	for _, b := range c.P99 {
		if err := check("p99", b); err != nil {
			return err
		}
	}
	for _, b := range c.Throughput {
		if err := check("throughput", b); err != nil {
			return err
		}
	}
	if c.RankBy != "" {
		fig, _, _ := strings.Cut(c.RankBy, ":")
		if err := check("rank_by", Bound{Figure: fig}); err != nil {
			return err
		}
	}
	return nil
}

func example(field string) string {
	if field == "throughput" {
		return "{ledger.stress: 2000}"
	}
	return "{ledger.select: 2ms, ycsb.a.READ: 1ms}"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// LoadConstraints reads constraints from a file: a study file (its
// `constraints:` section) or a YAML mapping of the constraints alone, so
// that a finished run can be judged again under other constraints.
func LoadConstraints(path string) (*Constraints, error) {
	data, err := readFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", unwrapPathErr(err))}
		}
		return nil, err
	}
	// The same limits as a study file: bounded size, one document.
	rootp, err := decodeDocument(path, data)
	if err != nil {
		return nil, err
	}
	root := *rootp
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: path, Msg: "want a mapping of constraints (ram, disk, durability, p99, throughput, rank_by) or a study with a constraints section"}
	}
	node, path0 := root.Content[0], ""
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == "constraints" {
			node, path0 = node.Content[i+1], "constraints"
			break
		}
	}
	c := &Constraints{}
	if err := (decoder{file: path}).decode(node, reflect.ValueOf(c).Elem(), path0); err != nil {
		return nil, err
	}
	s := &Study{File: path, Constraints: c}
	if err := s.checkConstraints(&root); err != nil {
		return nil, err
	}
	return c, nil
}
