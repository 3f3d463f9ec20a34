package cost

import (
	"fmt"
	"strings"
	"time"

	"storebench/internal/results"
	"storebench/internal/study"
)

// DefaultCatalog is the catalog a sizing names none of.
const DefaultCatalog = "aws"

// CurveFactors are the multiples of the sizing's load the cost curve is
// drawn at (the report's chart of cost against load).
var CurveFactors = []float64{0.1, 0.25, 0.5, 1, 2, 4, 10, 30, 100}

// FromStudy turns a study's sizing into the numbers a projection takes.
func FromStudy(z *study.Sizing) (results.Sizing, error) {
	if field, err := z.Check(); err != nil {
		return results.Sizing{}, fmt.Errorf("sizing.%s: %w", field, err)
	}
	load, _ := study.ParseRate(z.Load)
	items, bytes, _ := study.ParseData(z.Data)
	sz := results.Sizing{Load: load, Mix: z.Mix, Items: items, DataBytes: bytes, Replicas: z.Replicas,
		P99: time.Duration(z.P99).Seconds(), Utilisation: z.Utilisation, MaxMachines: z.MaxMachines}
	if z.Growth != "" {
		sz.GrowthPerMonth, _ = study.ParseGrowth(z.Growth)
	}
	return WithDefaults(sz), nil
}

// Project fits the run's model and prices every target on the catalog:
// the plans at the sizing's load, and the cost curve at CurveFactors of
// it.
func Project(run *results.Run, sz results.Sizing, cat Catalog) *results.Projection {
	sz = WithDefaults(sz)
	models := Fit(run)
	if len(sz.Mix) == 0 {
		sz.Mix = commonMix(models)
	}
	p := &results.Projection{Catalog: cat.Name, Currency: cat.Currency, CatalogDate: cat.Date, Sizing: sz}
	for _, md := range models {
		p.Plans = append(p.Plans, Size(md, cat, sz))
	}
	for _, f := range CurveFactors {
		at := sz
		at.Load *= f
		for _, md := range models {
			pl := Size(md, cat, at)
			if pl.Best != nil {
				p.Curve = append(p.Curve, results.CostPoint{Target: md.Target, Load: at.Load, Monthly: pl.Best.Monthly, Machine: pl.Best.Machine.Name, Count: pl.Best.Count})
			}
		}
	}
	return p
}

// StudyCatalog is the catalog a study's sizing names: a built-in one
// only (a study file is data others share: it reads no file of the
// machine it runs on; a user's own catalog is for storebench cost
// --catalog).
func StudyCatalog(z *study.Sizing) (Catalog, error) {
	name := z.Catalog
	if name == "" {
		name = DefaultCatalog
	}
	if strings.ContainsAny(name, `/\`) || strings.Contains(name, ".") {
		return Catalog{}, fmt.Errorf("sizing.catalog %q: a study names a built-in catalog; give your own file with `storebench cost RUN --catalog FILE`", name)
	}
	return Load(name)
}

// commonMix is equal shares of the step kinds every target measured, so
// that targets are priced for the same load (a step one cannot run,
// YCSB E on Redis, is left out of all).
func commonMix(models []*Model) map[string]float64 {
	if len(models) == 0 {
		return nil
	}
	mix := map[string]float64{}
	for _, k := range models[0].Kinds {
		every := true
		for _, md := range models[1:] {
			every = every && md.Steps[k] != nil
		}
		if every {
			mix[k] = 1
		}
	}
	return mix
}
