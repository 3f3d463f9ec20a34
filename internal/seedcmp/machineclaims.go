package seedcmp

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"storebench/internal/cost"
	"storebench/internal/report/section"
	"storebench/internal/results"
)

// MachineClaim is a figure the seed gives for machines it names by a
// provider's type (a cloud instance, or a cluster of them): the
// operations per second Count of them carried. "Against the seed" sets
// it beside what this run's model (package cost) projects for the same
// machines: a projection, never a verdict.
type MachineClaim struct {
	ID     string `yaml:"id"`
	Title  string `yaml:"title"`
	Engine string `yaml:"engine"` // one of the seed's engines
	// Ours is the step of ours whose throughput stands for the figure.
	Ours ClaimStep `yaml:"ours"`
	// Catalog is a built-in catalog (catalogs/NAME.yaml) and Machine a
	// machine type of it.
	Catalog string `yaml:"catalog"`
	Machine string `yaml:"machine"`
	Count   int    `yaml:"count"`
	// Replicas is the copies of the data: each write lands on that many
	// machines, so Count machines carry Count/Replicas of what each can
	// write (0: 1).
	Replicas int     `yaml:"replicas"`
	OpsPerS  float64 `yaml:"ops_per_s"`
	// Unit is the figure's, a rate ("tps", "qps"; "" is ops/s).
	Unit string `yaml:"unit"`
	// What is the seed's words, short; Source the lines the figure is on.
	What   string `yaml:"what"`
	Source []int  `yaml:"source"`
	Note   string `yaml:"note"`
}

// ClaimStep names our step: a workload's phase, and PerOp, where one
// operation of ours is several of the seed's, how many: "metric:NAME",
// a metric of the step ("metric:batch": one op inserts a batch).
type ClaimStep struct {
	Workload string `yaml:"workload"`
	Phase    string `yaml:"phase"`
	PerOp    string `yaml:"per_op"`
}

var perOpRE = regexp.MustCompile(`^(metric:[a-z0-9_]+)?$`)

// checkMachineClaims checks every machine claim: a known engine, a step
// of ours, a built-in catalog that has the machine, a rate, its lines.
func (s *Seed) checkMachineClaims(eng map[string]bool) error {
	ids := map[string]bool{}
	cats := map[string]cost.Catalog{}
	for i := range s.MachineClaims {
		c := &s.MachineClaims[i]
		if c.ID == "" || ids[c.ID] {
			return fmt.Errorf("machine claim %q: empty or listed twice", c.ID)
		}
		ids[c.ID] = true
		if err := c.check(eng, cats); err != nil {
			return fmt.Errorf("machine claim %s: %w", c.ID, err)
		}
	}
	return nil
}

func (c *MachineClaim) check(eng map[string]bool, cats map[string]cost.Catalog) error {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Unit == "" {
		c.Unit = "ops/s"
	}
	switch {
	case c.Title == "" || c.What == "":
		return errors.New("no title or no words of the seed's (what)")
	case !eng[c.Engine]:
		return fmt.Errorf("engine %q is not among the seed's engines", c.Engine)
	case c.Ours.Workload == "" || c.Ours.Phase == "" || !perOpRE.MatchString(c.Ours.PerOp):
		return fmt.Errorf("ours %+v: want a workload, a phase and per_op empty or metric:NAME", c.Ours)
	case c.Count < 1 || c.Replicas < 1 || c.OpsPerS <= 0:
		return fmt.Errorf("count %d, replicas %d, ops_per_s %g: want them above 0", c.Count, c.Replicas, c.OpsPerS)
	case len(c.Source) == 0:
		return errors.New("no source line")
	}
	if u, ok := units[c.Unit]; !ok || u.dim != "rate" {
		return fmt.Errorf("unit %q: want a rate (ops/s, tps, qps)", c.Unit)
	}
	if strings.ContainsAny(c.Catalog, `/\.`) || c.Catalog == "" {
		return fmt.Errorf("catalog %q: a seed names a built-in catalog", c.Catalog)
	}
	cat, ok := cats[c.Catalog]
	if !ok {
		var err error
		if cat, err = cost.Load(c.Catalog); err != nil {
			return err
		}
		cats[c.Catalog] = cat
	}
	if _, ok := cat.Find(c.Machine); !ok {
		return fmt.Errorf("machine %q is not in catalog %s", c.Machine, c.Catalog)
	}
	return nil
}

