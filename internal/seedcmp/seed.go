// Package seedcmp sets a run beside the seed study it reproduces: the
// seed's own figures, transcribed once as data (studies/seeds/NNN.yaml,
// each figure with the line of the seed it came from), ours at the same
// sizes and engines, and a verdict per finding computed from both (same
// engine ordering, same growth exponent, or differs) with the reasons
// results.json measures. No verdict is written by hand.
package seedcmp

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"storebench/studies"
)

// Seed is one seed study's transcribed results.
type Seed struct {
	// ID is the seed's number ("000"), File its text's name in the
	// repository's copy of the seeds' texts (studies/seeds/text,
	// from ../shared/seeds).
	ID    string `yaml:"seed"`
	File  string `yaml:"file"`
	Title string `yaml:"title"`
	// Durability is the class the seed's engines wrote in (sync: each
	// write durable on return; async: not), as the seed or its engines'
	// defaults say; empty when neither does.
	Durability     string     `yaml:"durability"`
	DurabilityNote string     `yaml:"durability_note"`
	Hardware       []Hardware `yaml:"hardware"`
	Engines        []Engine   `yaml:"engines"`
	// Methods are the ways the seed measured that a run here does not
	// share, each with its lines.
	Methods  []Method  `yaml:"methods"`
	Findings []Finding `yaml:"findings"`
	// MachineClaims are the seed's figures for machines a built-in
	// catalog prices (machine_claims: id, title, engine, ours {workload,
	// phase, per_op}, catalog, machine, count, replicas, ops_per_s, unit,
	// what, source, note), each set beside this run's projection for the
	// same machines (MachineClaim): no verdict.
	MachineClaims []MachineClaim `yaml:"machine_claims"`
}

// Hardware is a machine the seed measured on.
type Hardware struct {
	ID     string  `yaml:"id"`
	What   string  `yaml:"what"`
	CPUs   int     `yaml:"cpus"` // logical CPUs (threads); 0: the seed does not say
	RAMGiB float64 `yaml:"ram_gib"`
	Source []int   `yaml:"source"`
}

// Engine is an engine (or system) the seed measured, and the storebench
// targets that stand for it here, in order of preference: the first that
// ran is the one compared.
type Engine struct {
	Name    string   `yaml:"name"`
	Targets []string `yaml:"targets"`
	Note    string   `yaml:"note"`
}

// Finding is one of the seed's tables (or one column of one): one
// operation measured on engines at sizes.
type Finding struct {
	ID        string `yaml:"id"`
	Title     string `yaml:"title"`
	Operation string `yaml:"operation"`
	// Unit is the figures' unit (a figure may state its own).
	Unit string `yaml:"unit"`
	// Size says what a figure's n counts ("txns in the chain").
	Size string `yaml:"size"`
	// Ours says which of our figures this finding corresponds to; nil
	// when storebench measures nothing like it.
	Ours *Ours `yaml:"ours"`
	// Workload, for a finding with no Ours, is the workload whose runs
	// show it (the seed's figures, and that nothing here is like them).
	Workload string   `yaml:"workload"`
	Figures  []Figure `yaml:"figures"`
	// Claim is what the finding claims (ClaimAuto: the ordering and the
	// growth its figures show).
	Claim Claim `yaml:"claim"`
	// Says is the seed's own sentence, on its lines Source: a
	// conclusion the seed draws (its figures, if any, from finding Of).
	Says   string `yaml:"says"`
	Source []int  `yaml:"source"`
	Of     string `yaml:"of"`
	// DependsOn are the conditions the finding's figure depends on,
	// which a verdict that differs looks for in the run as causes:
	// durability, page_cache, cpus, network, baseline, scale.
	DependsOn []string `yaml:"depends_on"`
	// Scale is the size the seed measured the finding at, where a run
	// may be cut below it.
	Scale Scale `yaml:"scale"`
	// Needs says what run would test a claim no run here can (a cluster
	// of ten machines, a machine with 96 GB): its "not comparable".
	Needs string `yaml:"needs"`
	// ByMachine: the finding sets the seed's machines against each other
	// (one engine on two machines): each figure is set beside ours on
	// the machine shape named for its hardware (a target run under
	// --machine name=HARDWARE,… or name=HARDWARE-scaled,…: MachineOf),
	// and its claim names ENGINE@HARDWARE where it names engines.
	ByMachine bool `yaml:"by_machine"`
	// Hardware, for a conclusion with no figures of its own, is the
	// seed's machine its words are about (a cause that compares
	// machines reads it).
	Hardware string `yaml:"hardware"`
	// Per "cpus" divides every figure by the vCPUs it was measured on:
	// the seed's by its machine's cpus (Hardware.CPUs), ours by the CPUs
	// its step ran on (cpusOf: its machine shape's CPU limit, else this
	// machine's logical CPUs). The finding's unit is then a rate per
	// vCPU ("ticks/s/vCPU"), and its figures are written as the seed's
	// lines have them, in that rate ("ticks/s": 70000, not 8750).
	Per string `yaml:"per"`
}

