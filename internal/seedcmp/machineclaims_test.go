package seedcmp

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/cost"
	"storebench/internal/results"
)

// claimOnItsLines checks a machine claim as TestEveryFigureIsOnItsSeedLine
// checks a figure: its figure written on a line it cites, and its words
// (what) the seed's own on those lines (consecutive), whitespace aside.
func claimOnItsLines(lines []string, c MachineClaim) error {
	if err := Trace(lines, c.figure()); err != nil {
		return err
	}
	for i, l := range c.Source {
		if l < 1 || l > len(lines) || (i > 0 && l != c.Source[i-1]+1) {
			return fmt.Errorf("machine claim %s: lines %v: not consecutive lines of the text", c.ID, c.Source)
		}
	}
	text := conclText(lines, c.Source[0], c.Source[len(c.Source)-1])
	if !strings.Contains(text, strings.Join(strings.Fields(c.What), " ")) {
		return fmt.Errorf("machine claim %s: %q is not on lines %v, which read %q", c.ID, c.What, c.Source, text)
	}
	return nil
}

// tokensOnShapes is a tokens run of moeingads on two CPU-limited shapes
// (0.5 and 1 vCPU) whose runtx throughput is ops[0] and ops[1]
// transfers a second; runtx false: genacc alone.
func tokensOnShapes(ops [2]float64, runtx bool) *results.Run {
	run := &results.Run{StudySource: "name: tokens\nseed_study: \"001\"\n"}
	run.Host.LogicalCPUs = 2
	for i, v := range []float64{0.5, 1} {
		machine := fmt.Sprintf("cpus=%g", v)
		t := &results.Target{Name: "moeingads@" + machine, Title: "MoeingADS on " + machine, Machine: machine}
		phases := []string{"genacc"}
		if runtx {
			phases = append(phases, "runtx")
		}
		for _, ph := range phases {
			st := &results.Step{Workload: "tokens", Phase: ph, N: 1e6, Seconds: 10, Ops: int64(ops[i] * 10)}
			st.Labels = results.StepLabels("tokens", ph, 1e6)
			st.Resources.Timed = &results.Window{Seconds: 10, CPUPercent: 100 * v}
			t.Steps = append(t.Steps, st)
		}
		run.Targets = append(run.Targets, t)
	}
	return run
}

func claimNamed(t *testing.T, ps []MachineProjection, id string) MachineProjection {
	t.Helper()
	for _, p := range ps {
		if p.Claim.ID == id {
			return p
		}
	}
	t.Fatalf("no projection of machine claim %s", id)
	return MachineProjection{}
}

// Seed 001's "i3en.3xlarge can reach 106387 TPS" is set beside the
// projection of the run's model for one i3en.3xlarge (12 vCPUs in the
// built-in aws catalog): the power law through the two shapes' runtx
// throughputs, at 12, recomputed here; the ratio is shown, every cell
// says it is a projection, no verdict is given; a run without runtx says
// n/a, and a run without the tokens workload shows no claim.
func TestMachineClaimProjectedFromTheRunsModel(t *testing.T) {
	s, err := Load("001")
	if err != nil {
		t.Fatal(err)
	}
	run := tokensOnShapes([2]float64{3000, 5000}, true)
	// The power law through (0.5, 3000) and (1, 5000), at 12 vCPUs.
	b := math.Log(5000.0/3000) / math.Log(1/0.5)
	k := 3000 / math.Pow(0.5, b)
	want := k * math.Pow(12, b)
	p := claimNamed(t, ProjectMachines(s, run), "runtx_tps_i3en_3xlarge")
	if p.Missing != "" || p.Target != "moeingads" || p.Machine.VCPUs != 12 || math.Abs(p.Projected-want) > 1e-6*want {
		t.Fatalf("projection %+v: want moeingads at %.0f tps on 12 vCPUs", p, want)
	}
	if r := 106387 / want; math.Abs(p.Ratio-r) > 1e-9*r {
		t.Errorf("ratio %g, want %g", p.Ratio, r)
	}
	aws, _ := cost.Load("aws")
	m, _ := aws.Find("i3en.3xlarge")
	var out strings.Builder
	WriteMachineClaims(&out, s, run)
	md := out.String()
	for _, w := range []string{
		"### The seed's machines, projected from this run",
		fmt.Sprintf("projection: %s tps (moeingads tokens/runtx: 1 × %s ops/s at 12 vCPUs)", num(want), num(want)),
		fmt.Sprintf("%.3g (seed / projection)", 106387/want),
		"fitted to 2 CPU-limited shapes up to 1 vCPU; 1 vCPU measured, 12 projected (×12)",
		fmt.Sprintf("1 × %.2f = %.2f USD/month", m.Monthly(), m.Monthly()),
		"106387 tps (l. 68",
		"not measurements: no verdict (holds or differs)",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("the table lacks %q:\n%s", w, md)
		}
	}
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| Runtx") && strings.Count(l, "projection") < 4 {
			t.Errorf("a row whose cells do not each say projection: %s", l)
		}
	}
	if strings.Contains(md, "Holds") || strings.Contains(md, "Differs") || strings.Contains(md, "Verdict") {
		t.Errorf("a verdict given to a projection:\n%s", md)
	}

	out.Reset()
	WriteMachineClaims(&out, s, tokensOnShapes([2]float64{3000, 5000}, false))
	if !strings.Contains(out.String(), "n/a: moeingads measured no tokens/runtx step here") {
		t.Errorf("a run without runtx:\n%s", out.String())
	}
	out.Reset()
	noTokens := tokensOnShapes([2]float64{3000, 5000}, true)
	for _, tr := range noTokens.Targets {
		for _, st := range tr.Steps {
			st.Workload = "ads-rw"
		}
	}
	if WriteMachineClaims(&out, s, noTokens); out.Len() != 0 {
		t.Errorf("a run without the tokens workload shows claims:\n%s", out.String())
	}
}

