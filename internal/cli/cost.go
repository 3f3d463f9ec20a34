package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	costmodel "storebench/internal/cost"
	"storebench/internal/report"
	"storebench/internal/results"
	"storebench/internal/study"
)

const costUsage = `
Usage: storebench cost RUN [RUN...] --load RATE --data SIZE [flags]

Projects what a finished run's measurements cost for your load: per
target, the cheapest count of one machine type of a catalog that carries
the load over the data, its monthly bill, the cost per million
operations, the resource that decides the count (CPU, memory, disk,
IOPS) with the measured figure it came from, and the month the next
machine is needed under --growth. Every figure is a projection and says
so: it shows its inputs and how far past the measures it reaches (e.g. "2
vCPUs measured, 16 projected").

The model comes from the run alone: throughput against vCPUs fitted over
the CPU-limited machine shapes the run measured (--machine cpus=...), or
the engine's CPU seconds per operation where it ran on one shape (linear
in vCPUs, assumed and said); disk and resident memory per item over the
ladder; the page cache the data needs from the knee of its memory shapes
(every byte cached where none ran); block I/Os per operation. With two
or more CPU shapes, the shape with the most vCPUs is predicted by the
model fitted without it, and the error printed beside the cost; above
25% the cost is marked rough.

Catalogs: built in (catalogs/*.yaml, each line with the public page it
was transcribed from and the date) or your own file of the same form;
--catalog aws --catalog mine.yaml adds yours to (or replaces lines of)
the first. Never fetched.

Several runs: each is projected; a target measured under --durability
sync in one and async in another gets "the price of durability" (the
monthly cost of each class at the same load).

Examples:
  storebench cost results/ycsb-20261128-101500 --load 50000/s --data 500GiB --replicas 2
  storebench cost RUN --load 2e4 --data 1e9 --mix ycsb/a=3,ycsb/c=1 --p99 5ms --growth 5%
  storebench cost RUN --catalog scaleway --load 240000/s --data 5e9
  storebench cost RUN --catalog aws --catalog my-prices.yaml --load 1000/s --data 10GiB
  storebench cost RUN_SYNC RUN_ASYNC --load 10000/s --data 1e8
  storebench cost RUN_SYNC RUN_ASYNC DURABILITY_RUN --load 10000/s --data 1e8
  storebench cost RUN --json ...          # the projection as results.json writes it

A run whose study had a sizing: block is priced for it when no --load
is given.

Exit status: 0 priced (a target no machine carries is said, not an
error); 2 bad command line, run or catalog.
`

type costFlags struct {
	load, data, mix, growth, p99 string
	replicas, maxMachines        int
	utilisation                  float64
	catalogs                     multiFlag
	asJSON                       bool
}

func cmdCost(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cost", costUsage, stderr)
	if code, stop := fs.parse(args, stdout); stop {
		return code
	}
	f := costFlagsOf(fs)
	if fs.NArg() == 0 {
		return fail(stderr, usagef("cost needs a run directory (try `storebench cost --help`)"))
	}
	cat, err := loadCatalogs(f.catalogs)
	if err != nil {
		return fail(stderr, usagef("%v", err))
	}
	var projs []*results.Projection
	var runs, crashes []*results.Run
	for _, arg := range fs.Args() {
		run, _, err := readRun(arg)
		if err != nil {
			return fail(stderr, usagef("%v", err))
		}
		if isDurabilityRun(run) {
			crashes = append(crashes, run)
			continue
		}
		sz, err := f.sizing(run)
		if err != nil {
			return fail(stderr, usagef("%v", err))
		}
		runs, projs = append(runs, run), append(projs, costmodel.Project(run, sz, cat))
	}
	if f.asJSON {
		out, _ := json.MarshalIndent(projs, "", "  ")
		return printOut(stdout, stderr, string(out)+"\n")
	}
	var b strings.Builder
	for i, p := range projs {
		fmt.Fprintf(&b, "# What it costs: %s (%s, durability %s)\n\n", runs[i].Study, fs.Arg(i), runs[i].Durability)
		report.Costs(&b, p)
	}
	if len(runs) == 0 {
		return fail(stderr, usagef("no run to price: a durability study's run gives the writes lost beside the price of durability, next to runs measured under sync and async"))
	}
	durabilityPrice(&b, runs, projs, crashes)
	return printOut(stdout, stderr, b.String())
}

// costFlagsOf are cost's flags as parsed.
func costFlagsOf(fs *cmdFlags) costFlags {
	return costFlags{load: fs.str("load"), data: fs.str("data"), mix: fs.str("mix"), growth: fs.str("growth"), p99: fs.str("p99"),
		replicas: fs.num("replicas"), maxMachines: fs.num("max-machines"), utilisation: fs.float("utilisation"),
		catalogs: fs.list("catalog"), asJSON: fs.on("json")}
}