// PerCPUs is Finding.Per for a figure per vCPU.
const PerCPUs = "cpus"

// FigureUnit is the unit a finding's figures are written in, and ours
// read in: its unit, less "/vCPU" where the finding divides by CPUs.
func (f *Finding) FigureUnit() string {
	if f.Per == PerCPUs {
		return strings.TrimSuffix(f.Unit, PerVCPU)
	}
	return f.Unit
}

// checkPer checks a finding's unit is known, and its per: "cpus" (or
// none), a unit per vCPU with it and only with it, and a machine of
// known cpus under each figure.
func (f *Finding) checkPer(s *Seed) error {
	perUnit := strings.HasSuffix(f.Unit, PerVCPU)
	if _, ok := unitOf(f.Unit); !ok {
		return fmt.Errorf("unit %q unknown", f.Unit)
	}
	switch {
	case f.Per != "" && f.Per != PerCPUs:
		return fmt.Errorf("per %q: want cpus or nothing", f.Per)
	case f.Per == PerCPUs && !perUnit:
		return fmt.Errorf("per cpus: unit %q is not per vCPU (%q)", f.Unit, f.Unit+PerVCPU)
	case f.Per == "" && perUnit:
		return fmt.Errorf("unit %q is per vCPU: needs per: cpus", f.Unit)
	}
	for i, g := range f.Figures {
		if f.Per == PerCPUs && s.HardwareOf(g.Hardware).CPUs <= 0 {
			return fmt.Errorf("figure %d: per cpus, and its machine %q has no cpus", i+1, g.Hardware)
		}
	}
	return nil
}

// Causes a finding may depend on (Finding.DependsOn).
var Causes = []string{"durability", "page_cache", "cpus", "network", "baseline", "scale"}

// WorkloadOf is the workload a finding belongs to ("" none).
func (f *Finding) WorkloadOf() string {
	if f.Ours != nil {
		return f.Ours.Workload
	}
	return f.Workload
}

// Ours locates our figure of a finding in results.json: the steps of a
// workload's phase (with the labels in Where), the size each stands at,
// and the value.
type Ours struct {
	Workload string `yaml:"workload"`
	Phase    string `yaml:"phase"`
	// Size: "n" (the step's N, the default), "metric:NAME" (a metric of
	// the step), "label:KEY" (a label), "cpus" (the CPUs the step ran on:
	// its machine shape's CPU limit, else this machine's logical CPUs;
	// cpusOf) or "none" (the seed's figures stand at no size: n 0).
	Size string `yaml:"size"`
	// Value: seconds (the step's timed seconds), ops_per_s,
	// latency.mean|min|p50|p90|p99|p999|max, latency.pNN (from the
	// step's histogram), disk (blocks allocated), mem (resident memory),
	// cache (bytes of its files in the page cache), metric_ratio:A/B (a
	// step's metric A over its metric B, unitless: a rate during GC over
	// the rate outside it), metric:NAME (a
	// metric of the step, in Unit: the unit its workload registers, ""
	// for a plain count) or sustainable (the highest
	// sustainable rate a rate search found).
	Value string            `yaml:"value"`
	Unit  string            `yaml:"unit"`
	Where map[string]string `yaml:"where"`
}

// Figure is one number of the seed.
type Figure struct {
	// Finding, Operation and, when the figure states none, Unit come
	// from the finding it is listed under.
	Finding   string `yaml:"-"`
	Operation string `yaml:"-"`

	Engine   string  `yaml:"engine"`
	N        float64 `yaml:"n"`
	Value    float64 `yaml:"value"`
	Unit     string  `yaml:"unit"`
	Hardware string  `yaml:"hardware"`
	// Source are the seed's line numbers (from 1) the figure is on.
	Source []int  `yaml:"source"`
	Note   string `yaml:"note"`
}

