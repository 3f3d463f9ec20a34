package seedcmp

import (
	"fmt"
	"strings"
)

// unitDef is a unit's dimension and its size in the dimension's base
// (seconds, bytes, events per second, or a plain count).
type unitDef struct {
	dim    string
	factor float64
}

// units are the units seed figures and our values come in. The seeds'
// "74M of disk space" and "15559M ca" are du's and top's: binary (MiB);
// "MB" and "GB" as the seeds write them are decimal. A load average
// (seed 000's "2.88 of load for 4 cpu": runnable tasks, averaged) is a
// dimension of its own: it is neither a percentage nor a count of
// anything else, so it converts to nothing but itself.
var units = map[string]unitDef{
	"ns": {"time", 1e-9}, "ms": {"time", 1e-3}, "s": {"time", 1}, "min": {"time", 60}, "h": {"time", 3600},
	"B": {"bytes", 1}, "MiB": {"bytes", 1 << 20}, "GiB": {"bytes", 1 << 30}, "MB": {"bytes", 1e6}, "GB": {"bytes", 1e9},
	"ops/s": {"rate", 1}, "txns/s": {"rate", 1}, "tps": {"rate", 1}, "qps": {"rate", 1}, "requests/s": {"rate", 1},
	"calls/s": {"rate", 1}, "ticks/s": {"rate", 1}, "points/s": {"rate", 1}, "transfers/s": {"rate", 1},
	"MB/s": {"byterate", 1e6},
	"":     {"count", 1}, "users": {"count", 1}, "%": {"count", 0.01},
	"load average": {"load", 1},
}

// PerVCPU is the suffix of a unit divided by vCPUs ("ticks/s/vCPU"):
// a finding with per: cpus is in one.
const PerVCPU = "/vCPU"

// unitOf looks a unit up: one of units, or one of them per vCPU (its
// dimension the base's, per vCPU).
func unitOf(u string) (unitDef, bool) {
	if d, ok := units[u]; ok {
		return d, true
	}
	base, ok := strings.CutSuffix(u, PerVCPU)
	d, known := units[base]
	if !ok || !known {
		return unitDef{}, false
	}
	return unitDef{dim: d.dim + PerVCPU, factor: d.factor}, true
}

// convert expresses v (in unit from) in unit to.
func convert(v float64, from, to string) (float64, error) {
	a, ok := unitOf(from)
	if !ok {
		return 0, fmt.Errorf("unit %q unknown", from)
	}
	b, ok := unitOf(to)
	if !ok {
		return 0, fmt.Errorf("unit %q unknown", to)
	}
	if a.dim != b.dim {
		return 0, fmt.Errorf("%q (%s) is not convertible to %q (%s)", from, a.dim, to, b.dim)
	}
	return v * a.factor / b.factor, nil
}