// Seed 002's 10 × GP1-M at R=2: ten machines carry half what each can
// write, one geo operation a batch of points (per_op metric:batch).
func TestClusterClaimCountsCopiesAndBatches(t *testing.T) {
	s, err := Load("002")
	if err != nil {
		t.Fatal(err)
	}
	run := &results.Run{StudySource: "seed_study: \"002\"\n"}
	run.Host.LogicalCPUs = 2
	st := &results.Step{Workload: "geo", Phase: "ingest", N: 1e4, Seconds: 100, Ops: 5000, Metrics: map[string]float64{"batch": 1000}}
	st.Labels = results.StepLabels("geo", "ingest", 1e4)
	st.Resources.Timed = &results.Window{Seconds: 100, CPUPercent: 50} // 10 ms of CPU a batch
	run.Targets = []*results.Target{{Name: "rocksdb", Steps: []*results.Step{st}}}
	p := claimNamed(t, ProjectMachines(s, run), "cluster_10x_gp1_m")
	want := 10 * (16 / 0.01) * 1000 / 2.0
	if p.Missing != "" || math.Abs(p.Projected-want) > 1e-6*want || p.PerOp != 1000 {
		t.Fatalf("projection %+v: want %.0f qps", p, want)
	}
	delete(st.Metrics, "batch")
	if p := claimNamed(t, ProjectMachines(s, run), "cluster_10x_gp1_m"); !strings.Contains(p.Missing, "a geo/ingest step of rocksdb records no batch") {
		t.Errorf("without the batch metric: %+v", p)
	}
}

// A machine claim names a machine of a built-in catalog, an engine of the
// seed's, a step and a rate: a transcription breaking any is refused.
func TestMachineClaimOutsideItsCatalogFails(t *testing.T) {
	good := minimalSeed + `machine_claims:
  - {id: c, title: T, engine: E, ours: {workload: ledger, phase: insert}, catalog: aws, machine: i3en.3xlarge, count: 1, ops_per_s: 10, unit: tps, what: w, source: [1]}
`
	s, err := Parse("009", []byte(good))
	if err != nil {
		t.Fatalf("a good transcription: %v", err)
	}
	if c := s.MachineClaims[0]; c.Replicas != 1 {
		t.Errorf("replicas %d, want 1 by default", c.Replicas)
	}
	for name, bad := range map[string]string{
		"machine not in its catalog": strings.Replace(good, "machine: i3en.3xlarge", "machine: GP1-M", 1),
		"no such machine":            strings.Replace(good, "machine: i3en.3xlarge", "machine: i3en.99xlarge", 1),
		"no such catalog":            strings.Replace(good, "catalog: aws", "catalog: nimbus", 1),
		"a catalog file":             strings.Replace(good, "catalog: aws", "catalog: my.yaml", 1),
		"unknown engine":             strings.Replace(good, "engine: E, ours", "engine: F, ours", 1),
		"not a rate":                 strings.Replace(good, "unit: tps", "unit: s", 1),
		"no count":                   strings.Replace(good, "count: 1", "count: 0", 1),
		"no source":                  strings.Replace(good, "source: [1]}\n", "source: []}\n", 1),
		"bad per_op":                 strings.Replace(good, "phase: insert}, catalog", "phase: insert, per_op: batch}, catalog", 1),
	} {
		if _, err := Parse("009", []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// On the kept runs the claims are projected from the run's own model:
// each projection is count × the target's fitted throughput at the
// machine's vCPUs (× per_op) / replicas, recomputed here from cost.Fit.
func TestMachineClaimsOnKeptRuns(t *testing.T) {
	for _, name := range []string{"tokens-seed-machines-20261128", "geo-seed-complete-20261128"} {
		run, err := results.Read(filepath.Join(mappingRunsDir(), name, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Load(SeedOf(run))
		if err != nil {
			t.Fatal(err)
		}
		ps := ProjectMachines(s, run)
		if len(ps) != len(s.MachineClaims) {
			t.Fatalf("%s: %d of seed %s's %d machine claims projected", name, len(ps), s.ID, len(s.MachineClaims))
		}
		models := map[string]*cost.Model{}
		for _, md := range cost.Fit(run) {
			models[md.Target] = md
		}
		for _, p := range ps {
			c := p.Claim
			md := models[s.Engine(c.Engine).Targets[0]]
			if p.Missing != "" || md == nil {
				t.Errorf("%s, %s: n/a (%s)", name, c.ID, p.Missing)
				continue
			}
			at := md.Steps[c.Ours.Workload+"/"+c.Ours.Phase].Throughput.At(p.Machine.VCPUs)
			if want := float64(c.Count) * at * p.PerOp / float64(c.Replicas); math.Abs(p.Projected-want) > 1e-9*want {
				t.Errorf("%s, %s: projected %g, want %g", name, c.ID, p.Projected, want)
			}
		}
		var out strings.Builder
		WriteMachineClaims(&out, s, run)
		t.Logf("%s:\n%s", name, out.String())
	}
}