var idRE = regexp.MustCompile(`^[0-9]{3}$`)

// IDs lists the seeds transcribed, sorted.
func IDs() []string {
	names, _ := fs.Glob(studies.Seeds, "seeds/*.yaml")
	var out []string
	for _, n := range names {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(n, "seeds/"), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Load reads seed id's transcription (studies/seeds/ID.yaml).
func Load(id string) (*Seed, error) {
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("seed %q: want three digits (000)", id)
	}
	data, err := fs.ReadFile(studies.Seeds, "seeds/"+id+".yaml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("seed %s: no transcription of its figures (studies/seeds/%s.yaml)", id, id)
	}
	if err != nil {
		return nil, err
	}
	return Parse(id, data)
}

// Parse reads a transcription strictly (an unknown field is an error)
// and checks it: every figure names a known engine, hardware and unit,
// and cites a line.
func Parse(id string, data []byte) (*Seed, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Seed
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("seed %s: %w", id, err)
	}
	if s.ID != id {
		return nil, fmt.Errorf("seed %s: the file says seed %q", id, s.ID)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("seed %s: %w", id, err)
	}
	return &s, nil
}

func (s *Seed) check() error {
	if s.File == "" {
		return errors.New("file: the seed's text is not named")
	}
	if s.Durability != "" && s.Durability != "sync" && s.Durability != "async" {
		return fmt.Errorf("durability %q: want sync, async or nothing", s.Durability)
	}
	hw := map[string]bool{}
	for _, h := range s.Hardware {
		if h.ID == "" || hw[h.ID] {
			return fmt.Errorf("hardware %q: empty or listed twice", h.ID)
		}
		hw[h.ID] = true
	}
	eng := map[string]bool{}
	for _, e := range s.Engines {
		if e.Name == "" || eng[e.Name] {
			return fmt.Errorf("engine %q: empty or listed twice", e.Name)
		}
		eng[e.Name] = true
	}
	for _, m := range s.Methods {
		if !contains(Causes, m.Cause) || m.Seed == "" || m.Ours == "" || len(m.Source) == 0 {
			return fmt.Errorf("method %q: needs a cause (%s), what the seed did, what we do, and its lines", m.Seed, strings.Join(Causes, ", "))
		}
	}
	ids := map[string]bool{}
	if err := s.resolveOf(); err != nil {
		return err
	}
	for fi := range s.Findings {
		f := &s.Findings[fi]
		if f.ID == "" || ids[f.ID] {
			return fmt.Errorf("finding %q: empty or listed twice", f.ID)
		}
		ids[f.ID] = true
		claimEng := eng
		if f.ByMachine {
			claimEng = map[string]bool{}
			for e := range eng {
				for h := range hw {
					claimEng[e+"@"+h] = true
				}
			}
		}
		if f.Hardware != "" && !hw[f.Hardware] {
			return fmt.Errorf("finding %s: hardware %q is not among the seed's", f.ID, f.Hardware)
		}
		if err := f.Claim.check(claimEng); err != nil {
			return fmt.Errorf("finding %s: claim: %w", f.ID, err)
		}
		for _, c := range f.DependsOn {
			if !contains(Causes, c) {
				return fmt.Errorf("finding %s: depends_on %q unknown (%s)", f.ID, c, strings.Join(Causes, ", "))
			}
		}
		if (f.Says == "") != (len(f.Source) == 0) {
			return fmt.Errorf("finding %s: says and source go together (the seed's sentence and its lines)", f.ID)
		}
		if err := f.checkPer(s); err != nil {
			return fmt.Errorf("finding %s: %w", f.ID, err)
		}
		if len(f.Figures) == 0 && f.Says == "" {
			return fmt.Errorf("finding %s: no figures", f.ID)
		}
		if f.Ours == nil && f.Workload == "" {
			return fmt.Errorf("finding %s: neither ours nor the workload it belongs to", f.ID)
		}
		if o := f.Ours; o != nil {
			if err := o.check(f.FigureUnit()); err != nil {
				return fmt.Errorf("finding %s: ours: %w", f.ID, err)
			}
		}
		if err := f.checkFigures(eng, hw); err != nil {
			return err
		}
	}
	return s.checkMachineClaims(eng)
}