// figure is the claim as a figure of the seed's, for Trace.
func (c *MachineClaim) figure() Figure {
	return Figure{Finding: "machine claim " + c.ID, Engine: c.Engine, Value: c.OpsPerS, Unit: c.Unit, Source: c.Source}
}

// MachineProjection is a machine claim beside this run's projection for
// the same machines.
type MachineProjection struct {
	Claim    *MachineClaim
	Machine  cost.Machine
	Currency string
	// Monthly is what Count of the machine cost a month.
	Monthly float64
	// Target and Step are the model projected from: our target that
	// stands for the claim's engine, its model of the step.
	Target string
	Step   *cost.StepModel
	// PerOp is the seed's operations one of ours is; PerMachine our
	// operations per second on one machine, at full CPU.
	PerOp      float64
	PerMachine float64
	// Projected is Count × PerMachine × PerOp / Replicas, in the claim's
	// unit; Ratio the seed's figure over it. Missing, when set, is why
	// there is no projection (n/a).
	Projected, Ratio float64
	Missing          string
}

// ProjectMachines sets each of the seed's machine claims whose workload
// the run ran beside the projection of the run's model for the same
// machines: count × the step's throughput at the machine's vCPUs /
// replicas.
func ProjectMachines(s *Seed, run *results.Run) []MachineProjection {
	var models []*cost.Model
	var out []MachineProjection
	for i := range s.MachineClaims {
		c := &s.MachineClaims[i]
		if !ranWorkload(run, c.Ours.Workload) {
			continue // another study of the seed runs it
		}
		if models == nil {
			models = cost.Fit(run)
		}
		out = append(out, project(s, c, run, models))
	}
	return out
}

func project(s *Seed, c *MachineClaim, run *results.Run, models []*cost.Model) MachineProjection {
	p := MachineProjection{Claim: c}
	cat, err := cost.Load(c.Catalog)
	if err != nil {
		p.Missing = err.Error()
		return p
	}
	p.Machine, _ = cat.Find(c.Machine)
	p.Currency = cat.Currency
	p.Monthly = float64(c.Count) * p.Machine.Monthly()
	var kind string
	p.Target, kind, p.Step, p.Missing = claimModel(s.Engine(c.Engine), c.Ours, models)
	if p.Step == nil {
		return p
	}
	if p.PerOp, p.Missing = perOp(run, p.Target, kind, c.Ours.PerOp); p.Missing != "" {
		return p
	}
	p.PerMachine = p.Step.ThroughputAt(p.Machine.VCPUs)
	ops := float64(c.Count) * p.PerMachine * p.PerOp / float64(c.Replicas)
	p.Projected, _ = convert(ops, "ops/s", c.Unit)
	if p.Projected <= 0 || math.IsNaN(p.Projected) || math.IsInf(p.Projected, 0) {
		p.Missing = fmt.Sprintf("the model of %s's %s projects no throughput at %s vCPUs", p.Target, kind, num(p.Machine.VCPUs))
		p.Step = nil
		return p
	}
	p.Ratio = c.OpsPerS / p.Projected
	return p
}

// claimModel is the model of the first of the engine's targets the run
// has a model and the step's kind for, or why there is none.
func claimModel(e Engine, o ClaimStep, models []*cost.Model) (target, kind string, sm *cost.StepModel, missing string) {
	want := o.Workload + "/" + o.Phase
	if len(e.Targets) == 0 {
		return "", want, nil, NoStandIn
	}
	var ran []string
	for _, name := range e.Targets {
		for _, md := range models {
			if md.Target != name {
				continue
			}
			ran = append(ran, name)
			if k := kindOf(md, want); k != "" {
				return name, k, md.Steps[k], ""
			}
		}
	}
	if len(ran) == 0 {
		return "", want, nil, fmt.Sprintf("%s (%s) did not run here", e.Name, strings.Join(e.Targets, ", "))
	}
	return "", want, nil, fmt.Sprintf("%s measured no %s step here", strings.Join(ran, ", "), want)
}

// kindOf is the model's kind of workload/phase: the kind itself, or
// the one kind of it with labels beside ("geo/correlate rule=backtracer").
func kindOf(md *cost.Model, want string) string {
	if md.Steps[want] != nil {
		return want
	}
	hit := ""
	for _, k := range md.Kinds {
		if strings.HasPrefix(k, want+" ") {
			if hit != "" {
				return ""
			}
			hit = k
		}
	}
	return hit
}