// sizing is the flags' sizing, or the run's own study's when no --load
// is given.
func (f *costFlags) sizing(run *results.Run) (results.Sizing, error) {
	if f.load == "" {
		if run.Projection != nil && f.data == "" {
			return run.Projection.Sizing, nil
		}
		return results.Sizing{}, fmt.Errorf("give --load (e.g. --load 50000/s) and --data (e.g. --data 500GiB or --data 5e8)")
	}
	if f.data == "" {
		return results.Sizing{}, fmt.Errorf("give --data: bytes (500GiB) or items (5e8)")
	}
	z := &study.Sizing{Load: f.load, Data: f.data, Growth: f.growth, Replicas: f.replicas, Utilisation: f.utilisation, MaxMachines: f.maxMachines}
	if f.p99 != "" {
		d, err := time.ParseDuration(f.p99)
		if err != nil || d <= 0 {
			return results.Sizing{}, fmt.Errorf("--p99 %q: want a duration, e.g. 10ms", f.p99)
		}
		z.P99 = study.Duration(d)
	}
	mix, err := parseMix(f.mix)
	if err != nil {
		return results.Sizing{}, err
	}
	z.Mix = mix
	sz, err := costmodel.FromStudy(z)
	if err != nil {
		return results.Sizing{}, fmt.Errorf("--%s", strings.TrimPrefix(err.Error(), "sizing."))
	}
	return sz, nil
}

func parseMix(s string) (map[string]float64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		share, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || share <= 0 {
			return nil, fmt.Errorf("--mix %q: want STEP=SHARE,... e.g. ycsb/a=3,ycsb/c=1", part)
		}
		out[k] = share
	}
	return out, nil
}

// loadCatalogs is the first catalog named (aws by default) with the
// others' lines added.
func loadCatalogs(names []string) (costmodel.Catalog, error) {
	if len(names) == 0 {
		names = []string{costmodel.DefaultCatalog}
	}
	cat, err := costmodel.Load(names[0])
	if err != nil {
		return costmodel.Catalog{}, err
	}
	for _, n := range names[1:] {
		extra, err := costmodel.Load(n)
		if err != nil {
			return costmodel.Catalog{}, err
		}
		if cat, err = costmodel.Merge(cat, extra); err != nil {
			return costmodel.Catalog{}, err
		}
	}
	return cat, nil
}

// durabilityPrice sets, for a target projected from runs of different
// durability classes, each class's monthly cost side by side, and where a
// durability study's run is given too, the acknowledged writes each class
// lost in it.
func durabilityPrice(b *strings.Builder, runs []*results.Run, projs []*results.Projection, crashes []*results.Run) {
	by := map[string]map[string]results.TargetPlan{}
	for i, p := range projs {
		for _, pl := range p.Plans {
			if pl.Best == nil {
				continue
			}
			if by[pl.Target] == nil {
				by[pl.Target] = map[string]results.TargetPlan{}
			}
			by[pl.Target][runs[i].Durability] = pl
		}
	}
	head := []string{"target", "sync", "async", "the price of durability"}
	if len(crashes) > 0 {
		head = append(head, "acknowledged writes lost on power loss: sync / async (durability study)")
	}
	tab := report.Table{Head: head, Left: 1}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, ok1 := by[n]["sync"]
		a, ok2 := by[n]["async"]
		if !ok1 || !ok2 || s.Currency != a.Currency {
			continue
		}
		row := []string{s.Title,
			fmt.Sprintf("%d × %s, %.0f %s", s.Best.Count, s.Best.Machine.Name, s.Best.Monthly, s.Currency),
			fmt.Sprintf("%d × %s, %.0f %s", a.Best.Count, a.Best.Machine.Name, a.Best.Monthly, a.Currency),
			fmt.Sprintf("%+.0f %s a month (×%.2f)", s.Best.Monthly-a.Best.Monthly, s.Currency, s.Best.Monthly/a.Best.Monthly)}
		if len(crashes) > 0 {
			row = append(row, lostWrites(crashes, n))
		}
		tab.Rows = append(tab.Rows, row)
	}
	if len(tab.Rows) == 0 {
		return
	}
	b.WriteString("\n## The price of durability\n\nThe same load on each target measured under both classes: what syncing every write costs a month (projections from the runs above)")
	if len(crashes) > 0 {
		b.WriteString(", beside the acknowledged writes each class lost to simulated power failures in the durability study given (measured, not projected)")
	}
	b.WriteString(".\n\n")
	tab.Write(b)
}

// isDurabilityRun: a run of the durability workload alone (what it
// measures is lost writes, not a load to price).
func isDurabilityRun(run *results.Run) bool {
	seen := false
	for _, t := range run.Targets {
		for _, s := range t.Steps {
			if s.Workload != "durability" {
				return false
			}
			seen = true
		}
	}
	return seen
}

// lostWrites is a target's acknowledged writes lost on power loss under
// each class, from the durability runs given ("—" where none ran it).
func lostWrites(crashes []*results.Run, target string) string {
	cls := map[string]string{}
	for _, run := range crashes {
		for _, t := range run.Targets {
			if base, _, _ := strings.Cut(t.Name, "@"); base != target {
				continue
			}
			for _, s := range t.Steps {
				if c := s.Labels["durability"]; s.Phase == "power-loss" && c != "" {
					cls[c] = fmt.Sprintf("%.0f of %.0f (%.0f crashes lost some)", s.Metrics["lost"], s.Metrics["acked"], s.Metrics["lost_trials"])
				}
			}
		}
	}
	get := func(c string) string {
		if v, ok := cls[c]; ok {
			return v
		}
		return "—"
	}
	return get("sync") + " / " + get("async")
}
