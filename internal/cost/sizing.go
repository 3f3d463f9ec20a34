package cost

import (
	"fmt"
	"math"
	"sort"
	"storebench/internal/results"
	"strings"
)

// Defaults of a Sizing's optional fields.
const (
	DefaultUtilisation = 0.7
	DefaultMaxMachines = 1000
	// Horizon is how many months ahead the next machine is looked for.
	Horizon = 36
	// OSReserve is the RAM kept for the operating system on each machine.
	OSReserve = 1 << 30
	// DiskFill is the share of a local disk the data may fill.
	DiskFill = 0.8
	// HeldOutWarn is the held-out error above which a cost is warned.
	HeldOutWarn = 0.25
)

// WithDefaults fills the optional fields.
func WithDefaults(s results.Sizing) results.Sizing {
	if s.Replicas < 1 {
		s.Replicas = 1
	}
	if s.Utilisation <= 0 || s.Utilisation > 1 {
		s.Utilisation = DefaultUtilisation
	}
	if s.MaxMachines <= 0 {
		s.MaxMachines = DefaultMaxMachines
	}
	return s
}

// mixPart is one step kind's share of the load, with its model.
type mixPart struct {
	Kind  string
	Share float64
	Step  *StepModel
}

// Size finds, for one target's model, the cheapest option of the
// catalog that carries the sizing.
func Size(md *Model, cat Catalog, sz results.Sizing) results.TargetPlan {
	sz = WithDefaults(sz)
	p := results.TargetPlan{Target: md.Target, Title: md.Title, Currency: cat.Currency}
	mix, err := md.mix(sz.Mix)
	if err != nil {
		p.Reason = err.Error()
		return p
	}
	for _, m := range mix {
		p.Mix = append(p.Mix, results.MixShare{Kind: m.Kind, Share: m.Share})
	}
	if p.Items, err = items(sz, mix); err != nil {
		p.Reason = err.Error()
		return p
	}
	p.Inputs = inputs(mix)
	heldOut(&p, mix, sz.P99 > 0)
	var ok []results.Option
	for _, m := range cat.Machines {
		o := option(m, mix, p.Items, sz.Load, sz)
		if o.Reason != "" {
			p.Rejected = append(p.Rejected, o)
			continue
		}
		ok = append(ok, o)
	}
	if len(ok) == 0 {
		p.Reason = noMachine(cat, p.Rejected)
		return p
	}
	sort.SliceStable(ok, func(i, j int) bool {
		if ok[i].Monthly != ok[j].Monthly {
			return ok[i].Monthly < ok[j].Monthly
		}
		return ok[i].Count < ok[j].Count
	})
	best := ok[0]
	p.Best = &best
	opsMonth := sz.Load * 3600 * HoursPerMonth
	p.PerMillion = best.Monthly / opsMonth * 1e6
	p.OpsPerUnit = opsMonth / best.Monthly
	p.NextMonth = nextMonth(machineOf(cat, best.Machine.Name), best.Count, mix, p.Items, sz)
	return p
}

// mix resolves the shares over the model's kinds.
func (md *Model) mix(shares map[string]float64) ([]mixPart, error) {
	var out []mixPart
	if len(shares) == 0 {
		for _, k := range md.Kinds {
			out = append(out, mixPart{Kind: k, Share: 1 / float64(len(md.Kinds)), Step: md.Steps[k]})
		}
		return out, nil
	}
	var sum float64
	keys := make([]string, 0, len(shares))
	for k, v := range shares {
		if v <= 0 {
			return nil, fmt.Errorf("the share of %s is %g: shares must be above 0", k, v)
		}
		sum += v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sm := md.find(k)
		if sm == nil {
			return nil, fmt.Errorf("%s measured no step %q (it measured %s)", md.Target, k, strings.Join(md.Kinds, ", "))
		}
		out = append(out, mixPart{Kind: sm.Kind, Share: shares[k] / sum, Step: sm})
	}
	return out, nil
}

// find is the step model of a kind, also given as its phase alone ("a"
// for "ycsb/a") when that names one.
func (md *Model) find(k string) *StepModel {
	if sm := md.Steps[k]; sm != nil {
		return sm
	}
	var hit *StepModel
	for _, kind := range md.Kinds {
		_, phase, _ := strings.Cut(kind, "/")
		if phase == k {
			if hit != nil {
				return nil
			}
			hit = md.Steps[kind]
		}
	}
	return hit
}

func items(sz results.Sizing, mix []mixPart) (float64, error) {
	if sz.Items > 0 {
		return sz.Items, nil
	}
	if sz.DataBytes <= 0 {
		return 0, fmt.Errorf("no data size given (items or bytes)")
	}
	var ib float64
	for _, m := range mix {
		ib = math.Max(ib, m.Step.ItemBytes)
	}
	if ib <= 0 {
		return 0, fmt.Errorf("the data is given in bytes but the run's steps report no item size (item_bytes): give the data as items")
	}
	return sz.DataBytes / ib, nil
}

// capacity is the operations per second a machine of v vCPUs carries at
// the sizing's CPU utilisation, over the mix (each kind its share).
func capacity(mix []mixPart, v, util float64) float64 {
	var inv float64
	for _, m := range mix {
		t := m.Step.ThroughputAt(v)
		if t <= 0 {
			return 0
		}
		inv += m.Share / t
	}
	return util / inv
}

// p99At is the mix's worst p99 at v vCPUs, never projected past the most
// vCPUs measured (a bigger machine is assumed no faster per operation).
func p99At(mix []mixPart, v float64) float64 {
	var worst float64
	for _, m := range mix {
		worst = math.Max(worst, m.Step.P99.At(math.Min(v, m.Step.MaxVCPUs)))
	}
	return worst
}

func machineOf(cat Catalog, name string) Machine {
	m, _ := cat.Find(name)
	return m
}