// perOp is how many of the seed's operations one of ours is: 1, or the
// metric every step of the kind the target ran records.
func perOp(run *results.Run, target, kind, spec string) (float64, string) {
	name, ok := strings.CutPrefix(spec, "metric:")
	if !ok {
		return 1, ""
	}
	v := 0.0
	for _, t := range run.Targets {
		if BaseName(t) != target {
			continue
		}
		for _, st := range t.Steps {
			if st.Error != "" || cost.Kind(st) != kind {
				continue
			}
			m, ok := st.Metrics[name]
			if !ok || m <= 0 {
				return 0, fmt.Sprintf("a %s step of %s records no %s", kind, target, name)
			}
			if v != 0 && m != v {
				return 0, fmt.Sprintf("%s's %s steps do not all record one %s", target, kind, name)
			}
			v = m
		}
	}
	if v == 0 {
		return 0, fmt.Sprintf("no %s step of %s records %s", kind, target, name)
	}
	return v, ""
}

// WriteMachineClaims writes, under the seed's findings in "Against the
// seed", the seed's machine claims whose workload the run ran, each
// beside this run's projection for the same machines.
func WriteMachineClaims(b *strings.Builder, s *Seed, run *results.Run) {
	ps := ProjectMachines(s, run)
	if len(ps) == 0 {
		return
	}
	b.WriteString("### The seed's machines, projected from this run\n\n")
	b.WriteString("Each figure the seed gives for machines a built-in catalog prices, beside the projection of this run's model (package cost) for the same count of that machine: count × the step's throughput at the machine's vCPUs, at full CPU, ÷ the copies of the data (each write lands on that many machines).\n\n")
	tab := section.Table{Head: []string{"the seed's claim", "projection: ours on the same machines", "seed / projection", "the projection's basis", "the machines' monthly cost (projection's price)"}, Left: 5}
	for _, p := range ps {
		tab.Rows = append(tab.Rows, claimRow(p))
	}
	tab.Write(b)
	b.WriteString("These are projections from this run's model, not measurements: no verdict (holds or differs) is given for them.\n\n")
}

func claimRow(p MachineProjection) []string {
	c := p.Claim
	claim := fmt.Sprintf("%s: %d × %s (%s), %s (l. %s: \"%s\")", c.Title, c.Count, c.Machine, c.Catalog, rate(c.OpsPerS, c.Unit), lineList(c.Source), c.What)
	if c.Replicas > 1 {
		claim += fmt.Sprintf(", R=%d", c.Replicas)
	}
	if c.Note != "" {
		claim += "; " + c.Note
	}
	price := fmt.Sprintf("projection's price: %d × %.2f = %.2f %s/month (%s, %s)", c.Count, p.Machine.Monthly(), p.Monthly, p.Currency, c.Catalog, p.Machine.Date)
	if p.Step == nil {
		return []string{section.Cell(claim), section.Cell("n/a: " + p.Missing), "n/a (no projection)", "n/a (no projection)", section.Cell(price)}
	}
	proj := fmt.Sprintf("projection: %s (%s %s: %d × %s ops/s at %s vCPUs", rate(p.Projected, c.Unit), p.Target, p.Step.Kind, c.Count, num(p.PerMachine), num(p.Machine.VCPUs))
	if p.PerOp != 1 {
		proj += fmt.Sprintf(" × %s per op", num(p.PerOp))
	}
	if c.Replicas > 1 {
		proj += fmt.Sprintf(" ÷ %d copies", c.Replicas)
	}
	proj += ")"
	ratio := fmt.Sprintf("%s (seed / projection)", strconv.FormatFloat(p.Ratio, 'g', 3, 64))
	basis := fmt.Sprintf("projection from %s; %s measured, %s projected (×%s)", p.Step.Describe(), cost.VCPUs(p.Step.MaxVCPUs), num(p.Machine.VCPUs), strconv.FormatFloat(p.Machine.VCPUs/p.Step.MaxVCPUs, 'g', 3, 64))
	return []string{section.Cell(claim), section.Cell(proj), section.Cell(ratio), section.Cell(basis), section.Cell(price)}
}

// rate prints a rate with its unit: rounded at 1e4 and above, else with
// 4 significant digits.
func rate(v float64, unit string) string {
	return num(v) + " " + unit
}

func num(v float64) string {
	if math.Abs(v) >= 1e4 && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