// checkFigures gives each of a finding's figures its finding, operation
// and, where it states none, unit, and checks it names a known engine,
// machine and unit, and cites a line.
func (f *Finding) checkFigures(eng, hw map[string]bool) error {
	for i := range f.Figures {
		g := &f.Figures[i]
		g.Finding, g.Operation = f.ID, f.Operation
		if g.Unit == "" {
			g.Unit = f.FigureUnit()
		}
		if _, err := convert(1, g.Unit, f.FigureUnit()); err != nil {
			return fmt.Errorf("finding %s, figure %d: %w", f.ID, i+1, err)
		}
		if !eng[g.Engine] {
			return fmt.Errorf("finding %s, figure %d: engine %q is not among the seed's engines", f.ID, i+1, g.Engine)
		}
		if !hw[g.Hardware] {
			return fmt.Errorf("finding %s, figure %d: hardware %q is not among the seed's", f.ID, i+1, g.Hardware)
		}
		if len(g.Source) == 0 {
			return fmt.Errorf("finding %s, figure %d: no source line", f.ID, i+1)
		}
	}
	return nil
}

// resolveOf gives a conclusion that names another finding (Of) that
// finding's figures, mapping, unit and size, unless it states its own.
func (s *Seed) resolveOf() error {
	byID := map[string]*Finding{}
	for i := range s.Findings {
		byID[s.Findings[i].ID] = &s.Findings[i]
	}
	for i := range s.Findings {
		f := &s.Findings[i]
		if f.Of == "" {
			continue
		}
		src, ok := byID[f.Of]
		if !ok || src.Of != "" {
			return fmt.Errorf("finding %s: of %q: no such finding of figures", f.ID, f.Of)
		}
		if len(f.Figures) == 0 {
			f.Figures = append([]Figure(nil), src.Figures...)
		}
		if f.Ours == nil && f.Workload == "" {
			if src.Ours != nil {
				o := *src.Ours
				f.Ours = &o
			}
			f.Workload = src.Workload
		}
		if f.Unit == "" {
			f.Unit, f.Size, f.Operation, f.Per = src.Unit, src.Size, src.Operation, src.Per
		}
		if len(f.DependsOn) == 0 {
			f.DependsOn = src.DependsOn
		}
	}
	return nil
}

var sizeRE = regexp.MustCompile(`^(n|cpus|none|metric:[a-z0-9_]+|label:[a-z0-9_]+)$`)
var valueRE = regexp.MustCompile(`^(seconds|ops_per_s|per_request_time|latency\.(mean|min|p[0-9]+|max)|by_op\.[A-Za-z0-9_-]+\.(mean|min|p[0-9]+|max)|disk|mem|mem_growth|cache|cpu|sustainable|gc_passes|metric:[a-z0-9_]+|metric_ratio:[a-z0-9_]+/[a-z0-9_]+)$`)

func (o *Ours) check(unit string) error {
	if o.Workload == "" {
		return errors.New("no workload")
	}
	if o.Size == "" {
		o.Size = "n"
	}
	if !sizeRE.MatchString(o.Size) {
		return fmt.Errorf("size %q unknown", o.Size)
	}
	if !valueRE.MatchString(o.Value) {
		return fmt.Errorf("value %q unknown", o.Value)
	}
	// A metric's unit is the one its workload registers ("" for a
	// plain count).
	if _, err := convert(1, o.unit(), unit); err != nil {
		return fmt.Errorf("value %s: %w", o.Value, err)
	}
	return nil
}

// unit is the unit our value comes in.
func (o *Ours) unit() string {
	switch {
	case o.Value == "seconds", o.Value == "per_request_time", o.Value == "gc_passes":
		return "s"
	case o.Value == "ops_per_s", o.Value == "sustainable":
		return "ops/s"
	case strings.HasPrefix(o.Value, "latency."), strings.HasPrefix(o.Value, "by_op."):
		return "ns"
	case o.Value == "disk", o.Value == "mem", o.Value == "mem_growth", o.Value == "cache":
		return "B"
	case o.Value == "cpu":
		return "%"
	case strings.HasPrefix(o.Value, "metric_ratio:"):
		return ""
	}
	return o.Unit
}

// Engine returns the seed's engine of that name.
func (s *Seed) Engine(name string) Engine {
	for _, e := range s.Engines {
		if e.Name == name {
			return e
		}
	}
	return Engine{Name: name}
}

// HardwareOf returns the seed's machine of that id.
func (s *Seed) HardwareOf(id string) Hardware {
	for _, h := range s.Hardware {
		if h.ID == id {
			return h
		}
	}
	return Hardware{ID: id}
}
